//! The RBAC shipped in `host/deploy/rbac.yaml` is enough: an operator running as that ServiceAccount, with
//! no other rights, brings KubeRay's samples to ready, autoscaler Role included (Kubernetes only lets it
//! grant what it holds itself).

use std::{path::Path, time::Duration};

use k8s_openapi::api::{authentication::v1::TokenRequest, core::v1::ServiceAccount};
use kube::{
    Api, Client,
    api::{DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, ready_cluster, sample, start_operator,
};

/// Server-side applies a manifest whose objects name their own namespaces (or are cluster-scoped).
async fn apply_cluster_manifest(client: &Client, path: &Path) {
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(doc).unwrap();
        if value.is_null() {
            continue;
        }
        let object: DynamicObject = serde_json::from_value(value).unwrap();
        let gvk = GroupVersionKind::try_from(object.types.as_ref().unwrap()).unwrap();
        let (resource, capabilities) = discovery.resolve_gvk(&gvk).unwrap();
        let api: Api<DynamicObject> = match (&object.metadata.namespace, capabilities.scope) {
            (Some(ns), kube::discovery::Scope::Namespaced) => {
                Api::namespaced_with(client.clone(), ns, &resource)
            }
            _ => Api::all_with(client.clone(), &resource),
        };
        let name = object.metadata.name.clone().unwrap();
        api.patch(
            &name,
            &PatchParams::apply("kuberay-wasm-tests").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap();
    }
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
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            kubeconfig: Some(kubeconfig.clone()),
            ..OperatorOptions::default()
        },
    )
    .await;
    apply_manifest(&admin, &ns, &sample("ray-cluster.sample.yaml")).await;
    apply_manifest(&admin, &ns, &sample("ray-cluster.autoscaler.yaml")).await;
    ready_cluster(&admin, &ns, "raycluster-kuberay").await;
    ready_cluster(&admin, &ns, "raycluster-autoscaler").await;
    assert_eq!(
        operator.metric("kuberay_wasm_reconcile_errors_total", &[]),
        0.0,
        "a reconcile failed as the operator's ServiceAccount"
    );
    operator.stop().await;
    let _ = std::fs::remove_file(kubeconfig);
}
