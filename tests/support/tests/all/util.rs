use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, api::PostParams};
pub use kuberay_testenv::fixtures::{eventually, is_ready, poll_until};
use kuberay_testenv::{TestEnv, TestNamespace};
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
