//! Reading the state of existing Pods: which are running, ready, terminating, or beyond repair.

use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod};

pub fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

pub fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// The Pod's `Ready` condition status, if it has one.
fn ready_condition(pod: &Pod) -> Option<&str> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.as_str())
}

/// Running with `Ready=True` (what `readyWorkerReplicas` counts).
pub fn running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && ready_condition(pod) == Some("True")
}

/// Running and not reported unready (KubeRay's check for `state: ready` and `RayClusterProvisioned`,
/// which accepts a Pod that has no `Ready` condition yet).
pub fn running_not_unready(pod: &Pod) -> bool {
    phase(pod) == "Running" && ready_condition(pod).is_none_or(|s| s == "True")
}

pub fn terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// The termination state of the Ray container (the first one), found by name because the kubelet does
/// not keep container statuses in spec order.
pub fn ray_container_terminated(pod: &Pod) -> Option<&ContainerStateTerminated> {
    let ray = pod.spec.as_ref()?.containers.first()?.name.as_str();
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|s| s.name == ray)?
        .state
        .as_ref()?
        .terminated
        .as_ref()
}

/// Whether the Pod can never run Ray again and should be replaced, and why: it finished (`Failed` or
/// `Succeeded`), or its Ray container exited and `restartPolicy: Never` keeps it down.
pub fn should_delete(pod: &Pod, node: &str) -> Option<String> {
    let phase = phase(pod);
    if phase == "Failed" || phase == "Succeeded" {
        return Some(format!(
            "The {node} Pod {} status is {phase} which is a terminal state. KubeRay will delete the Pod and create \
             new Pods in the next reconciliation if necessary.",
            name(pod)
        ));
    }
    let restart_policy = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or_default();
    if phase == "Running"
        && restart_policy == "Never"
        && let Some(terminated) = ray_container_terminated(pod)
    {
        return Some(format!(
            "The Pod status of the {node} Pod {} is {phase}, and the Ray container terminated status is {} ({}). \
             The container is unable to restart due to its restart policy {restart_policy}, so KubeRay will delete it.",
            name(pod),
            terminated.exit_code,
            terminated.reason.as_deref().unwrap_or_default()
        ));
    }
    None
}
