//! The effective grant of a plugin: what it asks for in its metadata intersected with its policy entry,
//! and the checks that refuse a plugin file at load time (no entry, a wrong pin, a name or kind it may not
//! take, a reload asking for more than the running version holds).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use kuberay_plugin_sdk::{Kind, PluginMetadata, Verb};

use super::file::{ContentRules, Policy, is_sensitive_reconciled_kind, verb_name};

/// What a plugin may do. Checked on every host call; anything not granted is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// The policy entry's name: the plugin's identity in logs and metrics.
    pub entry: String,
    verbs: BTreeMap<Kind, BTreeSet<Verb>>,
    /// Owned kinds (watched for changes).
    pub(crate) owns: BTreeSet<Kind>,
    /// Whether the plugin may send requests to Ray heads.
    pub ray_heads: bool,
    pub(crate) rules: Option<ContentRules>,
    /// What was asked for but not granted, for the load log.
    pub withheld: Vec<String>,
    /// Kinds the whole policy names: the only kinds metrics may carry as labels.
    labelled_kinds: Arc<BTreeSet<Kind>>,
    /// Kinds some plugin of the policy reconciles: an object controlled by one of them was written by a
    /// plugin (see `admission::provenance`).
    pub(crate) reconciled_kinds: Arc<BTreeSet<Kind>>,
}

/// Why a plugin file is not loaded. `reason` is one of a fixed set (a metric label).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LoadRefusal {
    /// The entry's name, or `unknown` for a file the policy does not list.
    pub entry: String,
    /// Why, one of a fixed set (a metric label).
    pub reason: &'static str,
    /// Why, for people.
    pub message: String,
}

fn secret_kind() -> Kind {
    Kind::new("", "v1", "Secret")
}

impl Grant {
    /// Whether any verb is granted on `kind`.
    pub(crate) fn covers(&self, kind: &Kind) -> bool {
        self.verbs.get(kind).is_some_and(|verbs| !verbs.is_empty())
    }

    pub(crate) fn allows(&self, kind: &Kind, verb: Verb) -> bool {
        self.verbs.get(kind).is_some_and(|verbs| verbs.contains(&verb))
    }

    /// `kind` as a metric label: itself if the policy names it, else `other`.
    pub(crate) fn kind_label(&self, kind: &Kind) -> String {
        if self.labelled_kinds.contains(kind) {
            kind.to_string()
        } else {
            "other".into()
        }
    }

    /// Granted kinds with the verbs on each, for logs and `inspect`.
    pub fn describe(&self) -> Vec<String> {
        self.verbs
            .iter()
            .map(|(kind, verbs)| {
                let verbs: Vec<&str> = verbs.iter().map(|v| verb_name(*v)).collect();
                format!("{kind}: {}", verbs.join(", "))
            })
            .collect()
    }

    /// What this grant holds that `running` does not, if anything.
    pub(crate) fn exceeds(&self, running: &Grant) -> Option<String> {
        for (kind, verbs) in &self.verbs {
            if let Some(verb) = verbs.iter().find(|v| !running.allows(kind, **v)) {
                return Some(format!("{} on {kind}", verb_name(*verb)));
            }
        }
        if let Some(kind) = self.owns.difference(&running.owns).next() {
            return Some(format!("owning {kind}"));
        }
        (self.ray_heads && !running.ray_heads).then(|| "reaching Ray heads".into())
    }
}

fn refusal(entry: &str, reason: &'static str, message: String) -> LoadRefusal {
    LoadRefusal {
        entry: entry.into(),
        reason,
        message,
    }
}

/// The grant of the plugin in the file `file` (digest `sha256`) that describes itself as `metadata`, or why
/// it may not run.
pub(crate) fn grant_for(
    policy: &Policy,
    file: &str,
    sha256: &str,
    metadata: &PluginMetadata,
) -> Result<Grant, LoadRefusal> {
    let Some(entry) = policy.entry_for_file(file) else {
        return Err(refusal(
            "unknown",
            "unknown-plugin",
            format!("the policy has no entry for the plugin file {file:?}"),
        ));
    };
    let name = entry.name.as_str();
    if is_sensitive_reconciled_kind(&metadata.reconciles) {
        return Err(refusal(
            name,
            "sensitive-kind",
            format!(
                "{} is a built-in kind; plugins may only reconcile custom resources",
                metadata.reconciles
            ),
        ));
    }
    if entry.sha256.as_deref().is_some_and(|pin| pin != sha256) {
        return Err(refusal(
            name,
            "digest-mismatch",
            format!("the file's sha256 {sha256} is not the one the policy pins"),
        ));
    }
    if metadata.name != entry.name {
        return Err(refusal(
            name,
            "name-mismatch",
            format!(
                "the plugin calls itself {:?}; the policy names it {name:?}",
                metadata.name
            ),
        ));
    }
    if metadata.reconciles != entry.reconciles {
        return Err(refusal(
            name,
            "kind-not-allowed",
            format!(
                "the plugin asks to reconcile {}; the policy allows {}",
                metadata.reconciles, entry.reconciles
            ),
        ));
    }
    let mut grant = Grant {
        entry: entry.name.clone(),
        ray_heads: metadata.uses_ray_head && entry.ray_heads,
        rules: Some(entry.rules.clone()),
        labelled_kinds: Arc::new(policy.entries().iter().flat_map(named_kinds).collect()),
        reconciled_kinds: Arc::new(policy.entries().iter().map(|e| e.reconciles.clone()).collect()),
        ..Grant::default()
    };
    if metadata.uses_ray_head && !entry.ray_heads {
        grant.withheld.push("reaching Ray heads".into());
    }
    for capability in &metadata.capabilities {
        let kind = &capability.kind;
        let secret_denied = *kind == secret_kind() && !entry.rules.secrets.any();
        let allowed = entry.verbs.get(kind);
        for verb in &capability.verbs {
            if !secret_denied && allowed.is_some_and(|a| a.contains(verb)) {
                grant.verbs.entry(kind.clone()).or_default().insert(*verb);
            } else {
                grant.withheld.push(format!("{} on {kind}", verb_name(*verb)));
            }
        }
    }
    for kind in &metadata.owns {
        if entry.owns.contains(kind) && grant.covers(kind) {
            grant.owns.insert(kind.clone());
        } else {
            grant.withheld.push(format!("owning {kind}"));
        }
    }
    Ok(grant)
}

fn named_kinds(entry: &super::file::Entry) -> Vec<Kind> {
    std::iter::once(entry.reconciles.clone())
        .chain(entry.owns.iter().cloned())
        .chain(entry.verbs.keys().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use kuberay_plugin_sdk::Capability;

    use super::*;

    const POLICY: &str = "plugins:\n\
        - name: p\n  file: p.wasm\n  reconciles: x.io/v1/P\n  owns: [v1/Pod, v1/Secret]\n  rayHeads: false\n  \
          verbs: {x.io/v1/P: [apply-status], v1/Pod: [get, create], v1/Secret: [get]}\n";

    fn metadata(name: &str, reconciles: Kind, capabilities: Vec<Capability>) -> PluginMetadata {
        PluginMetadata {
            name: name.into(),
            version: "1".into(),
            reconciles,
            owns: vec![Kind::new("", "v1", "Pod"), Kind::new("", "v1", "ConfigMap")],
            capabilities,
            finalizer: None,
            uses_ray_head: true,
        }
    }

    #[test]
    fn the_grant_is_the_intersection_of_the_request_and_the_entry() {
        let policy = Policy::parse(POLICY).unwrap();
        let pods = Kind::new("", "v1", "Pod");
        let asked = vec![
            Capability::new(pods.clone(), &[Verb::Get, Verb::Create, Verb::Delete]),
            Capability::new(Kind::new("", "v1", "ConfigMap"), &[Verb::Get]),
            Capability::new(secret_kind(), &[Verb::Get]),
        ];
        let grant = grant_for(
            &policy,
            "p.wasm",
            "",
            &metadata("p", Kind::new("x.io", "v1", "P"), asked),
        )
        .unwrap();
        assert!(grant.allows(&pods, Verb::Create));
        assert!(!grant.allows(&pods, Verb::Delete), "not in the entry");
        assert!(
            !grant.covers(&Kind::new("", "v1", "ConfigMap")),
            "not in the entry"
        );
        assert!(
            !grant.allows(&secret_kind(), Verb::Get),
            "the entry grants no Secret access"
        );
        assert!(
            !grant.allows(&Kind::new("x.io", "v1", "P"), Verb::ApplyStatus),
            "not asked for"
        );
        assert!(!grant.ray_heads);
        assert_eq!(grant.owns, [pods.clone()].into());
        assert_eq!(grant.entry, "p");
        assert_eq!(grant.kind_label(&pods), "v1/Pod");
        assert_eq!(grant.kind_label(&Kind::new("evil", "v1", "x\"y")), "other");
    }

    #[test]
    fn unknown_files_wrong_pins_names_and_kinds_are_refused() {
        let policy = Policy::parse(POLICY).unwrap();
        let p = Kind::new("x.io", "v1", "P");
        let reason = |file: &str, name: &str, kind: Kind| {
            grant_for(&policy, file, "", &metadata(name, kind, vec![]))
                .err()
                .map(|r| r.reason)
        };
        assert_eq!(reason("q.wasm", "p", p.clone()), Some("unknown-plugin"));
        assert_eq!(reason("p.wasm", "q", p.clone()), Some("name-mismatch"));
        assert_eq!(
            reason("p.wasm", "p", Kind::new("x.io", "v1", "Q")),
            Some("kind-not-allowed")
        );
        assert_eq!(reason("p.wasm", "p", secret_kind()), Some("sensitive-kind"));
        let pinned = Policy::parse(
            &POLICY.replace("  rayHeads", &format!("  sha256: {}\n  rayHeads", "a".repeat(64))),
        )
        .unwrap();
        let refused = grant_for(
            &pinned,
            "p.wasm",
            &"b".repeat(64),
            &metadata("p", p.clone(), vec![]),
        );
        assert_eq!(refused.err().map(|r| r.reason), Some("digest-mismatch"));
        assert!(grant_for(&pinned, "p.wasm", &"a".repeat(64), &metadata("p", p, vec![])).is_ok());
    }

    #[test]
    fn a_grant_that_holds_more_than_the_running_one_exceeds_it() {
        let policy = Policy::parse(POLICY).unwrap();
        let p = Kind::new("x.io", "v1", "P");
        let pods = Kind::new("", "v1", "Pod");
        let small = vec![Capability::new(pods.clone(), &[Verb::Get])];
        let big = vec![Capability::new(pods, &[Verb::Get, Verb::Create])];
        let running = grant_for(&policy, "p.wasm", "", &metadata("p", p.clone(), small)).unwrap();
        let update = grant_for(&policy, "p.wasm", "", &metadata("p", p, big)).unwrap();
        assert_eq!(update.exceeds(&running).as_deref(), Some("create on v1/Pod"));
        assert_eq!(running.exceeds(&update), None);
        assert_eq!(running.exceeds(&running), None);
    }
}
