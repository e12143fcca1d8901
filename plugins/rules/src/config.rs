//! The configuration the host hands every built-in plugin (WIT interface `config`): the keys they read and
//! the check that refuses a configuration they cannot use, at load time, before the version serves.

use serde_json::{Map, Value};

use crate::{batch_scheduler::BatchScheduler, operator_env::PodDefaults, syntax::is_dns1123_subdomain};

/// The cluster's DNS domain (`--cluster-domain`, KubeRay's `CLUSTER_DOMAIN`), in head addresses.
pub const CLUSTER_DOMAIN: &str = "clusterDomain";

/// KubeRay's feature gates as the operator was started with them (`--feature-gates`): an object of gate
/// names and booleans, every gate KubeRay v1.7 has.
pub const FEATURE_GATES: &str = "featureGates";

/// The batch scheduler KubeRay integrates with (`--batch-scheduler`): `volcano`, `yunikorn`, `kai-scheduler`
/// or `scheduler-plugins`; absent or empty for none.
pub use crate::batch_scheduler::BATCH_SCHEDULER;

/// KubeRay v1.7's `RayClusterNetworkPolicy` gate (alpha, off by default): NetworkPolicies per RayCluster.
pub const RAY_CLUSTER_NETWORK_POLICY: &str = "RayClusterNetworkPolicy";

/// KubeRay v1.7's `RayClusterHistoryServer` gate (alpha, off by default): the history server's collector
/// sidecar in Ray Pods.
pub const RAY_CLUSTER_HISTORY_SERVER: &str = "RayClusterHistoryServer";

/// KubeRay v1.7's `RayClusterMTLS` gate (alpha, off by default): `spec.tlsOptions`, mutual TLS between a
/// cluster's Ray processes with certificates from cert-manager.
pub const RAY_CLUSTER_MTLS: &str = "RayClusterMTLS";

/// KubeRay v1.7's `SidecarSubmitterRestart` gate (alpha, off by default): a `SidecarMode` submitter container
/// restarts on failure (its own `restartPolicy: OnFailure`, Kubernetes 1.35's container restart rules) and
/// checks for an earlier submission first.
pub const SIDECAR_SUBMITTER_RESTART: &str = "SidecarSubmitterRestart";

/// KubeRay's alpha gate for the embedded (RocksDB) GCS fault tolerance backend.
pub const GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE: &str = "GCSFaultToleranceEmbeddedStorage";

/// KubeRay v1.7's gates that are on by default (its beta gates); every other gate is off by default.
const ON_BY_DEFAULT: &[&str] = &[
    "RayClusterStatusConditions",
    "RayJobDeletionPolicy",
    "RayMultiHostIndexing",
    "RayServiceIncrementalUpgrade",
];

/// Whether feature gate `gate` is on in the plugin's configuration ([`FEATURE_GATES`]); a gate the
/// configuration does not name (or names with something other than a boolean) has KubeRay v1.7's default.
pub fn feature_gate(config: &Map<String, Value>, gate: &str) -> bool {
    config
        .get(FEATURE_GATES)
        .and_then(|gates| gates.get(gate))
        .and_then(Value::as_bool)
        .unwrap_or_else(|| ON_BY_DEFAULT.contains(&gate))
}

/// The keys of KubeRay's environment toggles and Configuration, which `operator_env` reads.
pub use crate::operator_env::{KUBERAY_CONFIGURATION, KUBERAY_ENV};

/// Refuses a configuration whose `clusterDomain` is not a DNS subdomain, whose `featureGates` is not an
/// object of booleans, whose `kuberayEnv` is not an object of strings or whose `batchScheduler` is not a
/// scheduler KubeRay knows (with KubeRay's message); a configuration without them is fine (the plugins then
/// use `cluster.local`, KubeRay's defaults and no batch scheduler).
pub fn check(config: &Map<String, Value>) -> Result<(), String> {
    BatchScheduler::from_config(config).map_err(|e| e.to_string())?;
    match config.get(CLUSTER_DOMAIN) {
        None => {}
        Some(Value::String(domain)) if is_dns1123_subdomain(domain) => {}
        Some(other) => {
            return Err(format!(
                "{CLUSTER_DOMAIN} must be a DNS subdomain such as cluster.local, not {other}"
            ));
        }
    }
    match config.get(FEATURE_GATES) {
        None => {}
        Some(Value::Object(gates)) if gates.values().all(Value::is_boolean) => {}
        Some(other) => {
            return Err(format!(
                "{FEATURE_GATES} must map gate names to true or false, not {other}"
            ));
        }
    }
    match config.get(KUBERAY_ENV) {
        None => {}
        Some(Value::Object(set)) if set.values().all(Value::is_string) => {}
        Some(other) => {
            return Err(format!(
                "{KUBERAY_ENV} must map KubeRay's environment toggles to their values as text, not {other}"
            ));
        }
    }
    match config.get(KUBERAY_CONFIGURATION) {
        None => Ok(()),
        Some(value) => serde_json::from_value::<PodDefaults>(value.clone())
            .map(drop)
            .map_err(|e| {
                format!("{KUBERAY_CONFIGURATION} is not what KubeRay's Configuration adds to Pods: {e}")
            }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_cluster_domain_must_be_a_dns_subdomain() {
        assert_eq!(check(&config(json!({}))), Ok(()));
        assert_eq!(check(&config(json!({"clusterDomain": "corp.example"}))), Ok(()));
        for bad in [
            json!(5),
            json!(""),
            json!("Not A Domain"),
            json!(["cluster.local"]),
        ] {
            let error = check(&config(json!({ "clusterDomain": bad }))).unwrap_err();
            assert!(error.contains("clusterDomain must be a DNS subdomain"), "{error}");
        }
    }

    #[test]
    fn a_batch_scheduler_must_be_one_kuberay_knows() {
        for name in ["", "volcano", "yunikorn", "kai-scheduler", "scheduler-plugins"] {
            assert_eq!(
                check(&config(json!({ "batchScheduler": name }))),
                Ok(()),
                "{name}"
            );
        }
        assert_eq!(
            check(&config(json!({"batchScheduler": "kube-batch"}))),
            Err("the scheduler is not supported, name=kube-batch".to_string())
        );
        let error = check(&config(json!({"batchScheduler": 3}))).unwrap_err();
        assert!(
            error.contains("batchScheduler must be the name of a batch scheduler"),
            "{error}"
        );
    }

    #[test]
    fn a_gate_reads_as_configured_else_as_kuberays_default() {
        let empty = config(json!({}));
        assert!(!feature_gate(&empty, RAY_CLUSTER_NETWORK_POLICY));
        assert!(!feature_gate(&empty, RAY_CLUSTER_HISTORY_SERVER));
        assert!(feature_gate(&empty, "RayJobDeletionPolicy"));
        let set = config(json!({"featureGates": {
            "RayClusterNetworkPolicy": true,
            "RayJobDeletionPolicy": false,
        }}));
        assert!(feature_gate(&set, RAY_CLUSTER_NETWORK_POLICY));
        assert!(!feature_gate(&set, RAY_CLUSTER_HISTORY_SERVER));
        assert!(!feature_gate(&set, "RayJobDeletionPolicy"));
    }

    #[test]
    fn feature_gates_must_be_booleans() {
        assert_eq!(
            check(&config(json!({"featureGates": {"RayCronJob": true}}))),
            Ok(())
        );
        for bad in [json!({"RayCronJob": "true"}), json!(["RayCronJob"])] {
            let error = check(&config(json!({ "featureGates": bad }))).unwrap_err();
            assert!(error.contains("featureGates must map"), "{error}");
        }
    }
}
