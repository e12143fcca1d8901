//! `spec.suspend`: delete every Pod but keep the cluster. The operation is atomic: once the cluster is
//! `RayClusterSuspending`, all Pods are deleted and it becomes `RayClusterSuspended` even if the user
//! flips `suspend` back meanwhile; resuming starts from a clean slate. The conditions, not the spec,
//! carry this state between reconciles.

use kuberay_crds::{RayCluster, constants::conditions};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuspendState {
    Running,
    Suspending,
    Suspended,
}

pub fn condition_true(cluster: &RayCluster, type_: &str) -> bool {
    cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

/// Where the cluster is in the suspend cycle, from its conditions.
pub fn state(cluster: &RayCluster) -> SuspendState {
    let conditions = cluster.status.as_ref().and_then(|s| s.conditions.as_ref());
    for condition in conditions.into_iter().flatten() {
        if condition.status == "True" {
            if condition.type_ == conditions::RAY_CLUSTER_SUSPENDING {
                return SuspendState::Suspending;
            }
            if condition.type_ == conditions::RAY_CLUSTER_SUSPENDED {
                return SuspendState::Suspended;
            }
        }
    }
    SuspendState::Running
}
