//! Paths of the plugin components built for this tree (see `build.rs`).

/// The RayCluster plugin (`plugins/raycluster`).
pub const RAYCLUSTER: &str = env!("KUBERAY_PLUGIN_RAYCLUSTER");

/// The RayJob plugin (`plugins/rayjob`).
pub const RAYJOB: &str = env!("KUBERAY_PLUGIN_RAYJOB");

/// The RayCronJob plugin (`plugins/raycronjob`).
pub const RAYCRONJOB: &str = env!("KUBERAY_PLUGIN_RAYCRONJOB");

/// The RayService plugin (`plugins/rayservice`).
pub const RAYSERVICE: &str = env!("KUBERAY_PLUGIN_RAYSERVICE");

/// The misbehaving test plugin (`tests/plugins/chaos`).
pub const CHAOS: &str = env!("KUBERAY_PLUGIN_CHAOS");

/// The chaos plugin built with `greedy`: it asks for more Pod verbs (a reload asking for more).
pub const CHAOS_GREEDY: &str = env!("KUBERAY_PLUGIN_CHAOS_GREEDY");

/// The chaos plugin built with `reconcile-secrets`: it calls itself `chaos-secrets` and reconciles `v1/Secret`.
pub const CHAOS_SECRETS: &str = env!("KUBERAY_PLUGIN_CHAOS_SECRETS");
