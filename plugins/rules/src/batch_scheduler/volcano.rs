//! Volcano (`volcano`): one `scheduling.volcano.sh/v1beta1` PodGroup per gang, named `ray-<name>-pg`.
//!
//! - A RayCluster gets its PodGroup before its Pods, at every reconcile that reaches them, unless a RayJob
//!   created it (`ray.io/originated-from-crd: RayJob`): that RayJob's PodGroup covers it. A RayJob gets its
//!   PodGroup at every reconcile in `Initializing`; one without `rayClusterSpec` is refused.
//! - Its size (`minMember`, `minResources`) is the cluster's: the head plus every worker Pod at the desired
//!   size, or at the minimum size with autoscaling; a RayJob's `minResources` adds the submitter (its Pod in
//!   `K8sJobMode`, the default submitter container in `SidecarMode`) but not its `minMember`. An existing
//!   PodGroup whose size differs is updated (those two fields only).
//! - A new PodGroup carries the owner's annotations, its `volcano.sh/queue-name` label as `spec.queue`,
//!   `ray.io/priority-class-name` as `spec.priorityClassName`, the `volcano.sh/network-topology-mode` and
//!   `volcano.sh/network-topology-highest-tier-allowed` labels as `spec.networkTopology`, and
//!   `status.phase: Pending`.
//! - Children get the queue and priority-class labels (when not empty), `scheduling.k8s.io/group-name`
//!   (the PodGroup, which for a RayJob's cluster is the RayJob's), `volcano.sh/task-spec` (the Pod's group)
//!   and `schedulerName: volcano`.
//! - When a RayJob finishes or is suspended, its PodGroup is resized to what its cluster still holds
//!   ([`cleanup_size`]): nothing once the cluster is gone.

use kuberay_crds::{
    JobSubmissionMode, RayCluster, RayClusterSpec, RayJob,
    constants::labels::{RAY_ORIGINATED_FROM_CR_NAME, RAY_ORIGINATED_FROM_CRD, RAY_PRIORITY_CLASS_NAME},
};
use kuberay_plugin_sdk::{Host, HostError, Kind};
use serde_json::{Map, Value, json};

use super::{Decoration, Parent, default_submitter_pod_spec, submission_mode, submitter_pod_spec};
use crate::{
    quantity::Quantity,
    resources::{self, ResourceList},
};

/// The PodGroup's API version.
pub const API_VERSION: &str = "scheduling.volcano.sh/v1beta1";
/// The queue a gang is scheduled from (a label of the RayCluster or RayJob, copied to the Pods).
pub const QUEUE_LABEL: &str = "volcano.sh/queue-name";
/// The network topology mode of the PodGroup (a label of the owner).
pub const NETWORK_TOPOLOGY_MODE_LABEL: &str = "volcano.sh/network-topology-mode";
/// The highest network tier the PodGroup may span (a label of the owner, an integer).
pub const NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL: &str = "volcano.sh/network-topology-highest-tier-allowed";
/// The annotation naming a Pod's PodGroup.
pub const GROUP_NAME_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// The annotation naming a Pod's task (its Ray group).
pub const TASK_SPEC_ANNOTATION: &str = "volcano.sh/task-spec";

/// The PodGroup kind.
pub fn kind() -> Kind {
    Kind::from_api_version(API_VERSION, "PodGroup")
}

/// `ray-<name>-pg`, where the name is the RayJob's for a cluster a RayJob created.
pub fn pod_group_name(parent: Parent<'_>) -> String {
    let from_job = parent.label(RAY_ORIGINATED_FROM_CRD) == Some("RayJob");
    let name = match parent.label(RAY_ORIGINATED_FROM_CR_NAME) {
        Some(job) if from_job && !job.is_empty() => job,
        _ => parent.name(),
    };
    format!("ray-{name}-pg")
}

/// What a child of `parent` gets (without the `schedulerName`, which the caller adds).
pub fn decoration(parent: Parent<'_>, group: &str) -> Decoration {
    let mut decoration = Decoration::default();
    for key in [QUEUE_LABEL, RAY_PRIORITY_CLASS_NAME] {
        if let Some(value) = parent.nonempty_label(key) {
            decoration.labels.insert(key.into(), value.into());
        }
    }
    decoration
        .annotations
        .insert(GROUP_NAME_ANNOTATION.into(), pod_group_name(parent));
    decoration
        .annotations
        .insert(TASK_SPEC_ANNOTATION.into(), group.into());
    decoration
}

/// A RayJob on an existing cluster cannot be gang scheduled.
pub fn refuses_job(job: &RayJob) -> Option<String> {
    job.spec.ray_cluster_spec.is_none().then(|| {
        let parent = Parent::Job(job);
        format!(
            "gang scheduling does not support RayJob {}/{} referencing an existing RayCluster",
            parent.namespace(),
            parent.name()
        )
    })
}

/// A PodGroup's size.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Size {
    /// `spec.minMember`.
    pub min_member: i32,
    /// `spec.minResources`.
    pub min_resources: ResourceList,
}

impl Size {
    /// `minResources` as JSON: each quantity's canonical string.
    pub fn resources_json(&self) -> Value {
        let map: Map<String, Value> = self
            .min_resources
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.canonical())))
            .collect();
        Value::Object(map)
    }

    /// Whether a stored PodGroup already has this size (quantities compared by value, as Go's
    /// `quota.Equals`, except that a resource at zero counts as absent: see [`sync`]).
    pub fn matches(&self, pod_group: &Value) -> bool {
        let member = pod_group.pointer("/spec/minMember").and_then(Value::as_i64);
        if member.unwrap_or(0) != i64::from(self.min_member) {
            return false;
        }
        let Some(stored) = pod_group.pointer("/spec/minResources").and_then(Value::as_object) else {
            return false;
        };
        let stored: ResourceList = stored
            .iter()
            .map(|(name, have)| {
                let have = match have {
                    Value::String(s) => Quantity::parse_or_zero(s),
                    other => Quantity::parse_or_zero(&other.to_string()),
                };
                (name.clone(), have)
            })
            .collect();
        let zero = Quantity::default();
        let names = stored.keys().chain(self.min_resources.keys());
        names.into_iter().all(|name| {
            let have = stored.get(name).unwrap_or(&zero);
            let want = self.min_resources.get(name).unwrap_or(&zero);
            have.cmp_value(want).is_eq()
        })
    }

    /// `minResources` for an update of `existing`: what it has that this size lacks is set to zero.
    fn resources_over(&self, existing: &Value) -> Value {
        let mut json = self.resources_json();
        let stored = existing.pointer("/spec/minResources").and_then(Value::as_object);
        for name in stored.into_iter().flat_map(|m| m.keys()) {
            if let Some(map) = json.as_object_mut()
                && !map.contains_key(name)
            {
                map.insert(name.clone(), Value::String("0".into()));
            }
        }
        json
    }
}

/// A cluster's gang (`calculatePodGroupParams`): at the minimum size with autoscaling, else at the desired
/// size, the head included.
pub fn cluster_size(spec: &RayClusterSpec) -> Size {
    if spec.enable_in_tree_autoscaling == Some(true) {
        Size {
            min_member: resources::min_workers(spec).wrapping_add(1),
            min_resources: resources::min(spec),
        }
    } else {
        Size {
            min_member: resources::desired_workers(spec).wrapping_add(1),
            min_resources: resources::desired(spec),
        }
    }
}

/// What the submitter asks for: its Pod in `K8sJobMode`, KubeRay's default submitter container in
/// `SidecarMode` (a `submitterPodTemplate` plays no part there), nothing otherwise.
pub fn submitter_resources(job: &RayJob) -> ResourceList {
    match submission_mode(job) {
        JobSubmissionMode::K8sJobMode => resources::pod(Some(&submitter_pod_spec(job))),
        JobSubmissionMode::SidecarMode => resources::pod(Some(&default_submitter_pod_spec())),
        _ => ResourceList::new(),
    }
}

/// A RayJob's gang: its cluster's, plus the submitter's resources; `None` without a `rayClusterSpec`.
pub fn job_size(job: &RayJob) -> Option<Size> {
    let cluster = cluster_size(job.spec.ray_cluster_spec.as_ref()?);
    Some(Size {
        min_member: cluster.min_member,
        min_resources: resources::sum([cluster.min_resources, submitter_resources(job)]),
    })
}

/// The size of a finished or suspended RayJob's PodGroup (`CleanupOnCompletion`): what `cluster` (the
/// RayJob's cluster as it is now, `None` if it is gone) still holds, nothing if it is gone or going.
/// `None` when there is nothing to resize: a RayJob on an existing cluster, or one that never named its
/// cluster.
pub fn cleanup_size(job: &RayJob, cluster: Option<&RayCluster>) -> Option<Size> {
    if job.spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty()) {
        return None;
    }
    let status = job.status.as_ref()?;
    if status.ray_cluster_name.as_deref().unwrap_or_default().is_empty() {
        return None;
    }
    Some(match cluster {
        Some(live) if live.metadata.deletion_timestamp.is_none() => cluster_size(&live.spec),
        _ => Size::default(),
    })
}

/// The PodGroup KubeRay creates for `owner` (a RayCluster or a RayJob); the host adds the controller
/// owner reference. Refused when the highest-tier label is not an integer.
pub fn pod_group(owner: Parent<'_>, size: &Size) -> Result<Value, String> {
    let name = pod_group_name(owner);
    let mut spec = json!({"minMember": size.min_member, "minResources": size.resources_json()});
    if let Some(mode) = owner.label(NETWORK_TOPOLOGY_MODE_LABEL) {
        let mut topology = json!({"mode": mode});
        if let Some(tier) = owner.label(NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL) {
            let tier: i64 = tier.parse().map_err(|_| {
                format!(
                    "failed to convert {NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL} label to int: strconv.Atoi: \
                     parsing {tier:?}: invalid syntax for podgroup {name} in namespace {}",
                    owner.namespace()
                )
            })?;
            topology["highestTierAllowed"] = json!(tier);
        }
        spec["networkTopology"] = topology;
    }
    if let Some(queue) = owner.label(QUEUE_LABEL) {
        spec["queue"] = json!(queue);
    }
    if let Some(class) = owner.label(RAY_PRIORITY_CLASS_NAME) {
        spec["priorityClassName"] = json!(class);
    }
    let mut metadata = json!({"name": name, "namespace": owner.namespace()});
    let annotations = owner.annotations();
    if !annotations.is_empty() {
        metadata["annotations"] = json!(annotations);
    }
    Ok(json!({
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Pending"},
    }))
}

/// Why a PodGroup could not be kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// The owner's labels do not make a PodGroup.
    #[error("{0}")]
    Invalid(String),
    /// The host refused or failed.
    #[error(transparent)]
    Host(#[from] HostError),
}

/// KubeRay's `syncPodGroup`: creates `owner`'s PodGroup at `size` if it is missing (one that appeared
/// meanwhile is left alone), or updates its `minMember` and `minResources` if they differ. Returns whether
/// it wrote.
///
/// KubeRay replaces the whole object; a server-side apply cannot remove map entries another field
/// manager's create set, so a resource the new size lacks is written as `0` (Volcano reads a zero and an
/// absent resource alike) where KubeRay's object has no entry.
pub fn sync<H: Host + ?Sized>(host: &H, owner: Parent<'_>, size: &Size) -> Result<bool, SyncError> {
    let name = pod_group_name(owner);
    match host.get(&kind(), &name)? {
        None => {
            let object = pod_group(owner, size).map_err(SyncError::Invalid)?;
            match host.create(&object) {
                Ok(_) => Ok(true),
                Err(HostError::Conflict(_)) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        Some(existing) if size.matches(&existing) => Ok(false),
        Some(existing) => {
            let update = json!({
                "apiVersion": API_VERSION,
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": owner.namespace()},
                "spec": {"minMember": size.min_member, "minResources": size.resources_over(&existing)},
            });
            host.apply(&update)?;
            Ok(true)
        }
    }
}
