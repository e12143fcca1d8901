//! KubeRay's Configuration file (`--config FILE`; `apiVersion: config.ray.io/v1alpha1`, `kind:
//! Configuration`), read as KubeRay reads it: when given, it replaces the operator flags it has fields for
//! (KubeRay ignores those flags then), with KubeRay's defaults for the fields it leaves out; what it adds to
//! Ray Pods (sidecars, default variables, labels and annotations) reaches the plugins under
//! `kuberayConfiguration`. An unknown field, or a setting whose behaviour is missing here (a log file,
//! deleting finished RayJobs), stops the operator at start with the reason.

use std::{collections::BTreeMap, net::SocketAddr, path::Path};

use k8s_openapi::api::core::v1::{Container, EnvVar};
use serde::Deserialize;
use serde_json::Value;

use crate::kuberay_flags::parse_bind_address;

/// The Configuration's API version and kind.
const API_VERSION: &str = "config.ray.io/v1alpha1";
const KIND: &str = "Configuration";

/// KubeRay's Configuration, its fields as KubeRay names them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Configuration {
    api_version: Option<String>,
    kind: Option<String>,
    metrics_addr: Option<String>,
    probe_addr: Option<String>,
    enable_leader_election: Option<bool>,
    leader_election_namespace: Option<String>,
    reconcile_concurrency: Option<u16>,
    watch_namespace: Option<String>,
    qps: Option<f64>,
    burst: Option<u32>,
    use_kubernetes_proxy: Option<bool>,
    #[expect(dead_code, reason = "accepted: KubeRay's families are always exported here")]
    enable_metrics: Option<bool>,
    #[expect(
        dead_code,
        reason = "accepted: KubeRay itself takes its log encoders from its flags"
    )]
    log_stdout_encoder: Option<String>,
    log_file: Option<String>,
    #[expect(
        dead_code,
        reason = "accepted: KubeRay itself takes its log encoders from its flags"
    )]
    log_file_encoder: Option<String>,
    batch_scheduler: Option<String>,
    enable_batch_scheduler: Option<bool>,
    delete_ray_job_after_job_finishes: Option<bool>,
    head_sidecar_containers: Option<Vec<Container>>,
    worker_sidecar_containers: Option<Vec<Container>>,
    default_container_envs: Option<Vec<EnvVar>>,
    default_pod_annotations: Option<BTreeMap<String, String>>,
    default_pod_labels: Option<BTreeMap<String, String>>,
}

/// A Configuration that cannot be taken.
#[derive(Debug, thiserror::Error)]
#[error("--config {path}: {message}")]
pub struct ConfigError {
    path: String,
    message: String,
}

/// The operator settings a Configuration decides, KubeRay's defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub metrics_addr: SocketAddr,
    pub probe_addr: SocketAddr,
    pub leader_election: bool,
    pub leader_election_namespace: Option<String>,
    pub reconcile_concurrency: u16,
    /// Empty: every namespace.
    pub watch_namespaces: Vec<String>,
    pub qps: f64,
    pub burst: u32,
    pub use_kubernetes_proxy: bool,
    /// `batchScheduler` (empty: none), checked with the flag's rules where the flags are.
    pub batch_scheduler: Option<String>,
    /// `enableBatchScheduler` (deprecated: Volcano).
    pub enable_batch_scheduler: bool,
    /// What it adds to Ray Pods, for the plugins (`kuberayConfiguration`).
    pub pod_defaults: Value,
}

impl Configuration {
    /// Reads and checks the file at `path`.
    pub fn read(path: &Path) -> Result<Settings, ConfigError> {
        let error = |message: String| ConfigError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let config: Self = serde_yaml::from_str(&text).map_err(|e| error(e.to_string()))?;
        config.settings().map_err(error)
    }

    /// The settings, or why the Configuration cannot be taken.
    pub fn settings(self) -> Result<Settings, String> {
        if self.api_version.as_deref().is_some_and(|v| v != API_VERSION)
            || self.kind.as_deref().is_some_and(|k| k != KIND)
        {
            return Err(format!("not a {API_VERSION} {KIND}"));
        }
        self.refuse_missing_behaviour()?;
        self.check_pod_defaults()?;
        let addr = |value: Option<String>, default: &str, field: &str| {
            parse_bind_address(value.as_deref().filter(|v| !v.is_empty()).unwrap_or(default))
                .map_err(|e| format!("{field}: {e}"))
        };
        let pod_defaults = serde_json::json!({
            "headSidecarContainers": self.head_sidecar_containers.unwrap_or_default(),
            "workerSidecarContainers": self.worker_sidecar_containers.unwrap_or_default(),
            "defaultContainerEnvs": self.default_container_envs.unwrap_or_default(),
            "defaultPodAnnotations": self.default_pod_annotations.unwrap_or_default(),
            "defaultPodLabels": self.default_pod_labels.unwrap_or_default(),
        });
        Ok(Settings {
            metrics_addr: addr(self.metrics_addr, ":8080", "metricsAddr")?,
            probe_addr: addr(self.probe_addr, ":8082", "probeAddr")?,
            leader_election: self.enable_leader_election.unwrap_or(true),
            leader_election_namespace: self.leader_election_namespace.filter(|n| !n.is_empty()),
            reconcile_concurrency: self.reconcile_concurrency.filter(|c| *c > 0).unwrap_or(1),
            watch_namespaces: self
                .watch_namespace
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect(),
            qps: self.qps.unwrap_or(100.0),
            burst: self.burst.unwrap_or(200),
            use_kubernetes_proxy: self.use_kubernetes_proxy.unwrap_or(false),
            batch_scheduler: self.batch_scheduler.filter(|s| !s.is_empty()),
            enable_batch_scheduler: self.enable_batch_scheduler.unwrap_or(false),
            pod_defaults,
        })
    }

    /// The parts of the sidecars and variables the API server would refuse in every Pod, refused once here.
    fn check_pod_defaults(&self) -> Result<(), String> {
        for (field, containers) in [
            ("headSidecarContainers", &self.head_sidecar_containers),
            ("workerSidecarContainers", &self.worker_sidecar_containers),
        ] {
            for container in containers.iter().flatten() {
                if !kuberay_plugin_sdk::syntax::is_dns1123_label(&container.name) {
                    return Err(format!(
                        "{field}: {:?} is not a container name (a DNS-1123 label)",
                        container.name
                    ));
                }
            }
        }
        if self
            .default_container_envs
            .iter()
            .flatten()
            .any(|var| var.name.is_empty())
        {
            return Err("defaultContainerEnvs: a variable needs a name".into());
        }
        Ok(())
    }

    fn refuse_missing_behaviour(&self) -> Result<(), String> {
        if self.log_file.as_deref().is_some_and(|f| !f.is_empty()) {
            return Err("logFile is not supported: logs go to stderr only".into());
        }
        if self.delete_ray_job_after_job_finishes == Some(true) {
            return Err(
                "deleteRayJobAfterJobFinishes is not supported: plugins do not delete the object they \
                 reconcile; use the RayJob's deletionStrategy"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(yaml: &str) -> Result<Settings, String> {
        serde_yaml::from_str::<Configuration>(yaml)
            .map_err(|e| e.to_string())?
            .settings()
    }

    #[test]
    fn an_empty_configuration_is_kuberays_defaults() {
        let s = settings("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n").unwrap();
        assert_eq!(s.metrics_addr.port(), 8080);
        assert_eq!(s.probe_addr.port(), 8082);
        assert!(s.leader_election && !s.use_kubernetes_proxy);
        assert_eq!((s.reconcile_concurrency, s.qps, s.burst), (1, 100.0, 200));
        assert!(s.watch_namespaces.is_empty());
    }

    #[test]
    fn its_fields_decide_and_what_it_adds_to_pods_reaches_the_plugins() {
        let s = settings(
            "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nmetricsAddr: 127.0.0.1:9090\n\
             enableLeaderElection: false\nreconcileConcurrency: 4\nwatchNamespace: a, b\nqps: 50\nburst: 60\n\
             useKubernetesProxy: true\nenableMetrics: true\n\
             headSidecarContainers: [{name: shipper, image: fluent-bit}]\n\
             defaultContainerEnvs: [{name: ORG, value: acme}]\ndefaultPodLabels: {team: platform}\n",
        )
        .unwrap();
        assert_eq!(s.metrics_addr, "127.0.0.1:9090".parse().unwrap());
        assert!(!s.leader_election && s.use_kubernetes_proxy);
        assert_eq!(s.watch_namespaces, ["a", "b"]);
        assert_eq!((s.reconcile_concurrency, s.qps, s.burst), (4, 50.0, 60));
        assert_eq!(s.pod_defaults["headSidecarContainers"][0]["name"], "shipper");
        assert_eq!(s.pod_defaults["defaultContainerEnvs"][0]["value"], "acme");
        assert_eq!(s.pod_defaults["defaultPodLabels"]["team"], "platform");
        let s = settings("batchScheduler: yunikorn\n").unwrap();
        assert_eq!(
            (s.batch_scheduler.as_deref(), s.enable_batch_scheduler),
            (Some("yunikorn"), false)
        );
        let s = settings("enableBatchScheduler: true\nbatchScheduler: \"\"\n").unwrap();
        assert_eq!((s.batch_scheduler, s.enable_batch_scheduler), (None, true));
    }

    #[test]
    fn unknown_fields_and_missing_behaviour_are_refused() {
        for (yaml, expected) in [
            ("metricAddr: :9090\n", "unknown field `metricAddr`"),
            ("kind: ConfigMap\n", "not a config.ray.io/v1alpha1 Configuration"),
            ("logFile: /var/log/ray.log\n", "logFile"),
            ("deleteRayJobAfterJobFinishes: true\n", "deletionStrategy"),
            ("metricsAddr: nowhere\n", "metricsAddr"),
            (
                "headSidecarContainers: [{image: fluent-bit}]\n",
                "headSidecarContainers: \"\" is not a container name",
            ),
            ("defaultContainerEnvs: [{value: x}]\n", "defaultContainerEnvs"),
        ] {
            let error = settings(yaml).unwrap_err();
            assert!(error.contains(expected), "{yaml}: {error}");
        }
    }
}
