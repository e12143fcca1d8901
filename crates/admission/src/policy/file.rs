//! The policy file (`--policy PATH`, else the built-in `host/deploy/policy.yaml`): parsed, checked and turned
//! into [`Policy`]. Any error is fatal at start-up: an operator must not run with a policy it misread.

use std::collections::{BTreeMap, BTreeSet};

use kuberay_core::{Kind, Verb};
use serde::Deserialize;

use crate::{
    budget::{CallBudget, RateBudget},
    names,
};

/// The policy shipped for this repository's plugins, used when `--policy` is not given. The file stays with
/// the operator (`host/deploy/`), where administrators look for it.
pub const BUILTIN: &str = include_str!("../../../../host/deploy/policy.yaml");

/// Why a policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("reading the policy file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the policy file is not valid YAML for a policy: {0}")]
    Syntax(String),
    #[error("the policy is invalid: {0}")]
    Invalid(String),
    /// An entry shares a name or a reconciled kind with another.
    #[error("{0}")]
    Clash(String),
}

/// A Pod Security Standards profile (and a namespace's `pod-security.kubernetes.io/enforce` level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// No check.
    Privileged,
    /// No privileged containers, host namespaces, hostPath, host ports or added capabilities.
    Baseline,
    /// Baseline, and non-root, no privilege escalation, capabilities dropped, a seccomp profile.
    Restricted,
}

impl std::str::FromStr for Profile {
    type Err = String;

    /// A profile by its name (`privileged`, `baseline`, `restricted`), as the enforce label writes it.
    fn from_str(text: &str) -> Result<Self, String> {
        Self::from_label(text).ok_or_else(|| {
            format!("{text:?} is not a Pod Security level (privileged, baseline or restricted)")
        })
    }
}

/// Which Secrets a plugin may touch, beyond none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretAccess {
    /// Secrets the reconciled object controls (owner reference with `controller: true` and its uid), or
    /// that an object it controls controls (a RayJob's RayCluster's token Secret).
    #[serde(default)]
    pub owned: bool,
    /// Secrets the reconciled object's spec names (`secretName`, `secretKeyRef`, `secretRef`, ...).
    #[serde(default)]
    pub named_in_spec: bool,
}

impl Profile {
    /// The profile a `pod-security.kubernetes.io/enforce` label names, if it names one.
    pub fn from_label(label: &str) -> Option<Self> {
        match label {
            "privileged" => Some(Self::Privileged),
            "baseline" => Some(Self::Baseline),
            "restricted" => Some(Self::Restricted),
            _ => None,
        }
    }

    /// Its name, as the label and the policy write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Privileged => "privileged",
            Self::Baseline => "baseline",
            Self::Restricted => "restricted",
        }
    }
}

/// Objects a plugin may refer to although the user's request neither names them nor controls them (a
/// shared CA bundle, a site-wide pull Secret): the administrator's grant, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamedReferences {
    #[serde(default)]
    pub secrets: BTreeSet<String>,
    #[serde(default)]
    pub config_maps: BTreeSet<String>,
    #[serde(default)]
    pub persistent_volume_claims: BTreeSet<String>,
    #[serde(default)]
    pub service_accounts: BTreeSet<String>,
}

/// One rule a Role written by a plugin may hold (RBAC's PolicyRule without resource names: a written rule
/// is covered when each of its groups, resources and verbs is listed here; `*` is never implied).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleRule {
    pub api_groups: BTreeSet<String>,
    pub resources: BTreeSet<String>,
    pub verbs: BTreeSet<String>,
}

impl SecretAccess {
    /// Whether any Secret at all may be touched.
    pub fn any(self) -> bool {
        self.owned || self.named_in_spec
    }
}

/// What a granted object may contain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentRules {
    /// What the plugin may set on its own: Pod Security settings the user's request does not ask for.
    pub pod_security: Profile,
    /// The level assumed for a namespace without a `pod-security.kubernetes.io/enforce` label; the user's
    /// own settings are bounded by the namespace's level. Kubernetes' own default is `privileged`.
    pub namespace_default: Profile,
    /// Capabilities containers may add beyond the profile's.
    pub extra_capabilities: BTreeSet<String>,
    /// Service types a plugin may create on its own (`spec.type`; absent is ClusterIP); others only where
    /// the user's request asks for them.
    pub service_types: BTreeSet<String>,
    /// Objects the plugin may refer to by name besides those the user's request names or the reconciled
    /// object controls (ServiceAccounts: besides `default` too).
    pub references: NamedReferences,
    /// What a Role the plugin writes may grant (none by default).
    pub role_rules: Vec<RoleRule>,
    /// Which Secrets the plugin may read.
    pub secrets: SecretAccess,
    /// Label keys a plugin may set with a label-only apply on an object controlled by an object the
    /// reconciled object controls (a RayService's `ray.io/serve` on its RayClusters' head Pods); none by
    /// default.
    pub grandchild_labels: BTreeSet<String>,
}

impl Default for ContentRules {
    fn default() -> Self {
        Self {
            pod_security: Profile::Baseline,
            namespace_default: Profile::Privileged,
            extra_capabilities: BTreeSet::new(),
            service_types: ["ClusterIP".to_string()].into(),
            references: NamedReferences::default(),
            role_rules: Vec::new(),
            secrets: SecretAccess::default(),
            grandchild_labels: BTreeSet::new(),
        }
    }
}

/// One plugin the administrator allows.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The administrator's name for it: the plugin must call itself this, and metrics use it.
    pub name: String,
    /// Its file name in the plugin directory; `None` for an entry a `ReconcilePlugin` resource defines (its
    /// component comes from a registry, see `crate::reconcileplugin`).
    pub file: Option<String>,
    /// Optional pin: the SHA-256 (hex) of the component file.
    pub sha256: Option<String>,
    pub reconciles: Kind,
    pub owns: BTreeSet<Kind>,
    pub verbs: BTreeMap<Kind, BTreeSet<Verb>>,
    pub ray_heads: bool,
    pub rules: ContentRules,
    /// The only finalizer the plugin may declare and set (none if absent).
    pub finalizer: Option<String>,
    /// What it may ask of the host, where the policy says (the operator's defaults elsewhere).
    pub budget: BudgetRules,
    /// Its configuration (`config:`), which the plugin reads through the WIT `config` interface.
    pub config: serde_json::Map<String, serde_json::Value>,
}

/// The administrator's policy: which plugins run and what each may do. The entries of the policy file, and
/// those of the `ReconcilePlugin` resources merged in while the operator runs ([`Policy::with_resource`]).
#[derive(Debug, Clone)]
pub struct Policy {
    entries: Vec<Entry>,
    /// The file's `defaults`, which resource-defined entries inherit too.
    defaults: ContentRules,
    budget: BudgetRules,
}

/// The fields of a policy entry that are not part of a `ReconcilePlugin`'s grant: it gives them elsewhere (its
/// name, its artifact, `spec.reconciles`, `spec.config`).
const IDENTITY_FIELDS: [&str; 5] = ["name", "file", "sha256", "reconciles", "config"];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    defaults: RulesFile,
    #[serde(default)]
    plugins: Vec<EntryFile>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RulesFile {
    pod_security: Option<Profile>,
    namespace_default: Option<Profile>,
    extra_capabilities: Option<Vec<String>>,
    service_types: Option<Vec<String>>,
    /// The same as `references.serviceAccounts` (the older spelling).
    service_accounts: Option<Vec<String>>,
    references: Option<NamedReferences>,
    role_rules: Option<Vec<RoleRule>>,
    secrets: Option<SecretAccess>,
    grandchild_labels: Option<Vec<String>>,
    /// Only in `defaults` (an entry's own is in [`EntryFile`]); [`rules`] does not read it.
    #[serde(default)]
    budget: BudgetRules,
}

/// `budget:` (in `defaults` and per entry): what a plugin may ask of the host, per call and across its calls.
/// A key that is absent comes from the defaults' `budget`, then from the operator's own defaults
/// ([`CallBudget::default`]), so there is one source of each default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetRules {
    host_calls: Option<u32>,
    writes: Option<u32>,
    events: Option<u32>,
    list_items: Option<usize>,
    write_bytes: Option<u64>,
    event_burst: Option<u32>,
    events_per_second: Option<u32>,
    write_bytes_burst: Option<u64>,
    write_bytes_per_second: Option<u64>,
}

impl BudgetRules {
    /// These rules where they say something, `base` elsewhere.
    fn over(self, base: Self) -> Self {
        Self {
            host_calls: self.host_calls.or(base.host_calls),
            writes: self.writes.or(base.writes),
            events: self.events.or(base.events),
            list_items: self.list_items.or(base.list_items),
            write_bytes: self.write_bytes.or(base.write_bytes),
            event_burst: self.event_burst.or(base.event_burst),
            events_per_second: self.events_per_second.or(base.events_per_second),
            write_bytes_burst: self.write_bytes_burst.or(base.write_bytes_burst),
            write_bytes_per_second: self.write_bytes_per_second.or(base.write_bytes_per_second),
        }
    }

    /// The budget these rules make of the operator's `defaults`.
    pub fn resolve(self, defaults: CallBudget) -> CallBudget {
        let rates = defaults.rates;
        CallBudget {
            host_calls: self.host_calls.unwrap_or(defaults.host_calls),
            writes: self.writes.unwrap_or(defaults.writes),
            events: self.events.unwrap_or(defaults.events),
            list_items: self.list_items.unwrap_or(defaults.list_items),
            write_bytes: self.write_bytes.unwrap_or(defaults.write_bytes),
            rates: RateBudget {
                event_burst: self.event_burst.unwrap_or(rates.event_burst),
                events_per_second: self.events_per_second.unwrap_or(rates.events_per_second),
                write_bytes_burst: self.write_bytes_burst.unwrap_or(rates.write_bytes_burst),
                write_bytes_per_second: self
                    .write_bytes_per_second
                    .unwrap_or(rates.write_bytes_per_second),
            },
        }
    }

    /// Refuses values outside the ranges the operator supports.
    fn validate(&self) -> Result<(), String> {
        const MIB: u64 = 1 << 20;
        let object = crate::budget::MAX_OBJECT_BYTES as u64;
        let ranges: [(&str, Option<u64>, u64, u64); 9] = [
            ("hostCalls", self.host_calls.map(u64::from), 1, 1_000_000),
            ("writes", self.writes.map(u64::from), 1, 100_000),
            ("events", self.events.map(u64::from), 0, 10_000),
            ("listItems", self.list_items.map(|n| n as u64), 1, 1_000_000),
            // One object of the largest size must fit in a call and in a burst.
            ("writeBytes", self.write_bytes, object, 1024 * MIB),
            ("eventBurst", self.event_burst.map(u64::from), 0, 100_000),
            (
                "eventsPerSecond",
                self.events_per_second.map(u64::from),
                0,
                10_000,
            ),
            ("writeBytesBurst", self.write_bytes_burst, object, 16 * 1024 * MIB),
            ("writeBytesPerSecond", self.write_bytes_per_second, 1, 1024 * MIB),
        ];
        for (key, value, min, max) in ranges {
            if let Some(value) = value.filter(|v| !(min..=max).contains(v)) {
                return Err(format!(
                    "budget.{key} is {value}; it must be between {min} and {max}"
                ));
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EntryFile {
    name: String,
    file: String,
    #[serde(default)]
    sha256: Option<String>,
    reconciles: String,
    #[serde(default)]
    owns: Vec<String>,
    #[serde(default)]
    verbs: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    ray_heads: bool,
    pod_security: Option<Profile>,
    namespace_default: Option<Profile>,
    extra_capabilities: Option<Vec<String>>,
    service_types: Option<Vec<String>>,
    service_accounts: Option<Vec<String>>,
    references: Option<NamedReferences>,
    role_rules: Option<Vec<RoleRule>>,
    secrets: Option<SecretAccess>,
    grandchild_labels: Option<Vec<String>>,
    #[serde(default)]
    finalizer: Option<String>,
    #[serde(default)]
    budget: BudgetRules,
    #[serde(default)]
    config: serde_json::Map<String, serde_json::Value>,
}

impl EntryFile {
    /// Its content rules, as a `defaults` block would give them (serde's `flatten` cannot be combined with
    /// `deny_unknown_fields`, which both keep).
    fn take_rules(&mut self) -> RulesFile {
        RulesFile {
            pod_security: self.pod_security.take(),
            namespace_default: self.namespace_default.take(),
            extra_capabilities: self.extra_capabilities.take(),
            service_types: self.service_types.take(),
            service_accounts: self.service_accounts.take(),
            references: self.references.take(),
            role_rules: self.role_rules.take(),
            secrets: self.secrets.take(),
            grandchild_labels: self.grandchild_labels.take(),
            budget: BudgetRules::default(),
        }
    }
}

const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

/// Whether a plugin may never reconcile `kind`: built-in Kubernetes kinds (the core group, `*.k8s.io`,
/// apps, batch, autoscaling, policy) would hand it every Secret, ServiceAccount, Role or workload of a
/// namespace as input. Plugins reconcile custom resources.
pub fn is_sensitive_reconciled_kind(kind: &Kind) -> bool {
    let group = kind.group.as_str();
    group.is_empty()
        || group == "k8s.io"
        || group.ends_with(".k8s.io")
        || ["apps", "batch", "autoscaling", "policy"].contains(&group)
}

/// Parses `group/version/Kind` or `version/Kind` (the core group), as kinds are printed.
pub fn parse_kind(text: &str) -> Result<Kind, PolicyError> {
    let invalid = || PolicyError::Invalid(format!("{text:?} is not a kind (group/version/Kind or v1/Kind)"));
    let (api_version, kind) = text.rsplit_once('/').ok_or_else(invalid)?;
    let kind = Kind::from_api_version(api_version, kind);
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    };
    if !ok(&kind.version) || !ok(&kind.kind) || (!kind.group.is_empty() && !ok(&kind.group)) {
        return Err(invalid());
    }
    Ok(kind)
}

/// Parses a verb as plugins' capabilities name them (`get`, `apply-status`, ...).
pub fn parse_verb(text: &str) -> Result<Verb, PolicyError> {
    Verb::ALL
        .into_iter()
        .find(|v| verb_name(*v) == text)
        .ok_or_else(|| PolicyError::Invalid(format!("unknown verb {text:?}")))
}

/// The name of a verb in policies and metrics.
pub fn verb_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Create => "create",
        Verb::Apply => "apply",
        Verb::ApplyStatus => "apply-status",
        Verb::Delete => "delete",
        Verb::Finalize => "finalize",
        Verb::RecordEvent => "record-event",
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn rules(defaults: &ContentRules, file: RulesFile) -> Result<ContentRules, PolicyError> {
    let set = |v: Option<Vec<String>>, d: &BTreeSet<String>| {
        v.map_or_else(|| d.clone(), |v| v.into_iter().collect())
    };
    let mut references = file.references.unwrap_or_else(|| defaults.references.clone());
    if let Some(accounts) = file.service_accounts {
        references.service_accounts.extend(accounts);
    }
    let rules = ContentRules {
        pod_security: file.pod_security.unwrap_or(defaults.pod_security),
        namespace_default: file.namespace_default.unwrap_or(defaults.namespace_default),
        extra_capabilities: set(file.extra_capabilities, &defaults.extra_capabilities),
        service_types: set(file.service_types, &defaults.service_types),
        references,
        role_rules: file.role_rules.unwrap_or_else(|| defaults.role_rules.clone()),
        secrets: file.secrets.unwrap_or(defaults.secrets),
        grandchild_labels: set(file.grandchild_labels, &defaults.grandchild_labels),
    };
    if let Some(Err(e)) = rules
        .grandchild_labels
        .iter()
        .map(|key| names::label(key, ""))
        .find(Result::is_err)
    {
        return Err(PolicyError::Invalid(format!("grandchildLabels: {e}")));
    }
    if let Some(bad) = rules
        .service_types
        .iter()
        .find(|t| !SERVICE_TYPES.contains(&t.as_str()))
    {
        return Err(PolicyError::Invalid(format!("unknown service type {bad:?}")));
    }
    Ok(rules)
}

/// Checks an entry's name, file name and pin, its finalizer and its budget; returns the pin, normalized.
fn checked_pin(e: &EntryFile) -> Result<Option<String>, String> {
    if !valid_name(&e.name) {
        return Err("the name must be 1-63 lowercase letters, digits or '-'".into());
    }
    if e.file.is_empty() || e.file.contains('/') || !e.file.ends_with(".wasm") {
        return Err(format!(
            "file {:?} must be a *.wasm file name in the plugin directory",
            e.file
        ));
    }
    let sha256 = e
        .sha256
        .as_deref()
        .map(|s| s.trim_start_matches("sha256:").to_ascii_lowercase());
    if sha256
        .as_ref()
        .is_some_and(|s| s.len() != 64 || !s.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Err("sha256 must be 64 hexadecimal digits".into());
    }
    if let Some(Err(bad)) = e.finalizer.as_deref().map(names::finalizer) {
        return Err(bad.to_string());
    }
    e.budget.validate()?;
    Ok(sha256)
}

fn entry(defaults: &ContentRules, budget: BudgetRules, mut e: EntryFile) -> Result<Entry, PolicyError> {
    let invalid = |m: String| Err(PolicyError::Invalid(format!("plugin {:?}: {m}", e.name)));
    let sha256 = match checked_pin(&e) {
        Ok(sha256) => sha256,
        Err(bad) => return invalid(bad),
    };
    let reconciles = parse_kind(&e.reconciles)?;
    if is_sensitive_reconciled_kind(&reconciles) {
        return invalid(format!(
            "{reconciles} is a built-in kind; plugins may only reconcile custom resources"
        ));
    }
    let owns = e.owns.iter().map(|k| parse_kind(k)).collect::<Result<_, _>>()?;
    let mut verbs = BTreeMap::new();
    for (kind, names) in &e.verbs {
        let names = names
            .iter()
            .map(|v| parse_verb(v))
            .collect::<Result<BTreeSet<_>, _>>()?;
        verbs.insert(parse_kind(kind)?, names);
    }
    let rules = rules(defaults, e.take_rules())?;
    Ok(Entry {
        name: e.name,
        file: Some(e.file),
        sha256,
        reconciles,
        owns,
        verbs,
        ray_heads: e.ray_heads,
        rules,
        finalizer: e.finalizer,
        budget: e.budget.over(budget),
        config: e.config,
    })
}

/// What two entries may not share, if they share it.
fn clash(a: &Entry, b: &Entry) -> Option<&'static str> {
    if a.name == b.name {
        Some("the same name")
    } else if a.file.is_some() && a.file == b.file {
        Some("the same file")
    } else if a.reconciles == b.reconciles {
        Some("the same reconciled kind")
    } else {
        None
    }
}

impl Policy {
    /// Parses and checks a policy.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let file: PolicyFile = serde_yaml::from_str(text).map_err(|e| PolicyError::Syntax(e.to_string()))?;
        let budget = file.defaults.budget;
        let defaults = rules(&ContentRules::default(), file.defaults)?;
        budget
            .validate()
            .map_err(|e| PolicyError::Invalid(format!("defaults: {e}")))?;
        let entries = file
            .plugins
            .into_iter()
            .map(|e| entry(&defaults, budget, e))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, a) in entries.iter().enumerate() {
            if let Some((b, what)) = entries[..i].iter().find_map(|b| clash(a, b).map(|w| (b, w))) {
                return Err(PolicyError::Invalid(format!(
                    "plugins {:?} and {:?} have {what}",
                    b.name, a.name
                )));
            }
        }
        Ok(Self {
            entries,
            defaults,
            budget,
        })
    }

    /// Reads and parses the policy at `path`.
    pub fn read(path: &std::path::Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// The built-in policy for this repository's plugins.
    pub fn builtin() -> Self {
        match Self::parse(BUILTIN) {
            Ok(policy) => policy,
            // The file is compiled in and checked by a unit test; this cannot happen in a tested build.
            Err(e) => panic!("the built-in policy is invalid: {e}"),
        }
    }

    /// The entry for the plugin file named `file`.
    pub fn entry_for_file(&self, file: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.file.as_deref() == Some(file))
    }

    /// The entry named `name`.
    pub fn entry_named(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// This policy with the entry of the `ReconcilePlugin` resource `name` (reconciling `reconciles`,
    /// granted `grant`: the keys of a policy file's entry but its identity) in place of the one it had. The
    /// entry inherits the file's `defaults`; a name or a kind another entry holds is refused.
    pub fn with_resource(
        &self,
        name: &str,
        reconciles: &str,
        grant: &serde_json::Map<String, serde_json::Value>,
        config: Option<&serde_json::Value>,
    ) -> Result<Self, PolicyError> {
        if let Some(key) = IDENTITY_FIELDS.iter().find(|k| grant.contains_key(**k)) {
            return Err(PolicyError::Invalid(format!(
                "grant.{key} is not part of a grant (the resource's name, spec.artifact and spec.reconciles say it)"
            )));
        }
        let mut fields = grant.clone();
        fields.insert("name".into(), name.into());
        fields.insert("reconciles".into(), reconciles.into());
        match config {
            None | Some(serde_json::Value::Null) => {}
            Some(config @ serde_json::Value::Object(_)) => {
                fields.insert("config".into(), config.clone());
            }
            Some(_) => return Err(PolicyError::Invalid("config must be an object".into())),
        }
        // The parser of the policy file's entries wants a file name; a resource's entry has none (below).
        fields.insert("file".into(), "resource.wasm".into());
        let parsed: EntryFile = serde_json::from_value(serde_json::Value::Object(fields))
            .map_err(|e| PolicyError::Syntax(format!("grant: {e}")))?;
        let mut added = entry(&self.defaults, self.budget, parsed)?;
        added.file = None;
        let mut policy = self.without_resource(name);
        if let Some((other, what)) = policy
            .entries
            .iter()
            .find_map(|e| clash(&added, e).map(|w| (e, w)))
        {
            let source = other.file.as_deref().map_or_else(
                || format!("the ReconcilePlugin {:?}", other.name),
                |file| format!("the policy file's plugin {:?} ({file})", other.name),
            );
            return Err(PolicyError::Clash(format!("{source} has {what}")));
        }
        policy.entries.push(added);
        Ok(policy)
    }

    /// This policy without the entries named `names` (`--disable-plugins`); an unknown name is an error.
    pub fn without(self, names: &[String]) -> Result<Self, PolicyError> {
        if let Some(unknown) = names.iter().find(|n| self.entry_named(n).is_none()) {
            return Err(PolicyError::Invalid(format!(
                "the policy has no plugin named {unknown:?}"
            )));
        }
        Ok(self.without_any(names))
    }

    /// This policy without the entries named `names` that it has (a plugin a feature gate turns off).
    pub fn without_any(mut self, names: &[String]) -> Self {
        self.entries.retain(|e| !names.contains(&e.name));
        self
    }

    /// This policy with `kinds` taken out of every entry's `owns` and `verbs`: the kinds of an integration
    /// the operator was not started with (a batch scheduler's PodGroups, a gated feature's objects), which it
    /// then neither watches nor needs the rights of; a plugin that writes one anyway is refused.
    pub fn without_kinds(mut self, kinds: &[Kind]) -> Self {
        for entry in &mut self.entries {
            entry.owns.retain(|k| !kinds.contains(k));
            entry.verbs.retain(|k, _| !kinds.contains(k));
        }
        self
    }

    /// This policy without the entry of the `ReconcilePlugin` resource `name` (a file's entry stays).
    pub fn without_resource(&self, name: &str) -> Self {
        let mut policy = self.clone();
        policy.entries.retain(|e| e.file.is_some() || e.name != name);
        policy
    }

    /// Every entry.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_policy_parses_and_names_our_plugins() {
        let policy = Policy::builtin();
        let raycluster = policy.entry_for_file("raycluster.wasm").unwrap();
        assert_eq!(raycluster.name, "raycluster");
        assert!(raycluster.rules.secrets.owned);
        assert!(policy.entry_for_file("rayjob.wasm").is_some());
        let raycronjob = policy.entry_for_file("raycronjob.wasm").unwrap();
        assert_eq!(raycronjob.name, "raycronjob");
        assert!(!raycronjob.rules.secrets.owned);
        assert!(policy.entry_for_file("chaos.wasm").is_none());
        // Each plugin's finalizer, as it declares it (KubeRay's names); none for RayCronJobs.
        use kuberay_crds::constants::finalizers;
        for (file, finalizer) in [
            ("raycluster.wasm", Some(finalizers::GCS_FT_REDIS_CLEANUP)),
            ("rayjob.wasm", Some(finalizers::RAY_JOB_STOP_JOB)),
            ("rayservice.wasm", Some(finalizers::RAY_SERVICE)),
            ("raycronjob.wasm", None),
        ] {
            let entry = policy.entry_for_file(file).unwrap();
            assert_eq!(entry.finalizer.as_deref(), finalizer, "{file}");
            assert_eq!(
                entry.budget,
                BudgetRules::default(),
                "{file}: the operator's defaults"
            );
        }
        let pod = Kind::new("", "v1", "Pod");
        assert!(
            policy
                .entries()
                .iter()
                .any(|e| e.owns.contains(&pod) || e.verbs.contains_key(&pod))
        );
    }

    #[test]
    fn kinds_taken_out_are_neither_owned_nor_granted() {
        let policy = Policy::parse(
            "plugins:\n- {name: a, file: a.wasm, reconciles: x.io/v1/A, owns: [v1/Pod, x.io/v1/B],\n   \
             verbs: {v1/Pod: [get], x.io/v1/B: [get, create]}}\n",
        )
        .unwrap();
        let b = Kind::new("x.io", "v1", "B");
        let narrowed = policy.without_kinds(std::slice::from_ref(&b));
        let entry = narrowed.entry_named("a").unwrap();
        assert!(!entry.owns.contains(&b) && !entry.verbs.contains_key(&b));
        let pod = Kind::new("", "v1", "Pod");
        assert!(entry.owns.contains(&pod) && entry.verbs.contains_key(&pod));
    }

    #[test]
    fn invalid_policies_are_refused_with_a_reason() {
        let base = "plugins:\n- {name: a, file: a.wasm, reconciles: x.io/v1/A}\n";
        assert!(Policy::parse(base).is_ok());
        for (text, needle) in [
            (
                "plugins: [{name: a, file: a.wasm, reconciles: v1/Secret}]",
                "built-in",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: rbac.authorization.k8s.io/v1/Role}]",
                "built-in",
            ),
            (
                "plugins: [{name: A, file: a.wasm, reconciles: x.io/v1/A}]",
                "name",
            ),
            (
                "plugins: [{name: a, file: ../a.wasm, reconciles: x.io/v1/A}]",
                "file",
            ),
            (
                "plugins: [{name: a, file: a.wasm, sha256: abc, reconciles: x.io/v1/A}]",
                "sha256",
            ),
            ("plugins: [{name: a, file: a.wasm, reconciles: A}]", "kind"),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, verbs: {v1/Pod: [steal]}}]",
                "verb",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, serviceTypes: [Magic]}]",
                "service type",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, grandchildLabels: [a/b/c]}]",
                "label key",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, podSecurity: lax}]",
                "YAML",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, surprise: 1}]",
                "YAML",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A}, {name: a, file: b.wasm, reconciles: x.io/v1/B}]",
                "same name",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, finalizer: \"a b\"}]",
                "invalid finalizer",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, budget: {writes: 0}}]",
                "budget.writes is 0",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, budget: {writeBytes: 1024}}]",
                "budget.writeBytes",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, budget: {writeBytesPerSecond: -1}}]",
                "YAML",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A, budget: {writesPerHour: 1}}]",
                "YAML",
            ),
            (
                "defaults: {budget: {hostCalls: 2000000}}\nplugins: []",
                "defaults: budget.hostCalls",
            ),
            (
                "plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A}, {name: b, file: b.wasm, reconciles: x.io/v1/A}]",
                "same reconciled kind",
            ),
        ] {
            let e = Policy::parse(text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(needle), "{text}: {e:?}");
        }
    }

    #[test]
    fn entries_inherit_the_defaults_unless_they_say_otherwise() {
        let policy = Policy::parse(
            "defaults: {podSecurity: restricted, serviceTypes: [ClusterIP]}\n\
             plugins:\n\
             - {name: a, file: a.wasm, reconciles: x.io/v1/A}\n\
             - {name: b, file: b.wasm, reconciles: x.io/v1/B, podSecurity: privileged, secrets: {owned: true}, grandchildLabels: [ray.io/serve]}\n",
        )
        .unwrap();
        let (a, b) = (&policy.entries()[0], &policy.entries()[1]);
        assert_eq!(a.rules.pod_security, Profile::Restricted);
        assert_eq!(a.rules.service_types, ["ClusterIP".to_string()].into());
        assert!(!a.rules.secrets.any());
        assert_eq!(b.rules.pod_security, Profile::Privileged);
        assert!(b.rules.secrets.owned && !b.rules.secrets.named_in_spec);
        assert!(a.rules.grandchild_labels.is_empty());
        assert_eq!(b.rules.grandchild_labels, ["ray.io/serve".to_string()].into());
    }

    fn grant(yaml: &str) -> serde_json::Map<String, serde_json::Value> {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn a_resource_entry_merges_with_the_file_inheriting_its_defaults_and_may_not_clash() {
        let file = Policy::parse(
            "defaults: {podSecurity: restricted, budget: {writes: 7}}\n\
             plugins: [{name: a, file: a.wasm, reconciles: x.io/v1/A}]\n",
        )
        .unwrap();
        let merged = file
            .with_resource(
                "b",
                "x.io/v1/B",
                &grant("{owns: [v1/ConfigMap], verbs: {v1/ConfigMap: [get, apply]}, budget: {events: 3}}"),
                Some(&serde_json::json!({"clusterDomain": "corp.example"})),
            )
            .unwrap();
        let b = merged.entry_named("b").unwrap();
        assert!(b.file.is_none(), "a resource's entry names no file");
        assert_eq!(b.rules.pod_security, Profile::Restricted, "the file's defaults");
        assert_eq!(b.budget.writes, Some(7));
        assert_eq!(b.budget.events, Some(3));
        assert_eq!(b.config["clusterDomain"], "corp.example");
        assert!(merged.entry_for_file("resource.wasm").is_none());
        // Replacing the resource's own entry is not a clash; dropping it leaves the file's.
        let replaced = merged
            .with_resource("b", "x.io/v1/C", &grant("{}"), None)
            .unwrap();
        assert_eq!(replaced.entries().len(), 2);
        assert_eq!(replaced.without_resource("b").entries().len(), 1);
        assert_eq!(
            replaced.without_resource("a").entries().len(),
            2,
            "a file's entry stays"
        );
        for (name, kind, grant_yaml, needle) in [
            ("a", "x.io/v1/Z", "{}", "the same name"),
            ("z", "x.io/v1/A", "{}", "the same reconciled kind"),
            ("z", "v1/Secret", "{}", "built-in"),
            ("z", "x.io/v1/Z", "{file: z.wasm}", "grant.file"),
            ("z", "x.io/v1/Z", "{config: {}}", "grant.config"),
            ("z", "x.io/v1/Z", "{surprise: 1}", "surprise"),
            ("z", "x.io/v1/Z", "{verbs: {v1/Pod: [steal]}}", "verb"),
        ] {
            let error = file
                .with_resource(name, kind, &grant(grant_yaml), None)
                .unwrap_err()
                .to_string();
            assert!(error.contains(needle), "{name} {kind} {grant_yaml}: {error}");
        }
        assert!(matches!(
            file.with_resource("a", "x.io/v1/Z", &grant("{}"), None),
            Err(PolicyError::Clash(_))
        ));
    }

    #[test]
    fn disabled_plugins_leave_the_policy_and_an_unknown_name_is_an_error() {
        let policy = Policy::builtin().without(&["raycluster".into()]).unwrap();
        assert!(policy.entry_named("raycluster").is_none());
        assert!(policy.entry_named("rayjob").is_some());
        assert!(Policy::builtin().without(&["nope".into()]).is_err());
    }
}
