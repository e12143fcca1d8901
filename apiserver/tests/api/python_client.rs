//! The Python client generated from the server's own OpenAPI document (`apiserver/clients/python`): it is
//! generated from `/openapi.json` of a running server, installed with pip, and `example.py` (what a user
//! writes) creates, reads, lists and deletes through it as a user with a Kubernetes token, also sending the
//! token alone as KubeRay's Python client does.

use std::path::Path;

use tokio::process::Command;

use kuberay_testenv::HeadMode;
use serde_json::Value;

use crate::{
    flows::Tenant,
    support::{Server, env},
};

/// The checkout.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Runs `command`, failing the test with its output unless it succeeds; its stdout. Asynchronously: the
/// server answering the command runs in this test's runtime.
async fn run(mut command: Command, what: &str) -> String {
    let output = command.output().await.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn a_client_generated_from_the_openapi_document_works_as_a_user() {
    let venv = root().join(".local/apitools-venv/bin");
    assert!(
        venv.join("openapi-python-client").is_file(),
        "{} has no openapi-python-client: run `make apitools`",
        venv.display()
    );
    let env = env().await;
    let tenant = Tenant::new(env, "python-client", HeadMode::Fake).await;
    let server = Server::start(env, &[]).await;
    let (status, document) = server.rest(None).get("/openapi.json").await;
    assert_eq!(status, 200);
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.json");
    std::fs::write(&spec, document.to_string()).unwrap();

    let client = dir.path().join("kuberay-apiserver-client");
    let mut generate = Command::new("bash");
    generate
        .arg(root().join("apiserver/clients/python/generate.sh"))
        .args([&spec, &client]);
    run(generate, "generating the client").await;
    let site = dir.path().join("site");
    let mut install = Command::new(venv.join("pip"));
    install
        .args([
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
        ])
        .args([&site, &client]);
    run(install, "installing the client").await;

    let mut example = Command::new(venv.join("python"));
    example
        .arg(root().join("apiserver/clients/python/example.py"))
        .env("PYTHONPATH", &site)
        .env("KUBERAY_API", server.url())
        .env("KUBERAY_TOKEN", &tenant.user.token)
        .env("KUBERAY_NAMESPACE", tenant.name());
    let out = run(example, "example.py").await;
    let seen: Value = serde_json::from_str(out.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("example.py printed no JSON ({e}): {out}"));
    assert_eq!(seen["created"], "py-cluster", "{seen}");
    assert_eq!(seen["user"], "python", "{seen}");
    assert_eq!(seen["listed"], serde_json::json!(["py-cluster"]), "{seen}");
    assert_eq!(seen["missing"][0], 404, "{seen}");
    assert_eq!(seen["bare_token_listed"], 1, "{seen}");
    // It deleted what it made, through the client.
    let (status, clusters) = server
        .rest(Some(&tenant.user.token))
        .get(&format!("{}/clusters", tenant.base()))
        .await;
    assert_eq!(status, 200, "{clusters}");
    assert!(
        clusters["clusters"].as_array().is_none_or(Vec::is_empty),
        "{clusters}"
    );
    tenant.remove(env).await;
}
