//! Paths of the plugin components built for this tree (see `build.rs`).

/// The RayCluster plugin (`plugins/raycluster`).
pub const RAYCLUSTER: &str = env!("KUBERAY_PLUGIN_RAYCLUSTER");

/// The misbehaving test plugin (`tests/plugins/chaos`).
pub const CHAOS: &str = env!("KUBERAY_PLUGIN_CHAOS");
