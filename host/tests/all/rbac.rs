//! The RBAC shipped in `host/deploy/rbac.yaml` is enough: an operator running as that ServiceAccount, with
//! no other rights, brings KubeRay's samples to ready, autoscaler Role included (Kubernetes only lets it
//! grant what it holds itself), and runs RayJobs to completion reaching Ray heads directly and through the
//! API server's proxy (where a stopped job on deletion is a proxied POST).

use std::{path::Path, time::Duration};

use k8s_openapi::api::{authentication::v1::TokenRequest, core::v1::ServiceAccount};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use kuberay_testenv::TestNamespace;
use serde_json::json;

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, ray_api, ready_cluster, sample,
    start_operator,
};

async fn apply_cluster_manifest(client: &Client, path: &Path) {
    kuberay_testenv::identities::apply_manifest(client, path)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_shipped_rbac_is_all_the_operator_needs() {
    let env = env().await;
    let admin = env.client().await.unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rbac.yaml");
    apply_cluster_manifest(&admin, &manifest).await;

    // A short-lived token of the operator's ServiceAccount, as a Pod would get.
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "kuberay-system");
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}})).unwrap();
    let token = eventually("a token for the operator", Duration::from_secs(30), || async {
        accounts
            .create_token_request("kuberay-wasm", &PostParams::default(), &request)
            .await
            .ok()
    })
    .await
    .status
    .unwrap()
    .token;
    let info = env.info();
    let kubeconfig =
        std::env::temp_dir().join(format!("kuberay-wasm-rbac-{}.kubeconfig", std::process::id()));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: {}\n\
             users:\n- name: operator\n  user:\n    token: {token}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    \
             user: operator\ncurrent-context: c\n",
            info.server,
            info.ca_cert.display()
        ),
    )
    .unwrap();

    let ns = namespace(env, "rbac").await;
    let options = |use_kubernetes_proxy| OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::RAYJOB,
        ],
        kubeconfig: Some(kubeconfig.clone()),
        use_kubernetes_proxy,
        ..OperatorOptions::default()
    };
    let operator = start_operator(env, &ns, options(false)).await;
    apply_manifest(&admin, &ns, &sample("ray-cluster.sample.yaml")).await;
    apply_manifest(&admin, &ns, &sample("ray-cluster.autoscaler.yaml")).await;
    ready_cluster(&admin, &ns, "raycluster-kuberay").await;
    ready_cluster(&admin, &ns, "raycluster-autoscaler").await;
    assert_eq!(
        operator.metric("kuberay_wasm_reconcile_errors_total", &[]),
        0.0,
        "a reconcile failed as the operator's ServiceAccount"
    );
    run_rayjob(&admin, &ns, "direct").await;
    let direct = operator.metric(
        "kuberay_wasm_ray_requests_total",
        &["route=\"direct-service\"", "outcome=\"ok\""],
    );
    assert!(direct > 0.0, "no Ray request went out directly");
    assert_eq!(operator.metric("kuberay_wasm_reconcile_errors_total", &[]), 0.0);
    operator.stop().await;

    let operator = start_operator(env, &ns, options(true)).await;
    run_rayjob(&admin, &ns, "proxied").await;
    let proxied = operator.metric(
        "kuberay_wasm_ray_requests_total",
        &["route=\"proxy-service\"", "outcome=\"ok\""],
    );
    assert!(
        proxied > 0.0,
        "no Ray request went through the API server's proxy"
    );
    assert_eq!(
        operator.metric("kuberay_wasm_reconcile_errors_total", &[]),
        0.0,
        "a reconcile failed as the operator's ServiceAccount in proxy mode"
    );
    operator.stop().await;
    let _ = std::fs::remove_file(kubeconfig);
}

/// Runs a RayJob (on a fake head) to `Complete`, then deletes it: a cluster created and deleted, status,
/// finalizer, and the Jobs API's submit, status and stop.
async fn run_rayjob(admin: &Client, ns: &TestNamespace, name: &str) {
    let api = ray_api(admin, ns, "RayJob", "rayjobs");
    let job = json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
        "spec": {"submissionMode": "HTTPMode", "entrypoint": "echo done", "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
            "containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}}},
    });
    api.patch(
        name,
        &PatchParams::apply("kuberay-wasm-tests"),
        &Patch::Apply(&job),
    )
    .await
    .unwrap();
    eventually(
        &format!("RayJob {name} to complete"),
        Duration::from_secs(120),
        || async {
            let status = serde_json::to_value(api.get(name).await.ok()?).ok()?["status"].clone();
            (status["jobDeploymentStatus"] == "Complete" && status["jobStatus"] == "SUCCEEDED").then_some(())
        },
    )
    .await;
    api.delete(name, &DeleteParams::default()).await.unwrap();
    eventually(
        &format!("RayJob {name} to be deleted"),
        Duration::from_secs(60),
        || async { api.get_opt(name).await.ok()?.is_none().then_some(()) },
    )
    .await;
}
