//! The effective grant of a plugin: what it asks for in its metadata intersected with its policy entry,
//! and the checks that refuse a plugin file at load time (no entry, a wrong pin, a name, kind or finalizer
//! it may not take, a reload asking for more than the running version holds or for another finalizer).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use kuberay_core::{HostError, Kind, PluginMetadata, Verb};

use super::file::{ContentRules, Entry, Policy, is_sensitive_reconciled_kind, verb_name};
use crate::budget::CallBudget;

/// What a plugin may do. Checked on every host call; anything not granted is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// The policy entry's name: the plugin's identity in logs and metrics.
    pub entry: String,
    verbs: BTreeMap<Kind, BTreeSet<Verb>>,
    /// Owned kinds (watched for changes).
    pub owns: BTreeSet<Kind>,
    /// Whether the plugin may send requests to Ray heads.
    pub ray_heads: bool,
    pub rules: Option<ContentRules>,
    /// The finalizer the plugin may set on its objects, and whose presence makes the host call its
    /// `cleanup`: the one its entry names, if the plugin declares it.
    pub finalizer: Option<String>,
    /// What its calls may ask of the host: its entry's `budget`, the operator's defaults elsewhere.
    pub budget: CallBudget,
    /// What was asked for but not granted, for the load log.
    pub withheld: Vec<String>,
    /// Kinds the whole policy names: the only kinds metrics may carry as labels.
    labelled_kinds: Arc<BTreeSet<Kind>>,
    /// Kinds some plugin of the policy reconciles: an object controlled by one of them was written by a
    /// plugin (see `admission::provenance`).
    pub reconciled_kinds: Arc<BTreeSet<Kind>>,
}

/// The grant check of every host call on a kind: a refusal unless `grant` (of the plugin `plugin`) allows
/// `verb` on `kind`.
pub fn check_grant(grant: &Grant, plugin: &str, kind: &Kind, verb: Verb) -> Result<(), HostError> {
    if grant.allows(kind, verb) {
        return Ok(());
    }
    Err(HostError::Forbidden(format!(
        "plugin {plugin} is not granted {} on {kind}",
        verb_name(verb)
    )))
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
    pub fn covers(&self, kind: &Kind) -> bool {
        self.verbs.get(kind).is_some_and(|verbs| !verbs.is_empty())
    }

    pub fn allows(&self, kind: &Kind, verb: Verb) -> bool {
        self.verbs.get(kind).is_some_and(|verbs| verbs.contains(&verb))
    }

    /// `kind` as a metric label: itself if the policy names it, else `other`.
    pub fn kind_label(&self, kind: &Kind) -> String {
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
    pub fn exceeds(&self, running: &Grant) -> Option<String> {
        for (kind, verbs) in &self.verbs {
            if let Some(verb) = verbs.iter().find(|v| !running.allows(kind, **v)) {
                return Some(format!("{} on {kind}", verb_name(*verb)));
            }
        }
        if let Some(kind) = self.owns.difference(&running.owns).next() {
            return Some(format!("owning {kind}"));
        }
        // Another finalizer (or none where there was one) would strand the objects that carry the running
        // one: nothing would remove it.
        if self.finalizer != running.finalizer {
            return Some(format!(
                "the finalizer {} where it holds {}",
                self.finalizer.as_deref().unwrap_or("(none)"),
                running.finalizer.as_deref().unwrap_or("(none)")
            ));
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

/// The entry of the plugin file `file` (digest `sha256`), or why no plugin in it may run: checked before
/// the file is compiled, and again by [`grant_for_entry`].
pub fn entry_for<'p>(policy: &'p Policy, file: &str, sha256: &str) -> Result<&'p Entry, LoadRefusal> {
    let Some(entry) = policy.entry_for_file(file) else {
        return Err(refusal(
            "unknown",
            "unknown-plugin",
            format!("the policy has no entry for the plugin file {file:?}"),
        ));
    };
    if entry.sha256.as_deref().is_some_and(|pin| pin != sha256) {
        return Err(refusal(
            &entry.name,
            "digest-mismatch",
            format!("the file's sha256 {sha256} is not the one the policy pins"),
        ));
    }
    Ok(entry)
}

/// The grant of the plugin in the file `file` (digest `sha256`) that describes itself as `metadata`, or why
/// it may not run. Where its entry sets no budget, `defaults` (the operator's) apply.
#[cfg(test)]
pub fn grant_for(
    policy: &Policy,
    file: &str,
    sha256: &str,
    metadata: &PluginMetadata,
    defaults: CallBudget,
) -> Result<Grant, LoadRefusal> {
    grant_for_entry(policy, entry_for(policy, file, sha256)?, metadata, defaults)
}

/// The grant of the plugin of `entry` (one of `policy`'s) that describes itself as `metadata`, or why it
/// may not run.
pub fn grant_for_entry(
    policy: &Policy,
    entry: &Entry,
    metadata: &PluginMetadata,
    defaults: CallBudget,
) -> Result<Grant, LoadRefusal> {
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
    if metadata.finalizer.is_some() && metadata.finalizer != entry.finalizer {
        return Err(refusal(
            name,
            "finalizer-not-allowed",
            format!(
                "the plugin declares the finalizer {:?}; the policy allows {}",
                metadata.finalizer.as_deref().unwrap_or_default(),
                entry
                    .finalizer
                    .as_deref()
                    .map_or_else(|| "none".to_string(), |f| format!("{f:?}"))
            ),
        ));
    }
    let mut grant = Grant {
        entry: entry.name.clone(),
        ray_heads: metadata.uses_ray_head && entry.ray_heads,
        rules: Some(entry.rules.clone()),
        finalizer: metadata.finalizer.clone(),
        budget: entry.budget.resolve(defaults),
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

fn named_kinds(entry: &Entry) -> Vec<Kind> {
    std::iter::once(entry.reconciles.clone())
        .chain(entry.owns.iter().cloned())
        .chain(entry.verbs.keys().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use kuberay_core::Capability;

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
            CallBudget::default(),
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
            grant_for(
                &policy,
                file,
                "",
                &metadata(name, kind, vec![]),
                CallBudget::default(),
            )
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
            CallBudget::default(),
        );
        assert_eq!(refused.err().map(|r| r.reason), Some("digest-mismatch"));
        assert!(
            grant_for(
                &pinned,
                "p.wasm",
                &"a".repeat(64),
                &metadata("p", p, vec![]),
                CallBudget::default()
            )
            .is_ok()
        );
    }

    #[test]
    fn a_grant_that_holds_more_than_the_running_one_exceeds_it() {
        let policy = Policy::parse(POLICY).unwrap();
        let p = Kind::new("x.io", "v1", "P");
        let pods = Kind::new("", "v1", "Pod");
        let small = vec![Capability::new(pods.clone(), &[Verb::Get])];
        let big = vec![Capability::new(pods, &[Verb::Get, Verb::Create])];
        let running = grant_for(
            &policy,
            "p.wasm",
            "",
            &metadata("p", p.clone(), small),
            CallBudget::default(),
        )
        .unwrap();
        let update = grant_for(
            &policy,
            "p.wasm",
            "",
            &metadata("p", p, big),
            CallBudget::default(),
        )
        .unwrap();
        assert_eq!(update.exceeds(&running).as_deref(), Some("create on v1/Pod"));
        assert_eq!(running.exceeds(&update), None);
        assert_eq!(running.exceeds(&running), None);
    }

    fn with_finalizer(finalizer: Option<&str>) -> PluginMetadata {
        PluginMetadata {
            finalizer: finalizer.map(String::from),
            ..metadata("p", Kind::new("x.io", "v1", "P"), vec![])
        }
    }

    #[test]
    fn only_the_entrys_finalizer_may_be_declared_and_a_reload_may_not_change_it() {
        let grant = |policy: &Policy, finalizer| {
            grant_for(
                policy,
                "p.wasm",
                "",
                &with_finalizer(finalizer),
                CallBudget::default(),
            )
        };
        let none = Policy::parse(POLICY).unwrap();
        let refused = grant(&none, Some("x.io/p-finalizer")).unwrap_err();
        assert_eq!(refused.reason, "finalizer-not-allowed");
        assert!(
            refused.message.contains("x.io/p-finalizer"),
            "{}",
            refused.message
        );
        assert_eq!(grant(&none, None).unwrap().finalizer, None);

        let one = Policy::parse(&POLICY.replace("  rayHeads", "  finalizer: x.io/p-finalizer\n  rayHeads"))
            .unwrap();
        let granted = grant(&one, Some("x.io/p-finalizer")).unwrap();
        assert_eq!(granted.finalizer.as_deref(), Some("x.io/p-finalizer"));
        assert_eq!(
            grant(&one, Some("x.io/other")).unwrap_err().reason,
            "finalizer-not-allowed"
        );
        // A plugin may do without its entry's finalizer; it then has none.
        let without = grant(&one, None).unwrap();
        assert_eq!(without.finalizer, None);
        // Any change on reload is an escalation: a new one is more, and dropping one strands the objects
        // that carry it.
        assert!(
            granted
                .exceeds(&without)
                .is_some_and(|m| m.contains("x.io/p-finalizer"))
        );
        assert!(without.exceeds(&granted).is_some());
        assert_eq!(granted.exceeds(&granted), None);
    }

    #[test]
    fn the_budget_is_the_entrys_over_the_policy_defaults_over_the_operators() {
        let policy = Policy::parse(
            "defaults: {budget: {writes: 7, eventBurst: 3}}\n\
             plugins:\n\
             - {name: p, file: p.wasm, reconciles: x.io/v1/P, budget: {writes: 9, writeBytesPerSecond: 4096}}\n\
             - {name: q, file: q.wasm, reconciles: x.io/v1/Q}\n",
        )
        .unwrap();
        let operator = CallBudget {
            host_calls: 11,
            ..CallBudget::default()
        };
        let p = grant_for(&policy, "p.wasm", "", &with_finalizer(None), operator).unwrap();
        assert_eq!(p.budget.writes, 9);
        assert_eq!(p.budget.rates.write_bytes_per_second, 4096);
        assert_eq!(p.budget.rates.event_burst, 3);
        assert_eq!(p.budget.host_calls, 11);
        assert_eq!(p.budget.events, CallBudget::default().events);
        let q_metadata = metadata("q", Kind::new("x.io", "v1", "Q"), vec![]);
        let q = grant_for(&policy, "q.wasm", "", &q_metadata, operator).unwrap();
        assert_eq!(q.budget.writes, 7);
        assert_eq!(
            q.budget.rates.write_bytes_per_second,
            CallBudget::default().rates.write_bytes_per_second
        );
    }
}
