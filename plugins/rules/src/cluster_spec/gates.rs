//! The KubeRay feature gates that change what a cluster may ask for and what the RayCluster plugin does with
//! it (and the RayJob plugin's `SidecarMode` submitter), read once per reconcile from a plugin's `featureGates` configuration (absent gates have KubeRay v1.7's
//! defaults: all off).

use crate::config::{
    GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE, RAY_CLUSTER_HISTORY_SERVER, RAY_CLUSTER_MTLS,
    RAY_CLUSTER_NETWORK_POLICY, SIDECAR_SUBMITTER_RESTART, feature_gate,
};
use serde_json::{Map, Value};

/// The gates' states for one reconcile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gates {
    /// `RayClusterNetworkPolicy`: `spec.networkPolicy` is allowed and turned into NetworkPolicies.
    pub network_policy: bool,
    /// `RayClusterHistoryServer`: `spec.historyServerOptions` is allowed and adds the collector sidecar.
    pub history_server: bool,
    /// `GCSFaultToleranceEmbeddedStorage`: `gcsFaultToleranceOptions.backend: rocksdb` is allowed and gets
    /// its PersistentVolumeClaim.
    pub embedded_gcs_storage: bool,
    /// `RayClusterMTLS`: `spec.tlsOptions` is allowed and, enabled, gets cert-manager certificates.
    pub mtls: bool,
    /// `SidecarSubmitterRestart`: a RayJob's `SidecarMode` submitter container restarts on failure, up to a
    /// restart budget, instead of failing the RayJob at its first non-zero exit.
    pub sidecar_submitter_restart: bool,
}

impl Gates {
    /// The gates as `config` sets them.
    pub fn from_config(config: &Map<String, Value>) -> Self {
        Self {
            network_policy: feature_gate(config, RAY_CLUSTER_NETWORK_POLICY),
            history_server: feature_gate(config, RAY_CLUSTER_HISTORY_SERVER),
            embedded_gcs_storage: feature_gate(config, GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE),
            mtls: feature_gate(config, RAY_CLUSTER_MTLS),
            sidecar_submitter_restart: feature_gate(config, SIDECAR_SUBMITTER_RESTART),
        }
    }
}
