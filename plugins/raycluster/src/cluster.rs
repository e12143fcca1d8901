//! Questions about a RayCluster that many parts of the reconcile ask: is autoscaling on, is GCS fault
//! tolerance on, how many workers does a group want. Each answers exactly as KubeRay's helper of the same
//! purpose, since they decide what gets created.

use std::collections::BTreeMap;

use kuberay_crds::{
    GcsFaultToleranceBackend, MANAGED_BY_KUBERAY, RayCluster, RayClusterSpec, WorkerGroupSpec,
    constants::{annotations, labels},
};

use kuberay_rules::{batch_scheduler::BatchScheduler, operator_env::OperatorEnv};

use kuberay_rules::cluster_spec::{self, Gates};
pub use kuberay_rules::cluster_spec::{autoscaler_v2, autoscaler_version, autoscaling, group_suspended};

use crate::consts::DEFAULT_GCS_SERVER_PORT;

/// The cluster's name, namespace and uid, which nearly every object built for it needs.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    /// The cluster's DNS domain (the plugin's `clusterDomain` configuration, KubeRay's `CLUSTER_DOMAIN`).
    pub cluster_domain: String,
    /// KubeRay's operator environment toggles (the plugin's `kuberayEnv` configuration).
    pub env: OperatorEnv,
    /// The batch scheduler (the plugin's `batchScheduler` configuration), if any.
    pub batch_scheduler: Option<BatchScheduler>,
    /// The feature gates the plugin reads (the plugin's `featureGates` configuration).
    pub gates: Gates,
}

impl Identity {
    pub fn of(cluster: &RayCluster) -> Self {
        let meta = &cluster.metadata;
        Self {
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_else(|| "default".to_string()),
            uid: meta.uid.clone().unwrap_or_default(),
            cluster_domain: crate::consts::CLUSTER_DOMAIN.to_string(),
            env: OperatorEnv::default(),
            batch_scheduler: None,
            gates: Gates::default(),
        }
    }
}

/// Which custom resource created the cluster (`ray.io/originated-from-crd`); RayService clusters get
/// extra Serve settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creator {
    RayCluster,
    RayJob,
    RayService,
}

impl Creator {
    pub fn of(cluster: &RayCluster) -> Self {
        match annotation_or_label(cluster.metadata.labels.as_ref(), labels::RAY_ORIGINATED_FROM_CRD) {
            Some("RayJob") => Self::RayJob,
            Some("RayService") => Self::RayService,
            _ => Self::RayCluster,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::RayCluster => "RayCluster",
            Self::RayJob => "RayJob",
            Self::RayService => "RayService",
        }
    }
}

fn annotation_or_label<'a>(map: Option<&'a BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    map.and_then(|m| m.get(key)).map(String::as_str)
}

pub fn annotation<'a>(cluster: &'a RayCluster, key: &str) -> Option<&'a str> {
    annotation_or_label(cluster.metadata.annotations.as_ref(), key)
}

/// `spec.managedBy` names a controller other than KubeRay (for example MultiKueue): hands off.
pub fn managed_elsewhere(spec: &RayClusterSpec) -> Option<&str> {
    spec.managed_by.as_deref().filter(|m| *m != MANAGED_BY_KUBERAY)
}

/// GCS fault tolerance: `gcsFaultToleranceOptions`, or the legacy `ray.io/ft-enabled: "true"`.
pub fn gcs_ft_enabled(cluster: &RayCluster) -> bool {
    cluster_spec::gcs_ft_enabled(&cluster.spec, cluster.metadata.annotations.as_ref())
}

/// The embedded RocksDB backend (no Redis to clean up).
pub fn gcs_ft_embedded(spec: &RayClusterSpec) -> bool {
    spec.gcs_fault_tolerance_options
        .as_ref()
        .is_some_and(|o| o.backend == Some(GcsFaultToleranceBackend::RocksDb))
}

/// GCS fault tolerance backed by Redis, which needs the clean-up Job when the cluster goes away.
pub fn redis_ft(cluster: &RayCluster) -> bool {
    gcs_ft_enabled(cluster) && !gcs_ft_embedded(&cluster.spec)
}

/// `ray.io/overwrite-container-cmd: "true"`: leave the Ray container's command alone.
pub fn overwrite_container_cmd(cluster: &RayCluster) -> bool {
    annotation(cluster, annotations::RAY_OVERWRITE_CONTAINER_CMD)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The GCS port workers connect to: the head's `port` start parameter, else 6379.
pub fn head_port(spec: &RayClusterSpec) -> String {
    spec.head_group_spec
        .ray_start_params
        .as_ref()
        .and_then(|p| p.get("port"))
        .cloned()
        .unwrap_or_else(|| DEFAULT_GCS_SERVER_PORT.to_string())
}

/// Pods per replica; the CRD defaults `numOfHosts` to 1.
pub fn num_of_hosts(group: &WorkerGroupSpec) -> i32 {
    group.num_of_hosts.unwrap_or(1)
}

/// Replicas the group wants: `replicas` clamped to `[minReplicas, maxReplicas]`, 0 when suspended.
pub fn desired_replicas(group: &WorkerGroupSpec) -> i32 {
    kuberay_rules::resources::desired_replicas(group)
}

/// Worker Pods the group wants: desired replicas × hosts per replica.
pub fn desired_worker_pods(group: &WorkerGroupSpec) -> i64 {
    i64::from(desired_replicas(group)) * i64::from(num_of_hosts(group))
}

/// Clamps a Pod count into the `int32` fields of the status.
pub fn saturate_i32(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(
        replicas: Option<i32>,
        min: Option<i32>,
        max: Option<i32>,
        hosts: Option<i32>,
    ) -> WorkerGroupSpec {
        WorkerGroupSpec {
            replicas,
            min_replicas: min,
            max_replicas: max,
            num_of_hosts: hosts,
            ..WorkerGroupSpec::default()
        }
    }

    #[test]
    fn desired_pods_clamp_replicas_and_multiply_by_hosts() {
        assert_eq!(desired_worker_pods(&group(Some(3), Some(0), Some(10), None)), 3);
        assert_eq!(desired_worker_pods(&group(Some(0), Some(2), Some(10), None)), 2);
        assert_eq!(desired_worker_pods(&group(Some(20), Some(0), Some(5), None)), 5);
        assert_eq!(desired_worker_pods(&group(None, Some(1), None, None)), 1);
        assert_eq!(desired_worker_pods(&group(Some(2), Some(0), Some(4), Some(4))), 8);
        let mut suspended = group(Some(3), Some(0), Some(5), None);
        suspended.suspend = Some(true);
        assert_eq!(desired_worker_pods(&suspended), 0);
    }
}
