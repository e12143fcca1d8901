//! Binds every pending Pod that asks for the default scheduler to the simulated node, as kube-scheduler
//! would (with the scheduler's own identity and RBAC). Pods that name another scheduler stay Pending, as
//! they would in a cluster without that scheduler.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, ResourceExt,
    api::PostParams,
    runtime::watcher::{self, watcher},
};
use serde_json::json;

use super::Shared;

pub async fn run(shared: Arc<Shared>) {
    let api: Api<Pod> = Api::all(shared.scheduler.clone());
    let config = watcher::Config::default().fields("spec.nodeName=");
    let mut events = watcher(api, config).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => bind(&shared, &pod).await,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "watch of unscheduled pods failed; retrying");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    }
}

async fn bind(shared: &Shared, pod: &Pod) {
    let scheduler = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .unwrap_or("default-scheduler");
    if scheduler != "default-scheduler" || pod.metadata.deletion_timestamp.is_some() {
        return;
    }
    let namespace = pod.namespace().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(shared.scheduler.clone(), &namespace);
    let binding = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name_any(), "uid": pod.metadata.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": shared.config.node_name},
    });
    let bound = api
        .create_subresource::<_, serde_json::Value>(
            "binding",
            &pod.name_any(),
            &PostParams::default(),
            &binding,
        )
        .await;
    match bound {
        Ok(_) => tracing::debug!(pod = %pod.name_any(), %namespace, "bound"),
        // Already bound, or deleted meanwhile.
        Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409) => {}
        Err(e) => tracing::warn!(pod = %pod.name_any(), %namespace, error = %e, "could not bind pod"),
    }
}
