//! What a plugin may do: the capabilities it asked for, minus what the operator's policy withholds. Checked
//! on every host call; anything not granted is refused.

use std::collections::{BTreeMap, BTreeSet};

use kuberay_plugin_sdk::{Capability, Kind, Verb};

/// Kinds whose contents are secret; granted only when the operator allows it for the plugin.
fn is_sensitive(kind: &Kind) -> bool {
    kind.group.is_empty() && kind.kind == "Secret"
}

/// The operator's policy: which plugins may read or write Secrets.
#[derive(Debug, Clone, Default)]
pub struct GrantPolicy {
    pub secrets_allowed_for: BTreeSet<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    verbs: BTreeMap<Kind, BTreeSet<Verb>>,
    /// What was asked for but withheld, for the load log.
    pub withheld: Vec<Kind>,
}

impl Grant {
    pub fn new(plugin: &str, requested: &[Capability], policy: &GrantPolicy) -> Self {
        let mut grant = Self::default();
        for capability in requested {
            if is_sensitive(&capability.kind) && !policy.secrets_allowed_for.contains(plugin) {
                grant.withheld.push(capability.kind.clone());
                continue;
            }
            grant
                .verbs
                .entry(capability.kind.clone())
                .or_default()
                .extend(capability.verbs.iter().copied());
        }
        grant
    }

    /// Whether any verb is granted on `kind`.
    pub fn covers(&self, kind: &Kind) -> bool {
        self.verbs.get(kind).is_some_and(|verbs| !verbs.is_empty())
    }

    pub fn allows(&self, kind: &Kind, verb: Verb) -> bool {
        self.verbs.get(kind).is_some_and(|verbs| verbs.contains(&verb))
    }

    /// Granted kinds with the verbs on each, for logs and `inspect`.
    pub fn describe(&self) -> Vec<String> {
        self.verbs
            .iter()
            .map(|(kind, verbs)| format!("{kind}: {verbs:?}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_need_the_policy_and_nothing_unrequested_is_granted() {
        let pods = Kind::new("", "v1", "Pod");
        let secrets = Kind::new("", "v1", "Secret");
        let requested = [
            Capability::new(pods.clone(), &[Verb::Get, Verb::Create]),
            Capability::new(secrets.clone(), &[Verb::Get]),
        ];
        let grant = Grant::new("p", &requested, &GrantPolicy::default());
        assert!(grant.allows(&pods, Verb::Create));
        assert!(!grant.allows(&pods, Verb::Delete));
        assert!(!grant.allows(&secrets, Verb::Get));
        assert_eq!(grant.withheld, vec![secrets.clone()]);
        assert!(!grant.allows(&Kind::new("", "v1", "ConfigMap"), Verb::Get));

        let policy = GrantPolicy {
            secrets_allowed_for: ["p".to_string()].into(),
        };
        assert!(Grant::new("p", &requested, &policy).allows(&secrets, Verb::Get));
        assert!(!Grant::new("q", &requested, &policy).allows(&secrets, Verb::Get));
    }
}
