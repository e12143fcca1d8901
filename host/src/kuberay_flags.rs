//! KubeRay's operator flags as this operator reads them, so that a Deployment written for KubeRay v1.7 runs it
//! unchanged: Go's address forms (`:8080`), KubeRay's feature gates with their names and defaults, and what a
//! flag we cannot honour says at start (never a silent default). The flags themselves are the binary's clap
//! arguments; what they mean beyond parsing lives here, tested without a cluster.

use std::{collections::BTreeMap, net::SocketAddr};

use kuberay_rayhead::parse_go_bool;
use kuberay_rules::batch_scheduler::BatchScheduler;
use serde_json::Value;

use crate::policy::Policy;

/// A flag value this operator does not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// Not of the flag's form.
    #[error("{flag}: {message}")]
    Malformed { flag: &'static str, message: String },
    /// A feature gate KubeRay v1.7 does not have.
    #[error("--feature-gates: unrecognized feature gate {0:?} (KubeRay v1.7's gates: {gates})", gates = gate_names())]
    UnknownGate(String),
    /// KubeRay's behaviour for this setting is not implemented here.
    #[error("{0}")]
    Unsupported(String),
}

/// A listen address in Go's forms, as KubeRay's `--metrics-addr` and `--health-probe-bind-address` take it:
/// `:8080` (every interface), `0.0.0.0:8080`, `127.0.0.1:8080`, `[::1]:8080`.
pub fn parse_bind_address(text: &str) -> Result<SocketAddr, String> {
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_string(),
    };
    full.parse()
        .map_err(|_| format!("{text:?} is not a listen address (HOST:PORT or :PORT, HOST an IP address)"))
}

/// What this operator does with a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Support {
    /// The behaviour is always on: turning the gate off is refused.
    AlwaysOn,
    /// Both states are honoured.
    Both,
    /// The behaviour is not implemented: turning the gate on is refused.
    Missing,
}

/// One of KubeRay v1.7's feature gates (`pkg/features`): its name, KubeRay's default and stage, ours.
struct Gate {
    name: &'static str,
    kuberay_default: bool,
    stage: &'static str,
    support: Support,
    /// Our default where it differs from KubeRay's.
    default: Option<bool>,
}

const fn gate(name: &'static str, kuberay_default: bool, stage: &'static str, support: Support) -> Gate {
    Gate {
        name,
        kuberay_default,
        stage,
        support,
        default: None,
    }
}

/// KubeRay v1.7's gates. `RayCronJob` is KubeRay's only gate with a different default here: the RayCronJob
/// plugin ships with the operator and serves RayCronJobs unless the gate is turned off.
const GATES: &[Gate] = &[
    gate("RayClusterStatusConditions", true, "beta", Support::AlwaysOn),
    gate("RayJobDeletionPolicy", true, "beta", Support::AlwaysOn),
    gate("RayMultiHostIndexing", true, "beta", Support::AlwaysOn),
    gate("RayServiceIncrementalUpgrade", true, "beta", Support::AlwaysOn),
    Gate {
        default: Some(true),
        ..gate("RayCronJob", false, "alpha", Support::Both)
    },
    gate("SidecarSubmitterRestart", false, "alpha", Support::Both),
    gate("RayClusterNetworkPolicy", false, "alpha", Support::Both),
    gate("GCSFaultToleranceEmbeddedStorage", false, "alpha", Support::Both),
    gate("RayClusterMTLS", false, "alpha", Support::Both),
    gate("RayClusterHistoryServer", false, "alpha", Support::Both),
    gate("KubernetesWAS", false, "alpha", Support::Missing),
];

fn gate_names() -> String {
    GATES.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
}

/// The state of every feature gate: the defaults, with what `--feature-gates` set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureGates {
    states: BTreeMap<&'static str, bool>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        Self {
            states: GATES
                .iter()
                .map(|g| (g.name, g.default.unwrap_or(g.kuberay_default)))
                .collect(),
        }
    }
}

impl FeatureGates {
    /// `--feature-gates` (`Name=true,Other=false`, as KubeRay takes it; empty for the defaults): an unknown
    /// gate, a value that is not a boolean, or a state whose behaviour is not implemented is an error.
    pub fn parse(text: &str) -> Result<Self, FlagError> {
        let mut gates = Self::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let malformed = |message: String| FlagError::Malformed {
                flag: "--feature-gates",
                message,
            };
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| malformed(format!("{pair:?} is not NAME=true|false")))?;
            let (name, value) = (name.trim(), value.trim());
            let gate = GATES
                .iter()
                .find(|g| g.name == name)
                .ok_or_else(|| FlagError::UnknownGate(name.to_string()))?;
            let enabled = parse_go_bool(value).map_err(|e| malformed(format!("{name}={value}: {e}")))?;
            check_support(gate, enabled)?;
            gates.states.insert(gate.name, enabled);
        }
        Ok(gates)
    }

    /// Whether `name` is on (`false` for a name that is not a gate).
    pub fn enabled(&self, name: &str) -> bool {
        self.states.get(name).copied().unwrap_or(false)
    }

    /// Every gate and its state, as plugins read it from their configuration (`featureGates`).
    pub fn to_config(&self) -> Value {
        self.states
            .iter()
            .map(|(name, on)| ((*name).to_string(), Value::Bool(*on)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// The built-in plugins a gate turns off: `raycronjob` while `RayCronJob` is off (KubeRay then runs no
    /// RayCronJob controller).
    pub fn disabled_plugins(&self) -> Vec<String> {
        if self.enabled("RayCronJob") {
            Vec::new()
        } else {
            vec!["raycronjob".to_string()]
        }
    }

    /// `policy` without the entries of [`FeatureGates::disabled_plugins`] it has (a custom policy may lack
    /// them), said in the log.
    pub fn narrow(&self, policy: Policy) -> Policy {
        let off = self.disabled_plugins();
        let before = policy.entries().len();
        let policy = policy.without_any(&off);
        if policy.entries().len() < before {
            tracing::info!(plugins = ?off, "not served: their feature gate is off");
        }
        policy
    }
}

fn check_support(gate: &Gate, enabled: bool) -> Result<(), FlagError> {
    let refused = match gate.support {
        Support::AlwaysOn if !enabled => "cannot be turned off: kuberay-wasm always has this behaviour",
        Support::Missing if enabled => "is not implemented by kuberay-wasm yet",
        _ => return Ok(()),
    };
    Err(FlagError::Unsupported(format!(
        "--feature-gates: {name}={enabled}: the {stage} gate {name} {refused}",
        name = gate.name,
        stage = gate.stage,
    )))
}

/// The batch scheduler KubeRay's settings choose (the flags `--batch-scheduler` and the deprecated
/// `--enable-batch-scheduler`, or the Configuration's `batchScheduler` and `enableBatchScheduler`), resolved as
/// KubeRay resolves them: the deprecated switch means Volcano, both at once is refused, and so is a name KubeRay
/// does not have (with KubeRay's start-up message); empty is none.
pub fn batch_scheduler(name: Option<&str>, enable: bool) -> Result<Option<BatchScheduler>, FlagError> {
    let name = name.unwrap_or_default();
    if enable && !name.is_empty() {
        return Err(FlagError::Unsupported(
            "both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are set. Please use \
             batch-scheduler only"
                .into(),
        ));
    }
    if enable {
        tracing::info!(
            "--enable-batch-scheduler is deprecated (as in KubeRay): it means --batch-scheduler=volcano"
        );
        return Ok(Some(BatchScheduler::Volcano));
    }
    BatchScheduler::parse(name)
        .map_err(|_| FlagError::Unsupported(format!("scheduler is not supported, name={name}")))
}

/// KubeRay flags whose behaviour is not implemented: each set one is a start-up error naming it.
#[derive(Debug, Clone, Default)]
pub struct UnsupportedFlags {
    /// `--log-file-path`.
    pub log_file_path: Option<String>,
}

impl UnsupportedFlags {
    /// An error for the first flag set whose behaviour is missing.
    pub fn check(&self) -> Result<(), FlagError> {
        if let Some(path) = self.log_file_path.as_deref().filter(|p| !p.is_empty()) {
            return Err(FlagError::Unsupported(format!(
                "--log-file-path {path}: kuberay-wasm logs only to stderr; collect the container's log instead"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_listen_addresses() {
        assert_eq!(parse_bind_address(":8080"), Ok("0.0.0.0:8080".parse().unwrap()));
        assert_eq!(
            parse_bind_address("127.0.0.1:9"),
            Ok("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(parse_bind_address("[::1]:9"), Ok("[::1]:9".parse().unwrap()));
        for bad in ["8080", ":http", "localhost:8080", ""] {
            assert!(parse_bind_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gates_default_as_kuberay_but_the_shipped_cron_plugin() {
        let gates = FeatureGates::parse("").unwrap();
        assert!(gates.enabled("RayClusterStatusConditions"));
        assert!(gates.enabled("RayServiceIncrementalUpgrade"));
        assert!(!gates.enabled("RayClusterMTLS"));
        assert!(gates.enabled("RayCronJob"));
        assert!(gates.disabled_plugins().is_empty());
        assert_eq!(gates.to_config()["RayClusterHistoryServer"], false);
        assert_eq!(gates.to_config().as_object().map(|o| o.len()), Some(GATES.len()));
    }

    #[test]
    fn gates_are_set_as_kuberay_writes_them() {
        let gates = FeatureGates::parse("RayCronJob=false, RayJobDeletionPolicy=true").unwrap();
        assert!(!gates.enabled("RayCronJob"));
        assert_eq!(gates.disabled_plugins(), ["raycronjob"]);
        let served = |policy: &Policy| policy.entries().iter().any(|e| e.name == "raycronjob");
        assert!(served(&Policy::builtin()));
        assert!(!served(&gates.narrow(Policy::builtin())));
        assert!(served(&FeatureGates::default().narrow(Policy::builtin())));
        assert!(FeatureGates::parse("RayCronJob=t").unwrap().enabled("RayCronJob"));
    }

    #[test]
    fn bad_gates_are_refused_with_the_reason() {
        let error = FeatureGates::parse("RayClusterNope=true").unwrap_err();
        assert_eq!(error, FlagError::UnknownGate("RayClusterNope".into()));
        assert!(error.to_string().contains("RayClusterMTLS"), "{error}");
        let error = FeatureGates::parse("RayCronJob").unwrap_err().to_string();
        assert!(error.contains("NAME=true|false"), "{error}");
        let error = FeatureGates::parse("RayCronJob=maybe").unwrap_err().to_string();
        assert!(error.contains("not a boolean"), "{error}");
        let error = FeatureGates::parse("KubernetesWAS=true").unwrap_err().to_string();
        assert!(error.contains("not implemented"), "{error}");
        assert!(FeatureGates::parse("RayClusterMTLS=true").is_ok());
        let error = FeatureGates::parse("RayClusterStatusConditions=false")
            .unwrap_err()
            .to_string();
        assert!(error.contains("cannot be turned off"), "{error}");
        assert!(FeatureGates::parse("RayClusterMTLS=false").is_ok());
    }

    #[test]
    fn the_network_policy_and_history_server_gates_turn_on_and_reach_the_plugins() {
        let gates = FeatureGates::parse("RayClusterNetworkPolicy=true,RayClusterHistoryServer=true").unwrap();
        assert!(gates.enabled("RayClusterNetworkPolicy"));
        assert!(gates.enabled("RayClusterHistoryServer"));
        assert_eq!(gates.to_config()["RayClusterNetworkPolicy"], true);
        assert_eq!(gates.to_config()["RayClusterHistoryServer"], true);
        assert!(gates.disabled_plugins().is_empty());
        let off = FeatureGates::parse("RayClusterNetworkPolicy=false").unwrap();
        assert_eq!(off.to_config()["RayClusterNetworkPolicy"], false);
    }

    #[test]
    fn unsupported_flags_are_named() {
        assert!(UnsupportedFlags::default().check().is_ok());
        let flags = UnsupportedFlags {
            log_file_path: Some("/var/log/op.log".into()),
        };
        let error = flags.check().unwrap_err().to_string();
        assert!(error.contains("--log-file-path /var/log/op.log"), "{error}");
        let empty = UnsupportedFlags {
            log_file_path: Some(String::new()),
        };
        assert!(empty.check().is_ok());
    }

    #[test]
    fn the_batch_scheduler_is_chosen_as_kuberay_chooses_it() {
        assert_eq!(batch_scheduler(None, false), Ok(None));
        assert_eq!(batch_scheduler(Some(""), false), Ok(None));
        for scheduler in BatchScheduler::ALL {
            assert_eq!(
                batch_scheduler(Some(scheduler.name()), false),
                Ok(Some(scheduler))
            );
        }
        assert_eq!(batch_scheduler(None, true), Ok(Some(BatchScheduler::Volcano)));
        assert_eq!(batch_scheduler(Some(""), true), Ok(Some(BatchScheduler::Volcano)));
        let both = batch_scheduler(Some("yunikorn"), true).unwrap_err().to_string();
        assert!(
            both.contains(
                "both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are set"
            ),
            "{both}"
        );
        let unknown = batch_scheduler(Some("slurm"), false).unwrap_err().to_string();
        assert_eq!(unknown, "scheduler is not supported, name=slurm");
    }
}
