//! KubeRay's operator environment toggles (`ENABLE_PROBES_INJECTION`, `RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV`,
//! ...), read from the operator's environment at start, so that the `env` of a KubeRay Deployment (or of
//! KubeRay's chart values) tunes this operator the same way. The names, defaults and what happens to each are
//! `kuberay_rules::operator_env`'s; here they are read, checked and handed to the plugins (configuration key
//! `kuberayEnv`). A value KubeRay would not understand, or one the plugins cannot honour, stops the operator
//! at start with the reason instead of being silently taken as the default.

use std::collections::BTreeMap;

use kuberay_rules::operator_env::{self, MOOT, Support, TOGGLES, Toggle};
use serde_json::Value;

/// The toggles set (to a non-empty value), normalized.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeRayEnv {
    set: BTreeMap<&'static str, String>,
}

/// A toggle that cannot be taken.
#[derive(Debug, thiserror::Error)]
#[error("KubeRay's environment variable {0}")]
pub struct EnvError(String);

impl KubeRayEnv {
    /// The toggles of this process's environment.
    pub fn from_process() -> Result<Self, EnvError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The toggles `lookup` finds (an empty value counts as unset, as for KubeRay).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let mut set = BTreeMap::new();
        for toggle in TOGGLES.iter().chain(&MOOT) {
            let Some(raw) = lookup(toggle.name).filter(|v| !v.is_empty()) else {
                continue;
            };
            let value = operator_env::parse(toggle, &raw).map_err(EnvError)?;
            check(toggle, &value)?;
            set.insert(toggle.name, value);
        }
        Ok(Self { set })
    }

    /// What the plugins get under `kuberayEnv`.
    pub fn to_config(&self) -> Value {
        self.set
            .iter()
            .map(|(name, value)| ((*name).to_string(), Value::from(value.as_str())))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// The toggles set, for the start-up log.
    pub fn set(&self) -> impl Iterator<Item = (&str, &str)> {
        self.set.iter().map(|(n, v)| (*n, v.as_str()))
    }
}

fn check(toggle: &Toggle, value: &str) -> Result<(), EnvError> {
    match toggle.support {
        Support::Honoured => Ok(()),
        Support::Moot(why) => {
            tracing::info!(
                toggle = toggle.name,
                value,
                "KubeRay's environment toggle has no effect here: {why}"
            );
            Ok(())
        }
        Support::DefaultOnly(_) if operator_env::is_default(toggle, value) => Ok(()),
        Support::DefaultOnly(why) => Err(EnvError(format!(
            "{}={value} is not supported: {why}",
            toggle.name
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pairs: &[(&str, &str)]) -> Result<KubeRayEnv, EnvError> {
        KubeRayEnv::from_lookup(|name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string())
        })
    }

    #[test]
    fn honoured_toggles_reach_the_plugins_normalized() {
        let env = from(&[
            ("ENABLE_PROBES_INJECTION", "False"),
            ("RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV", "60"),
            ("ENABLE_LOGIN_SHELL", ""),
            ("USE_INGRESS_ON_OPENSHIFT", "true"),
            ("UNRELATED", "x"),
        ])
        .unwrap();
        assert_eq!(
            env.to_config(),
            serde_json::json!({
                "ENABLE_PROBES_INJECTION": "false",
                "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "60",
                "USE_INGRESS_ON_OPENSHIFT": "true",
            })
        );
        assert_eq!(from(&[]).unwrap().to_config(), serde_json::json!({}));
    }

    #[test]
    fn a_value_kuberay_would_misread_or_a_behaviour_missing_here_refuses_to_start() {
        for (pairs, expected) in [
            (("ENABLE_PROBES_INJECTION", "no"), "must be true or false"),
            (
                ("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", "5m"),
                "whole number of seconds",
            ),
            (("ENABLE_RANDOM_POD_DELETE", "true"), "is not supported"),
            (
                ("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "TRUE"),
                "deletionStrategy",
            ),
            (("ENABLE_WEBHOOKS", "true"), "no webhooks"),
            (("ENABLE_GCS_FT_REDIS_CLEANUP", "false"), "Redis"),
        ] {
            let error = from(&[pairs]).unwrap_err().to_string();
            assert!(error.contains(pairs.0) && error.contains(expected), "{error}");
        }
        // The default of a toggle only its default can have is fine.
        assert!(
            from(&[
                ("ENABLE_WEBHOOKS", "false"),
                ("ENABLE_GCS_FT_REDIS_CLEANUP", "true")
            ])
            .is_ok()
        );
    }
}
