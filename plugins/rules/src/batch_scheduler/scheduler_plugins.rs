//! kubernetes-sigs/scheduler-plugins (`scheduler-plugins`): Pods go to the scheduler instance
//! `scheduler-plugins-scheduler`. A RayCluster labelled `ray.io/gang-scheduling-enabled` (any value) gets a
//! `scheduling.x-k8s.io/v1alpha1` PodGroup named like it, created once before its Pods and never updated
//! (`minMember`: the head plus the desired workers; `minResources`: the desired resources, autoscaling or
//! not), and its Pods get the `scheduling.x-k8s.io/pod-group` label. Every RayJob is refused: KubeRay only
//! supports RayClusters with this scheduler.

use kuberay_crds::{RayCluster, constants::labels::RAY_GANG_SCHEDULING_ENABLED};
use kuberay_plugin_sdk::{Host, HostError, Kind};
use serde_json::{Value, json};

use super::{Decoration, Parent, volcano::Size};
use crate::resources;

/// The PodGroup's API version.
pub const API_VERSION: &str = "scheduling.x-k8s.io/v1alpha1";
/// The Pods' `schedulerName`: the default name of scheduler-plugins' second scheduler.
pub const SCHEDULER_NAME: &str = "scheduler-plugins-scheduler";
/// The label naming a Pod's PodGroup.
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// KubeRay's refusal of every RayJob.
pub const JOB_REFUSAL: &str = "currently only RayCluster is supported, got *v1.RayJob";

/// The PodGroup kind.
pub fn kind() -> Kind {
    Kind::from_api_version(API_VERSION, "PodGroup")
}

/// Whether the parent asks for gang scheduling (the label, whatever its value).
pub fn gang(parent: Parent<'_>) -> bool {
    parent.label(RAY_GANG_SCHEDULING_ENABLED).is_some()
}

/// What a child of `parent` gets (without the `schedulerName`, which the caller adds).
pub fn decoration(parent: Parent<'_>) -> Decoration {
    let mut decoration = Decoration::default();
    if gang(parent) {
        decoration
            .labels
            .insert(POD_GROUP_LABEL.into(), parent.name().into());
    }
    decoration
}

/// The PodGroup of a gang-scheduled cluster, `None` for any other; the host adds the owner reference.
pub fn pod_group(cluster: &RayCluster) -> Option<Value> {
    let parent = Parent::Cluster(cluster);
    if !gang(parent) {
        return None;
    }
    let size = Size {
        min_member: resources::desired_workers(&cluster.spec).wrapping_add(1),
        min_resources: resources::desired(&cluster.spec),
    };
    Some(json!({
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": parent.name(), "namespace": parent.namespace()},
        "spec": {"minMember": size.min_member, "minResources": size.resources_json()},
    }))
}

/// Creates the cluster's PodGroup unless it is not gang scheduled or the PodGroup exists (one that appeared
/// meanwhile is left alone). Returns whether it created it.
pub fn ensure<H: Host + ?Sized>(host: &H, cluster: &RayCluster) -> Result<bool, HostError> {
    let Some(object) = pod_group(cluster) else {
        return Ok(false);
    };
    if host.get(&kind(), Parent::Cluster(cluster).name())?.is_some() {
        return Ok(false);
    }
    match host.create(&object) {
        Ok(_) => Ok(true),
        Err(HostError::Conflict(_)) => Ok(false),
        Err(e) => Err(e),
    }
}
