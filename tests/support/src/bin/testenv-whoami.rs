//! `testenv-whoami`: a tiny program that tests run in a Pod as a mapped image. It uses the in-cluster
//! configuration (the ServiceAccount token, CA and namespace files and the `kubernetes` Service variables)
//! to ask the API server who it is (a SelfSubjectReview), prints one `WHOAMI {json}` line with the answer
//! and what it sees of its environment, then serves `/readyz` and `/healthz` on `--port` until SIGTERM,
//! which it logs before exiting 0.

use std::collections::BTreeMap;

use anyhow::Context;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::{Api, Client, api::PostParams};
use serde_json::json;

const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args
        .iter()
        .position(|a| a == "--port")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(8080), |p| p.parse())
        .context("--port")?;
    let config = kube::Config::incluster().context("in-cluster configuration")?;
    let client = Client::try_from(config)?;
    let review: SelfSubjectReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"
    }))?;
    let answer = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &review)
        .await
        .context("SelfSubjectReview")?;
    let user = answer.status.and_then(|s| s.user_info).unwrap_or_default();
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("KUBERNETES_")
                || k.starts_with("POD_")
                || ["HOSTNAME", "HOME", "PATH"].contains(&k.as_str())
        })
        .collect();
    let report = json!({
        "username": user.username,
        "extra": user.extra,
        "namespaceFile": std::fs::read_to_string(format!("{SA_DIR}/namespace")).ok(),
        "uid": nix::unistd::getuid().as_raw(),
        "gid": nix::unistd::getgid().as_raw(),
        "env": env,
        "args": args,
        "cacheWritable": std::fs::write("/var/cache/testenv-whoami/probe", "ok").is_ok(),
    });
    println!("WHOAMI {report}");
    let app = axum::Router::new()
        .route("/readyz", axum::routing::get(|| async { "ok" }))
        .route("/healthz", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", port)).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let shutdown = async move {
        term.recv().await;
        println!("SIGTERM received; exiting");
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
