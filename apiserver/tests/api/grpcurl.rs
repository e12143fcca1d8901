//! `grpcurl` works against the gRPC port without the proto files: server reflection lists and describes
//! the API's services, the gRPC health service answers SERVING, and a real call goes through with a
//! bearer token in the metadata (and is refused without). grpcurl is built by `make grpcurl`
//! (`tests/apitools/build-grpcurl.sh`).

use std::{collections::BTreeSet, path::PathBuf, process::Output};

use kuberay_testenv::HeadMode;
use serde_json::{Value, json};

use crate::{
    calls,
    support::{Server, User, env, namespace},
};

fn grpcurl() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = std::env::var_os("KUBERAY_WASM_ROOT").map_or(root, PathBuf::from);
    let path = root.join(".local/bin/grpcurl");
    assert!(
        path.is_file(),
        "{} is missing: run `make grpcurl` (tests/apitools/build-grpcurl.sh)",
        path.display()
    );
    path
}

/// Runs grpcurl with `args` (without blocking the runtime the server runs in).
async fn run(args: &[&str]) -> Output {
    tokio::process::Command::new(grpcurl())
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap()
}

/// stdout of a grpcurl run that must succeed.
async fn ok(args: &[&str]) -> String {
    let output = run(args).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "grpcurl {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn grpcurl_lists_describes_checks_health_and_calls_with_a_token() {
    let env = env().await;
    let ns = namespace(env, "grpcurl", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    let server = Server::start(env, &[]).await;
    let address = server.grpc.to_string();
    let address = address.as_str();

    let listed: BTreeSet<String> = ok(&["-plaintext", address, "list"])
        .await
        .lines()
        .map(str::to_string)
        .collect();
    let api = calls::api_services();
    assert_eq!(api.len(), 5, "{api:?}");
    for service in api.iter().map(String::as_str).chain(["grpc.health.v1.Health"]) {
        assert!(listed.contains(service), "{service} is not listed: {listed:?}");
    }

    let described = ok(&["-plaintext", address, "describe", "proto.ClusterService"]).await;
    for rpc in [
        "service ClusterService",
        "rpc CreateCluster ( .proto.CreateClusterRequest ) returns ( .proto.Cluster )",
        "rpc ListAllClusters",
    ] {
        assert!(described.contains(rpc), "{rpc:?} not in:\n{described}");
    }
    let message = ok(&["-plaintext", address, "describe", "proto.ComputeTemplate"]).await;
    assert!(message.contains("uint32 cpu"), "{message}");

    for service in ["", "proto.ClusterService"] {
        let request = json!({ "service": service }).to_string();
        let health = ok(&[
            "-plaintext",
            "-d",
            &request,
            address,
            "grpc.health.v1.Health/Check",
        ])
        .await;
        let health: Value = serde_json::from_str(&health).unwrap();
        assert_eq!(health["status"], "SERVING", "{service:?}: {health}");
    }

    // A real call with the caller's token in the metadata, then another reading what it wrote.
    let authorization = format!("authorization: Bearer {}", user.token);
    let template = json!({
        "namespace": ns.name(),
        "compute_template": {"name": "from-grpcurl", "cpu": 2, "memory": 4},
    })
    .to_string();
    let created = ok(&[
        "-plaintext",
        "-H",
        &authorization,
        "-d",
        &template,
        address,
        "proto.ComputeTemplateService/CreateComputeTemplate",
    ])
    .await;
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(
        (&created["name"], &created["cpu"]),
        (&json!("from-grpcurl"), &json!(2)),
        "{created}"
    );
    let namespace = json!({ "namespace": ns.name() }).to_string();
    let listed = ok(&[
        "-plaintext",
        "-H",
        &authorization,
        "-d",
        &namespace,
        address,
        "proto.ComputeTemplateService/ListComputeTemplates",
    ])
    .await;
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["computeTemplates"][0]["name"], "from-grpcurl", "{listed}");

    // Without the token: Unauthenticated.
    let output = run(&[
        "-plaintext",
        "-d",
        &namespace,
        address,
        "proto.ComputeTemplateService/ListComputeTemplates",
    ])
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "an unauthenticated call succeeded");
    assert!(
        stderr.contains("Code: Unauthenticated") && stderr.contains("bearer token"),
        "{stderr}"
    );
    server.stop().await.unwrap();
}
