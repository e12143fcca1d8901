use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, api::PostParams};
pub use kuberay_testenv::fixtures::{eventually, is_ready, poll_until};
use kuberay_testenv::{TestEnv, TestNamespace, supervisor_binary};
use serde_json::Value;

/// The shared environment, or a clear failure.
pub async fn env() -> &'static TestEnv {
    match TestEnv::shared().await {
        Ok(env) => env,
        Err(e) => panic!("test environment unavailable: {e}"),
    }
}

pub async fn create<K>(client: &Client, ns: &TestNamespace, manifest: Value) -> K
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns.name());
    let object: K = serde_json::from_value(manifest).expect("test manifest must deserialize");
    api.create(&PostParams::default(), &object)
        .await
        .expect("creating a test object")
}

/// Waits until the Pod reports the Ready condition and returns it.
pub async fn ready_pod(client: &Client, ns: &TestNamespace, name: &str) -> Pod {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    eventually(
        &format!("pod {name} to be Ready"),
        Duration::from_secs(120),
        || async {
            let pod = api.get(name).await.ok()?;
            is_ready(&pod).then_some(pod)
        },
    )
    .await
}

pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// The `testenv-whoami` binary built next to the supervisor (a mapped image's stand-in).
pub fn whoami_binary() -> std::path::PathBuf {
    let whoami = supervisor_binary()
        .unwrap()
        .parent()
        .unwrap()
        .join("testenv-whoami");
    assert!(
        whoami.is_file(),
        "build it: cargo build -p kuberay-testenv --bins"
    );
    whoami
}

/// The kubelet port the environment's Node advertises (`daemonEndpoints`).
pub async fn kubelet_port(env: &TestEnv) -> i32 {
    let client = env.client().await.unwrap();
    let node: k8s_openapi::api::core::v1::Node = Api::all(client).get(&env.info().node_name).await.unwrap();
    node.status
        .and_then(|s| s.daemon_endpoints)
        .and_then(|d| d.kubelet_endpoint)
        .map_or(0, |e| e.port)
}
