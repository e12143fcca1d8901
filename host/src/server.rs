//! The operator's HTTP endpoints: `/metrics` (Prometheus), `/healthz` (the process serves), and `/readyz`
//! (the plugin directory has been loaded and, on the replica that reconciles, every watch cache has synced;
//! a standby of the leader election is ready as such).

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};

use crate::metrics::Metrics;

#[derive(Clone)]
pub(crate) struct Health {
    pub metrics: Metrics,
    pub readiness: Arc<Readiness>,
}

/// What `/readyz` answers: 503 until the plugins are loaded (the directory's, and a first try of every
/// ReconcilePlugin resource's version) and, while this replica reconciles, its caches have synced; then `ok` (no leader election), `ok: leader`, or `ok: standby` (so that a rollout of
/// several replicas completes while one leads).
#[derive(Debug)]
pub(crate) struct Readiness {
    election: bool,
    loaded: AtomicBool,
    leading: AtomicBool,
    synced: AtomicBool,
    /// Every ReconcilePlugin resource listed at start has had its version tried (served or refused).
    resources_tried: AtomicBool,
}

impl Readiness {
    pub(crate) fn new(election: bool) -> Self {
        Self {
            election,
            loaded: AtomicBool::new(false),
            leading: AtomicBool::new(false),
            synced: AtomicBool::new(false),
            resources_tried: AtomicBool::new(true),
        }
    }

    /// Whether the versions of the ReconcilePlugin resources listed at start have all been tried: false from
    /// the start of their loop until then, so that a replica a rollout waits for serves what they name.
    pub(crate) fn set_resources_tried(&self, tried: bool) {
        self.resources_tried.store(tried, Ordering::Relaxed);
    }

    /// The plugin directory has been loaded (false again while shutting down).
    pub(crate) fn set_loaded(&self, loaded: bool) {
        self.loaded.store(loaded, Ordering::Relaxed);
    }

    /// This replica runs the controllers (always, without leader election).
    pub(crate) fn set_leading(&self, leading: bool) {
        self.leading.store(leading, Ordering::Relaxed);
    }

    /// Whether this replica runs the controllers (and so writes status and Events).
    pub(crate) fn leading(&self) -> bool {
        self.leading.load(Ordering::Relaxed)
    }

    /// The caches of the current term have synced.
    pub(crate) fn set_synced(&self, synced: bool) {
        self.synced.store(synced, Ordering::Relaxed);
    }

    fn answer(&self) -> (StatusCode, &'static str) {
        let unavailable = (
            StatusCode::SERVICE_UNAVAILABLE,
            "caches not synced or plugins not loaded yet",
        );
        if !self.loaded.load(Ordering::Relaxed) || !self.resources_tried.load(Ordering::Relaxed) {
            return unavailable;
        }
        let leading = self.leading.load(Ordering::Relaxed);
        match (self.election, leading, self.synced.load(Ordering::Relaxed)) {
            (true, false, _) => (StatusCode::OK, "ok: standby"),
            (_, _, false) => unavailable,
            (true, true, true) => (StatusCode::OK, "ok: leader"),
            (false, _, true) => (StatusCode::OK, "ok"),
        }
    }
}

fn router(health: Health) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn metrics(State(health): State<Health>) -> impl IntoResponse {
    (
        [(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        health.metrics.encode(),
    )
}

async fn readyz(State(health): State<Health>) -> impl IntoResponse {
    health.readiness.answer()
}

/// Binds `addr` (an error here is fatal to the operator).
pub(crate) async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

/// Serves on `listener` until `shutdown` resolves.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    health: Health,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics, /healthz and /readyz");
    axum::serve(listener, router(health))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_is_ready_as_such_and_a_leader_once_synced() {
        let alone = Readiness::new(false);
        assert_eq!(alone.answer().0, StatusCode::SERVICE_UNAVAILABLE);
        alone.set_loaded(true);
        alone.set_leading(true);
        assert_eq!(alone.answer().0, StatusCode::SERVICE_UNAVAILABLE);
        alone.set_synced(true);
        assert_eq!(alone.answer(), (StatusCode::OK, "ok"));

        let replica = Readiness::new(true);
        assert_eq!(replica.answer().0, StatusCode::SERVICE_UNAVAILABLE);
        replica.set_loaded(true);
        assert_eq!(replica.answer(), (StatusCode::OK, "ok: standby"));
        replica.set_leading(true);
        assert_eq!(replica.answer().0, StatusCode::SERVICE_UNAVAILABLE);
        replica.set_synced(true);
        assert_eq!(replica.answer(), (StatusCode::OK, "ok: leader"));
        replica.set_loaded(false);
        assert_eq!(replica.answer().0, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn a_replica_is_not_ready_before_the_resources_versions_were_tried() {
        let replica = Readiness::new(true);
        replica.set_loaded(true);
        replica.set_resources_tried(false);
        assert_eq!(replica.answer().0, StatusCode::SERVICE_UNAVAILABLE);
        replica.set_resources_tried(true);
        assert_eq!(replica.answer(), (StatusCode::OK, "ok: standby"));
    }
}
