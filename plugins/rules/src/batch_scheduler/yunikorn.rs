//! Apache YuniKorn (`yunikorn`): no object of its own. Children get `schedulerName: yunikorn`, the owner's
//! `yunikorn.apache.org/app-id` and `yunikorn.apache.org/queue` labels (when not empty) under YuniKorn's
//! older names `applicationId` and `queue`, and, when the owner is labelled
//! `ray.io/gang-scheduling-enabled` (any value), the gang's task groups: the owner's own
//! `yunikorn.apache.org/task-groups` annotation if it has one that is not empty, else one made from its spec
//! ([`task_groups`]), plus `yunikorn.apache.org/task-group-name` (the child's group) on Pods.
//!
//! The task groups are the JSON of KubeRay's Go structs, byte for byte: per group `minResource` (the Pod's
//! resources), `nodeSelector`, `affinity`, `name`, `tolerations` (each left out when empty) and
//! `minMember` (1 for the head; `minReplicas × numOfHosts` for a worker group, suspended or not; 1 for a
//! RayJob's `submittergroup`, which follows the cluster's groups).

use std::fmt::Write as _;

use k8s_openapi::api::core::v1::PodSpec;
use kuberay_crds::{
    RayClusterSpec,
    constants::{HEAD_GROUP_NAME, labels::RAY_GANG_SCHEDULING_ENABLED},
};
use serde_json::Value;

use super::{Decoration, Parent, submitter_pod_spec};
use crate::{hash, resources};

/// The owner's application id label.
pub const APP_ID_LABEL: &str = "yunikorn.apache.org/app-id";
/// The owner's queue label.
pub const QUEUE_LABEL: &str = "yunikorn.apache.org/queue";
/// The Pod label YuniKorn reads the application id from.
pub const POD_APP_ID_LABEL: &str = "applicationId";
/// The Pod label YuniKorn reads the queue from.
pub const POD_QUEUE_LABEL: &str = "queue";
/// The annotation naming a Pod's task group.
pub const TASK_GROUP_NAME_ANNOTATION: &str = "yunikorn.apache.org/task-group-name";
/// The annotation carrying the gang's task groups (JSON).
pub const TASK_GROUPS_ANNOTATION: &str = "yunikorn.apache.org/task-groups";
/// The task group of a RayJob's submitter Pod.
pub const SUBMITTER_GROUP: &str = "submittergroup";

/// What a child of `parent` gets (without the `schedulerName`, which the caller adds). Without a cluster
/// spec to make task groups from (a RayJob on an existing cluster), the gang annotations are left out.
pub fn decoration(parent: Parent<'_>, group: &str) -> Decoration {
    let mut decoration = Decoration::default();
    for (from, to) in [(APP_ID_LABEL, POD_APP_ID_LABEL), (QUEUE_LABEL, POD_QUEUE_LABEL)] {
        if let Some(value) = parent.nonempty_label(from) {
            decoration.labels.insert(to.into(), value.into());
        }
    }
    if parent.label(RAY_GANG_SCHEDULING_ENABLED).is_none() {
        return decoration;
    }
    let own = parent
        .annotation(TASK_GROUPS_ANNOTATION)
        .filter(|v| !v.is_empty());
    let Some(groups) = own.map(str::to_string).or_else(|| task_groups(parent)) else {
        return decoration;
    };
    decoration
        .annotations
        .insert(TASK_GROUPS_ANNOTATION.into(), groups);
    if !group.is_empty() {
        decoration
            .annotations
            .insert(TASK_GROUP_NAME_ANNOTATION.into(), group.into());
    }
    decoration
}

/// The task groups KubeRay makes of the parent's spec (a RayJob's adds its submitter), as Go writes
/// them; `None` for a RayJob without `rayClusterSpec`.
pub fn task_groups(parent: Parent<'_>) -> Option<String> {
    let groups = match parent {
        Parent::Cluster(cluster) => cluster_groups(&cluster.spec),
        Parent::Job(job) => {
            let mut groups = cluster_groups(job.spec.ray_cluster_spec.as_ref()?);
            groups.push(group(SUBMITTER_GROUP, 1, &submitter_pod_spec(job)));
            groups
        }
    };
    Some(format!("[{}]", groups.join(",")))
}

fn cluster_groups(spec: &RayClusterSpec) -> Vec<String> {
    let empty = PodSpec::default();
    let head = spec.head_group_spec.template.spec.as_ref().unwrap_or(&empty);
    let mut groups = vec![group(HEAD_GROUP_NAME, 1, head)];
    for worker in spec.worker_group_specs.iter().flatten() {
        let min = worker
            .min_replicas
            .unwrap_or(0)
            .wrapping_mul(resources::hosts(worker));
        let pod = worker.template.spec.as_ref().unwrap_or(&empty);
        groups.push(group(&worker.group_name, min, pod));
    }
    groups
}

/// One group as Go's `json.Marshal` writes KubeRay's `TaskGroup` struct.
fn group(name: &str, min_member: i32, pod: &PodSpec) -> String {
    let mut out = String::from("{\"minResource\":{");
    let minimum = resources::pod(Some(pod));
    for (i, (resource, quantity)) in minimum.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{}:{}",
            hash::go_string(resource),
            hash::go_string(&quantity.canonical())
        );
    }
    out.push('}');
    let members = [
        (
            "nodeSelector",
            pod.node_selector.as_ref().filter(|m| !m.is_empty()).map(to_value),
        ),
        ("affinity", pod.affinity.as_ref().map(to_value)),
    ];
    push_members(&mut out, &members);
    let _ = write!(out, ",\"name\":{}", hash::go_string(name));
    let tolerations = pod.tolerations.as_ref().filter(|t| !t.is_empty()).map(to_value);
    push_members(&mut out, &[("tolerations", tolerations)]);
    let _ = write!(out, ",\"minMember\":{min_member}}}");
    out
}

fn push_members(out: &mut String, members: &[(&str, Option<Value>)]) {
    for (member, value) in members {
        if let Some(value) = value
            && let Some(json) = hash::pod_spec_member_json(member, value)
        {
            let _ = write!(out, ",\"{member}\":{json}");
        }
    }
}

fn to_value(value: &impl serde::Serialize) -> Value {
    // Kubernetes' types always serialize (their maps have string keys).
    serde_json::to_value(value).unwrap_or(Value::Null)
}
