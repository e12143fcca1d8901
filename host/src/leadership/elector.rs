//! The candidate's and the leader's loops over the Lease.

use std::time::Instant;

use kube::Client;

use super::{
    Fence, LeaderElection, LeaderMetrics,
    lease::{Attempt, LeaseLock, Observed},
};

/// Why a term ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lost {
    /// Another replica holds the Lease now.
    TakenOver { holder: String },
    /// No renewal succeeded within the renew deadline (the API server unreachable, or conflicts).
    NotRenewed { error: String },
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TakenOver { holder } => write!(f, "the lease is held by {holder}"),
            Self::NotRenewed { error } => write!(f, "the lease was not renewed in time: {error}"),
        }
    }
}

/// One replica's part in the election.
pub(crate) struct Elector {
    config: LeaderElection,
    lock: LeaseLock,
    observed: Observed,
    metrics: LeaderMetrics,
    /// When the last successful acquisition or renewal was sent.
    last_renewed: Instant,
}

impl Elector {
    pub(crate) fn new(client: Client, config: LeaderElection, metrics: LeaderMetrics) -> Self {
        let lock = LeaseLock::new(
            client,
            &config.namespace,
            &config.lease_name,
            &config.identity,
            config.lease_duration,
        );
        let metrics = metrics.for_lease(&config.lease_name);
        metrics.set_leading(false);
        Self {
            config,
            lock,
            observed: Observed::default(),
            metrics,
            last_renewed: Instant::now(),
        }
    }

    /// Tries every retry period until this replica holds the Lease; returns the new term's fence (open).
    pub(crate) async fn acquire(&mut self) -> Fence {
        let mut last_holder = None;
        loop {
            let sent = Instant::now();
            match self.attempt().await {
                Ok(Attempt::Held) => {
                    let fence = Fence::term(self.config.renew_deadline);
                    fence.renewed(sent);
                    self.last_renewed = sent;
                    self.metrics.set_leading(true);
                    tracing::info!(
                        identity = %self.config.identity, lease = %self.config.lease_name,
                        namespace = %self.config.namespace, "became the leader"
                    );
                    return fence;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    if last_holder.as_ref() != Some(&holder) {
                        tracing::info!(%holder, identity = %self.config.identity, "standing by: another replica leads");
                        last_holder = Some(holder);
                    }
                }
                Err(error) => tracing::debug!(%error, "could not acquire the lease"),
            }
            tokio::time::sleep(self.config.retry_period).await;
        }
    }

    /// Renews the Lease every retry period while `fence` is this replica's term; returns when the term is
    /// lost (after closing the fence and recording that this replica no longer leads).
    pub(crate) async fn hold(&mut self, fence: &Fence) -> Lost {
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            let sent = Instant::now();
            let lost = match self.attempt().await {
                Ok(Attempt::Held) => {
                    fence.renewed(sent);
                    self.last_renewed = sent;
                    continue;
                }
                Ok(Attempt::HeldBy(holder)) => Lost::TakenOver { holder },
                Err(error) if self.last_renewed.elapsed() < self.config.renew_deadline => {
                    tracing::debug!(%error, "could not renew the lease; retrying");
                    continue;
                }
                Err(error) => Lost::NotRenewed { error },
            };
            fence.close();
            self.metrics.set_leading(false);
            return lost;
        }
    }

    /// Releases the Lease (when this replica still holds it) so that a standby takes over at once.
    pub(crate) async fn release(&mut self, fence: &Fence) {
        fence.close();
        self.metrics.set_leading(false);
        let released = tokio::time::timeout(self.config.renew_deadline, self.lock.release()).await;
        match released {
            Ok(Ok(true)) => tracing::info!(identity = %self.config.identity, "released the lease"),
            Ok(Ok(false)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "could not release the lease; it expires on its own"),
            Err(_) => tracing::warn!("releasing the lease timed out; it expires on its own"),
        }
    }

    /// One bounded attempt: a request that hangs must not outlive the renew deadline.
    async fn attempt(&mut self) -> Result<Attempt, String> {
        let attempt = self.lock.try_acquire_or_renew(&mut self.observed);
        match tokio::time::timeout(self.config.renew_deadline, attempt).await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {:?}", self.config.renew_deadline)),
        }
    }
}
