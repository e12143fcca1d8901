//! KubeRay's operator environment toggles (facts from KubeRay v1.7: names, defaults, meaning), read once by
//! the host from its own environment and handed to the plugins in their configuration under
//! [`KUBERAY_ENV`], so that a Deployment's `env` that tuned KubeRay tunes these plugins the same
//! way. `CLUSTER_DOMAIN` is not here: it is the host's `--cluster-domain` (its environment variable), handed
//! over as `clusterDomain`.
//!
//! Each toggle is read strictly: a boolean is `true` or `false` (any case) and a number of seconds a
//! non-negative integer; KubeRay takes any other text as its default, the host refuses to start with it
//! instead. A toggle whose behaviour the plugins do not have refuses to start when set to anything but its
//! default.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar};
use serde_json::{Map, Value};

/// KubeRay's operator environment toggles the operator was started with (their key in a plugin's
/// configuration, as the host writes it): an object of their names and normalized values (text), only those
/// set.
pub const KUBERAY_ENV: &str = "kuberayEnv";

/// What KubeRay's Configuration file (`--config`) adds to Ray Pods: an object of its fields
/// `headSidecarContainers`, `workerSidecarContainers`, `defaultContainerEnvs`, `defaultPodAnnotations` and
/// `defaultPodLabels` ([`PodDefaults`]).
pub const KUBERAY_CONFIGURATION: &str = "kuberayConfiguration";

/// Workers get an init container that waits for the GCS (default true).
pub const ENABLE_INIT_CONTAINER_INJECTION: &str = "ENABLE_INIT_CONTAINER_INJECTION";
/// Ray containers get KubeRay's liveness and readiness probes (default true).
pub const ENABLE_PROBES_INJECTION: &str = "ENABLE_PROBES_INJECTION";
/// The head Service gets a cluster IP instead of being headless (default false).
pub const ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE: &str = "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE";
/// Container commands run in a login shell, `/bin/bash -lc` (default false).
pub const ENABLE_LOGIN_SHELL: &str = "ENABLE_LOGIN_SHELL";
/// The head Pod is named `<cluster>-head` instead of a generated name (default false).
pub const ENABLE_DETERMINISTIC_HEAD_POD_NAME: &str = "ENABLE_DETERMINISTIC_HEAD_POD_NAME";
/// Seconds between the periodic reconciles of a settled RayCluster (default 300).
pub const RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV: &str = "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV";
/// Seconds a RayJob's Ray job may be terminal before its deployment status follows (default 300).
pub const RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: &str =
    "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS";
/// Seconds a RayJob's status checks may keep failing before it fails (default 300).
pub const RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: &str = "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS";
/// RayServices upgrade by preparing a new cluster (default true).
pub const ENABLE_ZERO_DOWNTIME: &str = "ENABLE_ZERO_DOWNTIME";
/// Scale-down of an autoscaled cluster deletes random workers (default false).
pub const ENABLE_RANDOM_POD_DELETE: &str = "ENABLE_RANDOM_POD_DELETE";
/// Deleting a RayCluster with GCS fault tolerance runs the Redis cleanup Job (default true).
pub const ENABLE_GCS_FT_REDIS_CLEANUP: &str = "ENABLE_GCS_FT_REDIS_CLEANUP";
/// A finished RayJob with `shutdownAfterJobFinishes` deletes itself (default false).
pub const DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: &str = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES";
/// Ingress rather than OpenShift Routes on OpenShift (default false; Ingresses are all this operator makes).
pub const USE_INGRESS_ON_OPENSHIFT: &str = "USE_INGRESS_ON_OPENSHIFT";
/// KubeRay's validating webhooks (default false; this operator has none).
pub const ENABLE_WEBHOOKS: &str = "ENABLE_WEBHOOKS";

/// A toggle's default, which is also its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    Bool(bool),
    Seconds(i64),
}

/// What the operator does with a toggle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// The plugins behave as KubeRay does with any value.
    Honoured,
    /// Any value behaves as this operator always does; the reason is logged when it is set.
    Moot(&'static str),
    /// Only the default is possible; another value refuses to start, with this reason.
    DefaultOnly(&'static str),
}

/// One toggle.
#[derive(Debug, Clone, Copy)]
pub struct Toggle {
    pub name: &'static str,
    pub default: Default,
    pub support: Support,
}

const fn toggle(name: &'static str, default: Default, support: Support) -> Toggle {
    Toggle {
        name,
        default,
        support,
    }
}

/// Every toggle of KubeRay v1.7's operator.
pub const TOGGLES: [Toggle; 13] = [
    toggle(
        ENABLE_INIT_CONTAINER_INJECTION,
        Default::Bool(true),
        Support::Honoured,
    ),
    toggle(ENABLE_PROBES_INJECTION, Default::Bool(true), Support::Honoured),
    toggle(
        ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE,
        Default::Bool(false),
        Support::Honoured,
    ),
    toggle(ENABLE_LOGIN_SHELL, Default::Bool(false), Support::Honoured),
    toggle(
        ENABLE_DETERMINISTIC_HEAD_POD_NAME,
        Default::Bool(false),
        Support::Honoured,
    ),
    toggle(
        RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV,
        Default::Seconds(300),
        Support::Honoured,
    ),
    toggle(
        RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
        Default::Seconds(300),
        Support::Honoured,
    ),
    toggle(
        RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS,
        Default::Seconds(300),
        Support::Honoured,
    ),
    toggle(ENABLE_ZERO_DOWNTIME, Default::Bool(true), Support::Honoured),
    toggle(
        ENABLE_RANDOM_POD_DELETE,
        Default::Bool(false),
        Support::DefaultOnly("the RayCluster plugin always deletes the workers the autoscaler names"),
    ),
    toggle(
        ENABLE_GCS_FT_REDIS_CLEANUP,
        Default::Bool(true),
        Support::DefaultOnly(
            "the RayCluster plugin always cleans up a fault-tolerant cluster's Redis on deletion",
        ),
    ),
    toggle(
        DELETE_RAYJOB_CR_AFTER_JOB_FINISHES,
        Default::Bool(false),
        Support::DefaultOnly(
            "plugins do not delete the object they reconcile; use the RayJob's deletionStrategy",
        ),
    ),
    toggle(
        ENABLE_WEBHOOKS,
        Default::Bool(false),
        Support::DefaultOnly(
            "this operator has no webhooks; it validates in the reconcile, as KubeRay does without them",
        ),
    ),
];

/// `USE_INGRESS_ON_OPENSHIFT` is moot: the RayCluster plugin makes Ingresses on every distribution.
pub const MOOT: [Toggle; 1] = [toggle(
    USE_INGRESS_ON_OPENSHIFT,
    Default::Bool(false),
    Support::Moot("the RayCluster plugin makes Ingresses (never OpenShift Routes) on every distribution"),
)];

/// Reads `value` of `toggle` strictly: the normalized text (`true`, `false`, or the seconds), or why not.
pub fn parse(toggle: &Toggle, value: &str) -> Result<String, String> {
    match toggle.default {
        Default::Bool(_) => match value.to_ascii_lowercase().as_str() {
            v @ ("true" | "false") => Ok(v.to_string()),
            _ => Err(format!("{}={value:?}: must be true or false", toggle.name)),
        },
        Default::Seconds(_) => match value.trim().parse::<i64>() {
            Ok(seconds) if seconds >= 0 => Ok(seconds.to_string()),
            _ => Err(format!(
                "{}={value:?}: must be a whole number of seconds",
                toggle.name
            )),
        },
    }
}

/// Whether the normalized `value` is `toggle`'s default.
pub fn is_default(toggle: &Toggle, value: &str) -> bool {
    match toggle.default {
        Default::Bool(b) => value == b.to_string(),
        Default::Seconds(s) => value == s.to_string(),
    }
}

/// What KubeRay's Configuration file (`--config`) adds to every Ray Pod, as the plugins receive it under
/// [`KUBERAY_CONFIGURATION`] (KubeRay's field names).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodDefaults {
    /// Appended to the head Pod's containers.
    pub head_sidecar_containers: Vec<Container>,
    /// Appended to every worker Pod's containers.
    pub worker_sidecar_containers: Vec<Container>,
    /// Added to the Ray container's environment unless it sets the variable itself.
    pub default_container_envs: Vec<EnvVar>,
    /// Added to every Ray Pod unless its template sets the key.
    pub default_pod_annotations: BTreeMap<String, String>,
    pub default_pod_labels: BTreeMap<String, String>,
}

/// The toggles as the plugins apply them: the configuration's, KubeRay's defaults for the others; and what
/// KubeRay's Configuration file adds to Pods.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorEnv {
    pub init_container_injection: bool,
    pub probes_injection: bool,
    pub head_cluster_ip_service: bool,
    pub login_shell: bool,
    pub deterministic_head_pod_name: bool,
    pub raycluster_requeue_seconds: i64,
    pub rayjob_transition_grace_period_seconds: i64,
    pub rayjob_status_check_timeout_seconds: i64,
    pub zero_downtime: bool,
    pub pod_defaults: PodDefaults,
}

impl std::default::Default for OperatorEnv {
    fn default() -> Self {
        Self::from_config(&Map::new())
    }
}

impl OperatorEnv {
    /// The toggles in a plugin's configuration (`kuberayEnv`, as the host writes it).
    pub fn from_config(config: &Map<String, Value>) -> Self {
        let set = config.get(KUBERAY_ENV).and_then(Value::as_object);
        let text = |name: &str| set.and_then(|s| s.get(name)).and_then(Value::as_str);
        let flag = |name: &str, default: bool| match text(name).map(str::to_ascii_lowercase).as_deref() {
            Some("true") => true,
            Some("false") => false,
            _ => default,
        };
        let seconds = |name: &str, default: i64| {
            text(name)
                .and_then(|t| t.trim().parse::<i64>().ok())
                .filter(|s| *s >= 0)
                .unwrap_or(default)
        };
        Self {
            init_container_injection: flag(ENABLE_INIT_CONTAINER_INJECTION, true),
            probes_injection: flag(ENABLE_PROBES_INJECTION, true),
            head_cluster_ip_service: flag(ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE, false),
            login_shell: flag(ENABLE_LOGIN_SHELL, false),
            deterministic_head_pod_name: flag(ENABLE_DETERMINISTIC_HEAD_POD_NAME, false),
            raycluster_requeue_seconds: seconds(RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV, 300),
            rayjob_transition_grace_period_seconds: seconds(
                RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS,
                300,
            ),
            rayjob_status_check_timeout_seconds: seconds(RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS, 300),
            zero_downtime: flag(ENABLE_ZERO_DOWNTIME, true),
            // Checked by `crate::config::check` when the plugin loads; anything else reads as nothing.
            pod_defaults: config
                .get(KUBERAY_CONFIGURATION)
                .and_then(|c| serde_json::from_value(c.clone()).ok())
                .unwrap_or_default(),
        }
    }

    /// The container command of Ray's containers (KubeRay's `GetContainerCommand`): `/bin/bash -c --`, or
    /// `-lc` with a login shell; `extra` options go between (`e` for the RayJob submitter: `-ce`).
    pub fn shell_command(&self, extra: &str) -> Vec<String> {
        let login = if self.login_shell { "l" } else { "" };
        vec!["/bin/bash".into(), format!("-c{extra}{login}"), "--".into()]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_are_kuberays_and_honoured_toggles_match_the_table() {
        let env = OperatorEnv::default();
        for toggle in TOGGLES.iter().filter(|t| t.support == Support::Honoured) {
            let other = match toggle.default {
                Default::Bool(b) => (!b).to_string(),
                Default::Seconds(s) => (s + 7).to_string(),
            };
            let config = json!({ "kuberayEnv": { toggle.name: other } });
            let changed = OperatorEnv::from_config(config.as_object().unwrap());
            assert_ne!(changed, env, "{} changes nothing", toggle.name);
        }
        assert_eq!(env.shell_command(""), ["/bin/bash", "-c", "--"]);
        assert_eq!(env.shell_command("e"), ["/bin/bash", "-ce", "--"]);
    }

    #[test]
    fn values_are_read_as_kuberay_reads_them() {
        let config = json!({"kuberayEnv": {
            "ENABLE_LOGIN_SHELL": "TRUE",
            "ENABLE_PROBES_INJECTION": "False",
            "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "60",
        }});
        let env = OperatorEnv::from_config(config.as_object().unwrap());
        assert!(env.login_shell && !env.probes_injection);
        assert_eq!(env.raycluster_requeue_seconds, 60);
        assert_eq!(env.shell_command("e"), ["/bin/bash", "-cel", "--"]);
    }

    #[test]
    fn parse_is_strict() {
        let boolean = &TOGGLES[0];
        assert_eq!(parse(boolean, "FALSE"), Ok("false".into()));
        assert!(parse(boolean, "0").unwrap_err().contains("true or false"));
        let seconds = &TOGGLES[5];
        assert_eq!(parse(seconds, " 30"), Ok("30".into()));
        for bad in ["-1", "5m", ""] {
            assert!(parse(seconds, bad).unwrap_err().contains("whole number"), "{bad}");
        }
        assert!(is_default(seconds, "300") && !is_default(seconds, "30"));
    }
}
