//! What a RayService says that several steps read: the upgrade strategy it asks for and the cluster its
//! status names. A leaf: the steps (`cluster`, `services`, `status`, `incremental`, ...) build on it.

use kuberay_crds::{RayService, RayServiceStatus, RayServiceUpgradeType};

/// Whether the upgrade strategy is `NewClusterWithIncrementalUpgrade`.
pub fn incremental(service: &RayService) -> bool {
    service
        .spec
        .upgrade_strategy
        .as_ref()
        .and_then(|s| s.type_.as_ref())
        == Some(&RayServiceUpgradeType::NewClusterWithIncrementalUpgrade)
}

/// The name of the cluster in a service status.
pub fn cluster_name(status: &Option<RayServiceStatus>) -> String {
    status
        .as_ref()
        .and_then(|s| s.ray_cluster_name.clone())
        .unwrap_or_default()
}
