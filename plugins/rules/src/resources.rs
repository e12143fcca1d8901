//! What a cluster asks of the Kubernetes scheduler, summed as KubeRay sums it (`CalculatePodResource`,
//! `CalculateDesiredResources`, `CalculateMinResources` and the replica counts beside them). The status's
//! `desiredCPU`/`desiredMemory` and the batch schedulers' gang sizes are made from these.
//!
//! KubeRay's rules, restated: a Pod counts its containers (not its init containers), each by its requests,
//! or its limits where it requests nothing of a resource; sums keep the first operand's format (Go's
//! quantity arithmetic). The desired resources multiply each group's Pod by its `replicas` as written (not
//! clamped to `minReplicas`/`maxReplicas`, unlike the desired replica count); the minimum ones by
//! `minReplicas`; both by `numOfHosts` and skip suspended groups.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use kuberay_crds::{RayClusterSpec, WorkerGroupSpec};

use crate::quantity::Quantity;

/// Resource names and their quantities, in name order.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Adds `list` into `total`, name by name (Go's `SumResourceList` step).
pub fn add_into(total: &mut ResourceList, list: ResourceList) {
    for (name, value) in list {
        let sum = total.remove(&name).map_or(value, |t| t.plus(value));
        total.insert(name, sum);
    }
}

/// The sum of several lists.
pub fn sum(lists: impl IntoIterator<Item = ResourceList>) -> ResourceList {
    let mut total = ResourceList::new();
    for list in lists {
        add_into(&mut total, list);
    }
    total
}

/// A Pod's resources: each container's requests, or its limits where it has no request of a resource.
pub fn pod(spec: Option<&PodSpec>) -> ResourceList {
    let mut total = ResourceList::new();
    for container in spec.map(|s| s.containers.as_slice()).unwrap_or_default() {
        let resources = container.resources.as_ref();
        let mut own: ResourceList = resources
            .and_then(|r| r.requests.as_ref())
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), Quantity::parse_or_zero(&v.0)))
            .collect();
        for (name, value) in resources.and_then(|r| r.limits.as_ref()).into_iter().flatten() {
            own.entry(name.clone())
                .or_insert_with(|| Quantity::parse_or_zero(&value.0));
        }
        add_into(&mut total, own);
    }
    total
}

/// Whether the group is suspended (`suspend: true`).
pub fn suspended(group: &WorkerGroupSpec) -> bool {
    group.suspend == Some(true)
}

/// Pods per replica; the CRD defaults `numOfHosts` to 1.
pub fn hosts(group: &WorkerGroupSpec) -> i32 {
    group.num_of_hosts.unwrap_or(1)
}

/// Replicas the group wants: `replicas` clamped to `[minReplicas, maxReplicas]`, 0 when suspended.
pub fn desired_replicas(group: &WorkerGroupSpec) -> i32 {
    if suspended(group) {
        return 0;
    }
    let min = group.min_replicas.unwrap_or(0);
    let max = group.max_replicas.unwrap_or(i32::MAX);
    match group.replicas {
        None => min,
        Some(r) if r < min => min,
        Some(r) if r > max => max,
        Some(r) => r,
    }
}

/// Worker Pods of the whole cluster at its desired size (Go's `CalculateDesiredReplicas`, in `int32`).
pub fn desired_workers(spec: &RayClusterSpec) -> i32 {
    groups(spec).fold(0i32, |n, g| {
        n.wrapping_add(desired_replicas(g).wrapping_mul(hosts(g)))
    })
}

/// Worker Pods of the whole cluster at its minimum size, suspended groups left out (Go's
/// `CalculateMinReplicas`, in `int32`).
pub fn min_workers(spec: &RayClusterSpec) -> i32 {
    groups(spec).filter(|g| !suspended(g)).fold(0i32, |n, g| {
        n.wrapping_add(g.min_replicas.unwrap_or(0).wrapping_mul(hosts(g)))
    })
}

fn groups(spec: &RayClusterSpec) -> impl Iterator<Item = &WorkerGroupSpec> {
    spec.worker_group_specs.iter().flatten()
}

/// The head plus every group that is not suspended at `pods_of(group)` Pods.
fn cluster(spec: &RayClusterSpec, pods_of: impl Fn(&WorkerGroupSpec) -> i32) -> ResourceList {
    let mut lists = vec![pod(spec.head_group_spec.template.spec.as_ref())];
    for group in groups(spec).filter(|g| !suspended(g)) {
        let pods = i64::from(pods_of(group)) * i64::from(hosts(group));
        let list = pod(group.template.spec.as_ref())
            .into_iter()
            .map(|(k, v)| (k, v.times(pods)))
            .collect();
        lists.push(list);
    }
    sum(lists)
}

/// The head plus every group at `replicas × numOfHosts` (unclamped, as KubeRay counts).
pub fn desired(spec: &RayClusterSpec) -> ResourceList {
    cluster(spec, |g| g.replicas.unwrap_or(0))
}

/// The head plus every group at `minReplicas × numOfHosts`.
pub fn min(spec: &RayClusterSpec) -> ResourceList {
    cluster(spec, |g| g.min_replicas.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(value: serde_json::Value) -> RayClusterSpec {
        serde_json::from_value(value).unwrap()
    }

    fn strings(list: &ResourceList) -> BTreeMap<&str, String> {
        list.iter().map(|(k, v)| (k.as_str(), v.canonical())).collect()
    }

    fn pod_of(cpu: &str, memory: &str) -> serde_json::Value {
        json!({"containers": [{"name": "ray", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": "9", "memory": memory}}}]})
    }

    #[test]
    fn desired_and_minimum_sums_follow_kuberay() {
        let spec = spec(json!({
            "headGroupSpec": {"template": {"spec": pod_of("500m", "1Gi")}},
            "workerGroupSpecs": [
                {"groupName": "a", "replicas": 1, "minReplicas": 2, "maxReplicas": 4, "numOfHosts": 2,
                 "template": {"spec": pod_of("250m", "512Mi")}},
                {"groupName": "b", "replicas": 3, "suspend": true, "template": {"spec": pod_of("1", "1Gi")}}
            ]
        }));
        // Desired resources use `replicas` as written (1 × 2 hosts); the desired count clamps it (2 × 2).
        assert_eq!(
            strings(&desired(&spec)),
            BTreeMap::from([("cpu", "1".to_string()), ("memory", "2Gi".to_string())])
        );
        assert_eq!(desired_workers(&spec), 4);
        assert_eq!(
            strings(&min(&spec)),
            BTreeMap::from([("cpu", "1500m".to_string()), ("memory", "3Gi".to_string())])
        );
        assert_eq!(min_workers(&spec), 4);
    }
}
