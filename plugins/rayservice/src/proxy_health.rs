//! The head Pod's Serve proxy (KubeRay's `updateHeadPodServeLabel`): the head Pod gets no readiness probe
//! for its proxy, so the RayService probes `/-/healthz` on it and labels it `ray.io/serve=true|false`, which
//! puts it in or out of the serve Service. With `excludeHeadPodFromServeSvc` it is always `false`.
//!
//! The head Pod belongs to the RayCluster, not to the RayService, so the label is written as a label-only
//! apply (apiVersion, kind, name and the one label) that the host allows for Pods of a cluster the
//! RayService controls. A refusal (an operator without that rule) is logged and reported and leaves the
//! rest of the reconcile untouched.

use k8s_openapi::api::core::v1::Pod;
use kuberay_crds::{RayCluster, constants::labels};
use kuberay_plugin_sdk::{Event, Host, LogLevel, PortRole, RayRequest, RayTarget, TypedHost};
use kuberay_rules::consts::action;
use serde_json::json;

use crate::{
    consts::{PROXY_HEALTH_PATH, reason},
    context::Ctx,
};

/// Probes the head Pod of `cluster` and sets its label.
pub fn reconcile<H: Host>(
    ctx: &Ctx<'_, H>,
    cluster: Option<&RayCluster>,
) -> Result<(), kuberay_plugin_sdk::HostError> {
    let Some(cluster) = cluster else {
        return Ok(());
    };
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let heads: Vec<Pod> = ctx.host.list_as(&kuberay_rules::labels::head_pods(&name))?;
    let Some(head) = heads
        .into_iter()
        .find(|p| p.metadata.deletion_timestamp.is_none())
    else {
        ctx.log(LogLevel::Info, &format!("RayCluster {name} has no head Pod yet"));
        return Ok(());
    };
    let pod = head.metadata.name.clone().unwrap_or_default();
    let wanted = if ctx.spec().exclude_head_pod_from_serve_svc == Some(true) {
        "false"
    } else if healthy(ctx.host, &name) {
        "true"
    } else {
        "false"
    };
    let current = head
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::RAY_SERVE));
    if current.map(String::as_str) == Some(wanted) {
        return Ok(());
    }
    let intent = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "labels": {labels::RAY_SERVE: wanted}},
    });
    match ctx.host.apply(&intent) {
        Ok(_) => ctx.event(&Event::normal(
            reason::UPDATED_HEAD_POD_SERVE_LABEL,
            action::UPDATE,
            format!(
                "Updated the serve label to {wanted:?} for the Head Pod {}",
                ctx.key(&pod)
            ),
        )),
        Err(e) => {
            let message = format!(
                "Failed to update the serve label to {wanted:?} for the Head Pod {}: {}",
                ctx.key(&pod),
                e.message()
            );
            ctx.log(LogLevel::Warn, &message);
            ctx.event(&Event::warning(
                reason::FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL,
                action::UPDATE,
                message,
            ));
        }
    }
    Ok(())
}

/// `GET /-/healthz` on the head Pod's Serve port: 200 is healthy, anything else (no answer) is not.
fn healthy<H: Host>(host: &H, cluster: &str) -> bool {
    let request = RayRequest {
        cluster: cluster.to_string(),
        role: PortRole::Serve,
        target: RayTarget::HeadPod,
        method: "GET".into(),
        path: PROXY_HEALTH_PATH.into(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    matches!(host.ray(&request), Ok(response) if response.status == 200)
}
