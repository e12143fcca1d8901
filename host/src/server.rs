//! The operator's HTTP endpoints: `/metrics` (Prometheus), `/healthz` (the process serves), and `/readyz`
//! (every watch cache has synced and the plugin directory has been loaded).

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
    pub ready: Arc<AtomicBool>,
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
    if health.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "caches not synced or plugins not loaded yet",
        )
    }
}

/// Binds `addr` and serves until `shutdown` resolves.
pub(crate) async fn serve(
    addr: SocketAddr,
    health: Health,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics, /healthz and /readyz");
    axum::serve(listener, router(health))
        .with_graceful_shutdown(shutdown)
        .await
}
