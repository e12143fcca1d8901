//! Paths of the plugin components built for this tree (see `build.rs`).

/// The RayCluster plugin (`plugins/raycluster`).
pub const RAYCLUSTER: &str = env!("KUBERAY_PLUGIN_RAYCLUSTER");

/// The RayJob plugin (`plugins/rayjob`).
pub const RAYJOB: &str = env!("KUBERAY_PLUGIN_RAYJOB");

/// The misbehaving test plugin (`tests/plugins/chaos`).
pub const CHAOS: &str = env!("KUBERAY_PLUGIN_CHAOS");
