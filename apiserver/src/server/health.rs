//! Liveness and readiness. `/healthz` answers while the process serves. `/readyz` answers 200 while the
//! Kubernetes API server is reachable with the server's own credentials (checked in the background, so a
//! probe never waits on it) and the server is not shutting down; otherwise 503 with the reason, so a load
//! balancer stops sending calls that could only fail.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// How often the API server is checked.
const PROBE_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Clone, Default)]
pub struct Readiness {
    stopping: Arc<AtomicBool>,
    /// `None` while the API server is reachable; otherwise why not.
    problem: Arc<Mutex<Option<String>>>,
}

impl Readiness {
    /// Starts out not ready until the first check.
    pub fn new() -> Self {
        let readiness = Self::default();
        readiness.set_problem(Some("the Kubernetes API server has not been checked yet".into()));
        readiness
    }

    fn set_problem(&self, problem: Option<String>) {
        if let Ok(mut slot) = self.problem.lock() {
            *slot = problem;
        }
    }

    /// Ok, or why the server should not get calls now.
    pub fn check(&self) -> Result<(), String> {
        if self.stopping.load(Ordering::Relaxed) {
            return Err("shutting down".into());
        }
        match self.problem.lock() {
            Ok(problem) => problem.clone().map_or(Ok(()), Err),
            Err(_) => Err("readiness state unavailable".into()),
        }
    }

    /// From now on the server is not ready (it is stopping).
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// Checks the API server now and every few seconds, until the server stops.
    pub async fn probe(self, server: kube::Client) {
        let mut was_ready = None;
        loop {
            let problem = match tokio::time::timeout(PROBE_INTERVAL, server.apiserver_version()).await {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(format!("the Kubernetes API server is not reachable: {e}")),
                Err(_) => Some("the Kubernetes API server did not answer in time".to_string()),
            };
            let ready = problem.is_none();
            if was_ready != Some(ready) {
                match &problem {
                    None => tracing::info!("the Kubernetes API server is reachable"),
                    Some(p) => tracing::warn!(problem = %p, "not ready"),
                }
                was_ready = Some(ready);
            }
            self.set_problem(problem);
            if self.stopping.load(Ordering::Relaxed) {
                return;
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }
}
