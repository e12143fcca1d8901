//! `kuberay-apiserver`: the REST and gRPC backend.

use anyhow::Context;
use clap::Parser;
use kuberay_apiserver::{config::Config, server, telemetry};

fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    telemetry::init(config.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime
        .block_on(server::run(config, shutdown_signal(), |_| {}))
        .context("kuberay-apiserver failed")
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
}
