//! `upgradeStrategy.type: Recreate`: when the spec changes, every Pod is deleted and re-created from the
//! new spec. The change is detected with KubeRay's own spec hash (`kuberay_rules::hash::recreate_hash`,
//! which leaves out what the autoscaler and Kueue-like controllers change), stored on the head Pod as
//! `ray.io/upgrade-strategy-recreate-hash`; it equals the value KubeRay stores for the same spec, so Pods
//! created by KubeRay are not re-created when this operator takes over.

use kuberay_crds::{RayClusterSpec, RayClusterUpgradeType};

/// Whether the cluster asks for `Recreate`.
pub fn recreate(spec: &RayClusterSpec) -> bool {
    spec.upgrade_strategy
        .as_ref()
        .and_then(|u| u.type_)
        .is_some_and(|t| t == RayClusterUpgradeType::Recreate)
}

#[cfg(test)]
mod tests {
    use kuberay_crds::RayClusterUpgradeStrategy;

    use super::*;

    #[test]
    fn only_recreate_asks_for_recreation() {
        let with = |type_| RayClusterSpec {
            upgrade_strategy: Some(RayClusterUpgradeStrategy { type_ }),
            ..RayClusterSpec::default()
        };
        assert!(recreate(&with(Some(RayClusterUpgradeType::Recreate))));
        assert!(!recreate(&with(Some(RayClusterUpgradeType::None))));
        assert!(!recreate(&with(None)));
        assert!(!recreate(&RayClusterSpec::default()));
    }
}
