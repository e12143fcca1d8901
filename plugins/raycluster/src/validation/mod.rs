//! KubeRay's admission rules for a RayCluster, checked before anything is created. An invalid cluster is
//! reported with a Warning event and left alone until its spec changes. The spec's rules are KubeRay's
//! `ValidateRayClusterSpec` in `kuberay_rules::cluster_spec`, shared with the RayJob and RayService plugins:
//! the alpha feature mTLS is off; NetworkPolicies, the history server and the embedded GCS store follow the
//! plugin's `featureGates` configuration. Metadata, status and upgrade options are checked here.

use kuberay_crds::{RayCluster, RayClusterSpec, constants::conditions};
use kuberay_rules::{
    cluster_spec::{self, Gates},
    syntax,
};

use crate::cluster::{self, Creator};

/// KubeRay's `ValidateRayClusterSpec` of this cluster: its spec and annotations under the gates.
pub fn validate_spec(cluster: &RayCluster, gates: Gates) -> Result<(), String> {
    cluster_spec::validate_spec(&cluster.spec, cluster.metadata.annotations.as_ref(), gates)
}

/// Longest cluster name: `-serve-svc`, the longest suffix, must still fit in 63 characters.
pub const MAX_CLUSTER_NAME_LENGTH: usize = 53;

pub fn validate_metadata(cluster: &RayCluster) -> Result<(), String> {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_CLUSTER_NAME_LENGTH {
        return Err(format!(
            "RayCluster name should be no more than {MAX_CLUSTER_NAME_LENGTH} characters"
        ));
    }
    let errors = syntax::dns1035_label_errors(name);
    if !errors.is_empty() {
        return Err(format!(
            "RayCluster name should be a valid DNS1035 label: {}",
            syntax::go_list(&errors)
        ));
    }
    Ok(())
}

/// Suspending and Suspended together would leave the suspend state machine with no way forward.
pub fn validate_status(cluster: &RayCluster) -> Result<(), String> {
    let is_true = |t: &str| {
        cluster
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == t && c.status == "True"))
    };
    if is_true(conditions::RAY_CLUSTER_SUSPENDING) && is_true(conditions::RAY_CLUSTER_SUSPENDED) {
        return Err(
            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended \
                    conditions should not be both true"
                .into(),
        );
    }
    Ok(())
}

/// `upgradeStrategy` is only for clusters users create directly; RayJob and RayService manage upgrades.
pub fn validate_upgrade_options(cluster: &RayCluster) -> Result<(), String> {
    if cluster
        .spec
        .upgrade_strategy
        .as_ref()
        .and_then(|u| u.type_)
        .is_some()
    {
        let creator = Creator::of(cluster);
        if creator != Creator::RayCluster {
            return Err(format!(
                "upgradeStrategy cannot be set when RayCluster is created by {}",
                creator.as_str()
            ));
        }
    }
    Ok(())
}

/// The autoscaler v1 restarts failed workers through Kubernetes only if they cannot restart in place;
/// KubeRay warns (without refusing) when a group's restart policy is anything but `Never`.
pub fn autoscaler_v1_restart_policy_warning(spec: &RayClusterSpec) -> Option<String> {
    if !(cluster::autoscaling(spec)
        && cluster::autoscaler_version(spec) == Some(kuberay_crds::AutoscalerVersion::V1))
    {
        return None;
    }
    let groups: Vec<&str> = spec
        .worker_group_specs
        .iter()
        .flatten()
        .filter(|g| {
            g.template
                .spec
                .as_ref()
                .and_then(|s| s.restart_policy.as_deref())
                .is_some_and(|p| !p.is_empty() && p != "Never")
        })
        .map(|g| g.group_name.as_str())
        .collect();
    (!groups.is_empty()).then(|| {
        format!(
            "restartPolicy for worker groups [{}] should be Never or unset when using autoscaler V1",
            groups.join(", ")
        )
    })
}
