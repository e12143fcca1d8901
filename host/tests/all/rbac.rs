//! The RBAC shipped in `deploy/kustomize/` (which the Helm chart reads its rules from) is enough and no more than each routing mode needs: an operator running
//! as that ServiceAccount with only `rbac.yaml` brings KubeRay's samples to ready, autoscaler Role included
//! (Kubernetes only lets it grant what it holds itself), and runs RayJobs to completion reaching Ray heads
//! directly (leading through a Lease in `kuberay-system`), without any right on the `services/proxy` or
//! `pods/proxy` subresources; with `rbac-proxy.yaml`
//! added it does the same through the API server's proxy (where a stopped job on deletion is a proxied POST).

use std::{path::Path, time::Duration};

use k8s_openapi::api::{
    authentication::v1::TokenRequest, authorization::v1::SelfSubjectAccessReview, core::v1::ServiceAccount,
    rbac::v1::ClusterRoleBinding,
};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use kuberay_testenv::TestNamespace;
use kuberay_wasm::leadership::{LeaderElection, unique_identity};
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
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kustomize");
    apply_cluster_manifest(&admin, &deploy.join("base/rbac.yaml")).await;
    apply_cluster_manifest(&admin, &deploy.join("base/leader-election.yaml")).await;
    // Direct mode first, with rbac.yaml alone (a shared environment may hold the proxy binding of a
    // previous run).
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let _ = bindings
        .delete("kuberay-wasm-proxy", &DeleteParams::default())
        .await;

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
    let operator_client = client_from(&kubeconfig).await;
    for subresource in ["services/proxy", "pods/proxy"] {
        assert!(
            !may(&operator_client, ns.name(), subresource).await,
            "rbac.yaml grants {subresource}"
        );
    }
    let options = |use_kubernetes_proxy| OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::RAYJOB,
        ],
        kubeconfig: Some(kubeconfig.clone()),
        use_kubernetes_proxy,
        // Direct mode leads through a Lease in the operator's namespace, as the chart runs it.
        leader_election: (!use_kubernetes_proxy).then(|| LeaderElection {
            namespace: "kuberay-system".into(),
            lease_name: format!("rbac-test-{}", std::process::id()),
            identity: unique_identity("rbac"),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }),
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
    assert_eq!(operator.metric("kuberay_wasm_leader ", &[]), 1.0, "not leading");
    run_rayjob(&admin, &ns, "direct").await;
    let direct = operator.metric(
        "kuberay_wasm_ray_requests_total",
        &["route=\"direct-service\"", "outcome=\"ok\""],
    );
    assert!(direct > 0.0, "no Ray request went out directly");
    assert_eq!(operator.metric("kuberay_wasm_reconcile_errors_total", &[]), 0.0);
    operator.stop().await;

    apply_cluster_manifest(&admin, &deploy.join("overlays/proxy/rbac-proxy.yaml")).await;
    eventually("the proxy rights to apply", Duration::from_secs(30), || async {
        let services = may(&operator_client, ns.name(), "services/proxy").await;
        (services && may(&operator_client, ns.name(), "pods/proxy").await).then_some(())
    })
    .await;
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

async fn client_from(kubeconfig: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// Whether `client`'s identity may `get` the proxy `subresource` (`services/proxy`) in `namespace`.
async fn may(client: &Client, namespace: &str, subresource: &str) -> bool {
    let (resource, subresource) = subresource.split_once('/').unwrap();
    let review: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"resourceAttributes": {
            "namespace": namespace, "verb": "get", "resource": resource, "subresource": subresource,
        }},
    }))
    .unwrap();
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answer = reviews.create(&PostParams::default(), &review).await.unwrap();
    answer.status.is_some_and(|s| s.allowed)
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
