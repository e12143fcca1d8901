//! A fake Ray head: a few in-process HTTP servers that answer the dashboard's Jobs and Serve APIs, the
//! dashboard agent's health endpoints and the Serve proxy's health and routes the way Ray 2.x does, errors
//! included. It costs a few kilobytes per head, so scale tests can run hundreds of Ray clusters on one
//! machine; the real-Ray tests run the same client checks against both to keep it honest.

mod entrypoint;
mod jobs;
mod serve;

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::{Arc, Mutex},
};

use axum::{
    Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
pub use entrypoint::Script;
use tokio::{sync::watch, task::JoinHandle};

use crate::{error::Result, network::bind_in_netns};

/// Test knobs of a fake head.
#[derive(Debug, Clone, Copy, Default)]
pub struct FakeOptions {
    /// How long a job submission takes to answer (the job is recorded before the wait).
    pub submit_delay: std::time::Duration,
}

/// Ports of one head, as the Pod declares them (KubeRay's defaults otherwise).
#[derive(Debug, Clone, Copy)]
pub struct RayPorts {
    pub dashboard: u16,
    pub agent: u16,
    pub serve: u16,
}

impl Default for RayPorts {
    fn default() -> Self {
        Self {
            dashboard: 8265,
            agent: 52365,
            serve: 8000,
        }
    }
}

/// Where a fake head listens.
#[derive(Debug, Clone)]
pub enum ListenOn {
    /// Inside a pod's network namespace, on the pod's address.
    Netns { netns: String, ip: Ipv4Addr },
    /// On 127.0.0.1 with ephemeral ports, for tests that need no pod network.
    Loopback,
}

impl ListenOn {
    async fn bind(&self, port: u16) -> Result<tokio::net::TcpListener> {
        match self {
            Self::Netns { netns, ip } => bind_in_netns(netns, SocketAddr::from((*ip, port))).await,
            Self::Loopback => tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .await
                .map_err(crate::error::Error::io("binding a loopback listener")),
        }
    }
}

/// One running fake head. Cloning shares it.
#[derive(Clone)]
pub struct FakeHead {
    jobs: Arc<jobs::JobStore>,
    serve: Arc<Mutex<serve::ServeState>>,
    frozen: Arc<watch::Sender<bool>>,
    listen: ListenOn,
    ports: RayPorts,
    options: FakeOptions,
    addrs: Arc<Mutex<Addrs>>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

#[derive(Default, Clone, Copy, Debug)]
pub struct Addrs {
    pub dashboard: Option<SocketAddr>,
    pub agent: Option<SocketAddr>,
    pub serve: Option<SocketAddr>,
}

impl FakeHead {
    /// Starts the dashboard and dashboard-agent servers; the Serve proxy starts with the first deployment.
    pub async fn start(listen: ListenOn, ports: RayPorts, options: FakeOptions) -> Result<Self> {
        let head = Self {
            jobs: Arc::default(),
            serve: Arc::default(),
            frozen: Arc::new(watch::channel(false).0),
            listen,
            ports,
            options,
            addrs: Arc::default(),
            tasks: Arc::default(),
        };
        let dashboard = head.listen.bind(ports.dashboard).await?;
        let agent = head.listen.bind(ports.agent).await?;
        {
            let mut addrs = head.lock_addrs();
            addrs.dashboard = dashboard.local_addr().ok();
            addrs.agent = agent.local_addr().ok();
        }
        head.spawn_server(dashboard, head.dashboard_router());
        head.spawn_server(agent, head.agent_router());
        Ok(head)
    }

    pub fn addrs(&self) -> Addrs {
        *self.lock_addrs()
    }

    /// While frozen, requests are accepted but never answered, like a head whose processes got SIGSTOP.
    pub fn set_frozen(&self, frozen: bool) {
        self.frozen.send_replace(frozen);
    }

    /// Closes every listener and connection.
    pub fn stop(&self) {
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
    }

    fn dashboard_router(&self) -> Router {
        Router::new()
            .route("/api/version", get(version))
            .route("/api/gcs_healthz", get(|| async { health_text("success") }))
            .route("/api/jobs/", post(jobs::submit).get(jobs::list))
            .route("/api/jobs/{id}", get(jobs::get).delete(jobs::delete))
            .route("/api/jobs/{id}/stop", post(jobs::stop))
            .route("/api/jobs/{id}/logs", get(jobs::logs))
            .route(
                "/api/serve/applications/",
                get(serve::details).put(serve::deploy).delete(serve::shutdown),
            )
            .route("/testenv/submissions", get(jobs::submissions))
            .route("/testenv/serve", get(serve::testenv_state))
            .route(
                "/testenv/serve-proxy-health",
                axum::routing::put(serve::set_proxy_health),
            )
            .layer(middleware::from_fn_with_state(self.clone(), freeze_gate))
            .with_state(self.clone())
    }

    fn agent_router(&self) -> Router {
        Router::new()
            .route(
                "/api/local_raylet_healthz",
                get(|| async { health_text("success") }),
            )
            .route(
                "/api/healthz",
                get(|| async { health_text("raylet: success\ngcs: success") }),
            )
            .layer(middleware::from_fn_with_state(self.clone(), freeze_gate))
            .with_state(self.clone())
    }

    fn serve_router(&self) -> Router {
        Router::new()
            .route("/-/healthz", get(serve::proxy_healthz))
            .route("/-/routes", get(serve::proxy_routes))
            .fallback(serve::proxy_request)
            .layer(middleware::from_fn_with_state(self.clone(), freeze_gate))
            .with_state(self.clone())
    }

    async fn start_serve_proxy(&self) {
        if self.lock_addrs().serve.is_some() {
            return;
        }
        match self.listen.bind(self.ports.serve).await {
            Ok(listener) => {
                self.lock_addrs().serve = listener.local_addr().ok();
                self.spawn_server(listener, self.serve_router());
            }
            Err(e) => tracing::warn!(error = %e, "fake Ray head could not start its Serve proxy"),
        }
    }

    fn spawn_server(&self, listener: tokio::net::TcpListener, router: Router) {
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::warn!(error = %e, "fake Ray head server stopped");
            }
        });
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(task);
    }

    fn lock_serve(&self) -> std::sync::MutexGuard<'_, serve::ServeState> {
        self.serve
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_addrs(&self) -> std::sync::MutexGuard<'_, Addrs> {
        self.addrs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn freeze_gate(State(head): State<FakeHead>, request: Request, next: Next) -> Response {
    let mut frozen = head.frozen.subscribe();
    let _ = frozen.wait_for(|f| !f).await;
    next.run(request).await
}

async fn version() -> Response {
    axum::Json(serde_json::json!({
        "version": "4",
        "ray_version": "2.60.0",
        "ray_commit": "fake",
        "session_name": "session_fake",
    }))
    .into_response()
}

/// Ray's health endpoints answer `application/text`.
fn health_text(body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "application/text; charset=utf-8")], body).into_response()
}

/// Ray's errors are plain text.
pub(crate) fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}
