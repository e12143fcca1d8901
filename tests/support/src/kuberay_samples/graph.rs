//! The normalized object graph of one sample's namespace: what an operator made of the sample, in a form that
//! two operators (or two runs of one) can be compared in, and that diffs well in git.
//!
//! - **created**: every object of the [`KINDS`] in the namespace that the sample does not contain and that
//!   an operator made: its controller owner is a `ray.io` object, or it has no owner and a field manager other
//!   than the control plane's and the sample's. Objects the control plane makes from them (a Job's Pods,
//!   EndpointSlices) are left out.
//! - **applied**: the sample's own `ray.io` objects, with what the operator wrote on them.
//!
//! Each object becomes an [`Entry`]: kind, name, controller owner (`Kind/name`), its `ray.io/*` and
//! `app.kubernetes.io/*` labels, `ray.io/*` annotations (Pods and PodGroups also the batch schedulers'
//! [`SCHEDULER_LABELS`] and [`SCHEDULER_ANNOTATIONS`]), finalizers, a few kind-specific facts (`spec`)
//! and, for `ray.io` objects, the status fields that settle (`status`). Volatile values are left out
//! (uids, times, resourceVersions, IPs, node ports) or replaced:
//!
//! - the namespace's name by `{namespace}`, an object's uid by `{uid of <Kind> <name>}`;
//! - a generated name (`generateName` plus a random suffix) by `<generateName>*`;
//! - the random suffix of a RayCluster a RayJob or RayService names `<owner>-<5 characters>` (as an object
//!   or in the owner's status) by `*`, the minute hash of a RayJob a RayCronJob names `<owner>-<digits>` by
//!   `*`, and the random suffix of a multi-host worker replica's name (`<group>-<5 characters>`) by `*`;
//! - the values of [`VOLATILE_ANNOTATIONS`], and the head Pod's template hash of a SidecarMode RayJob (its
//!   template carries the random submission ID), by `*`;
//!
//! everywhere these names appear (other names, owners, label values, selectors). Equal entries are merged
//! into one with a `count`.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::AppliedObject;

/// The kinds whose objects are recorded: everything KubeRay's controllers create (their RBAC markers), plus
/// ConfigMaps, which KubeRay does not create, so that an operator that does is seen.
pub const KINDS: &[(&str, &str, &str, &str)] = &[
    // (group, version, kind, plural)
    ("ray.io", "v1", "RayCluster", "rayclusters"),
    ("ray.io", "v1", "RayJob", "rayjobs"),
    ("ray.io", "v1", "RayService", "rayservices"),
    ("ray.io", "v1", "RayCronJob", "raycronjobs"),
    ("", "v1", "Pod", "pods"),
    ("", "v1", "Service", "services"),
    ("", "v1", "ConfigMap", "configmaps"),
    ("", "v1", "Secret", "secrets"),
    ("", "v1", "ServiceAccount", "serviceaccounts"),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    ("batch", "v1", "Job", "jobs"),
    ("networking.k8s.io", "v1", "Ingress", "ingresses"),
    ("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies"),
    ("gateway.networking.k8s.io", "v1", "Gateway", "gateways"),
    ("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes"),
    // KubeRay's batch-scheduler integrations (`--batch-scheduler=volcano|scheduler-plugins`); both are `PodGroup`,
    // told apart by the `apiVersion` fact.
    ("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"),
    ("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups"),
    // The PKI of `tlsOptions` (KubeRay's RayClusterMTLS gate); the Secrets cert-manager issues are controlled by
    // their Certificates (the test environment's cert-manager sets that owner), so they are not recorded.
    ("cert-manager.io", "v1", "Issuer", "issuers"),
    ("cert-manager.io", "v1", "Certificate", "certificates"),
];

/// Labels of Pods and PodGroups recorded besides `ray.io/*` and `app.kubernetes.io/*`: what KubeRay's
/// batch-scheduler integrations write (a key ending in `/` is a prefix). Only Pods and PodGroups carry them in the
/// graph: a RayJob's labels also reach the RayCluster it creates, whatever the scheduler.
pub const SCHEDULER_LABELS: &[&str] = &[
    "volcano.sh/",
    "yunikorn.apache.org/",
    "scheduling.x-k8s.io/",
    "kai.scheduler/",
    // YuniKorn's Pod labels.
    "applicationId",
    "queue",
];

/// Annotations of Pods and PodGroups recorded besides `ray.io/*`, as [`SCHEDULER_LABELS`].
pub const SCHEDULER_ANNOTATIONS: &[&str] = &[
    "scheduling.k8s.io/group-name",
    "volcano.sh/",
    "yunikorn.apache.org/",
];

/// The kinds that carry [`SCHEDULER_LABELS`] and [`SCHEDULER_ANNOTATIONS`] in the graph.
const SCHEDULED_KINDS: &[&str] = &["Pod", "PodGroup"];

fn matches_key(keys: &[&str], key: &str) -> bool {
    keys.iter().any(|k| {
        if k.ends_with('/') {
            key.starts_with(k)
        } else {
            key == *k
        }
    })
}

/// Field managers of the control plane (and the test environment's kubelet): an unowned object only they
/// wrote (the `default` ServiceAccount, the `kube-root-ca.crt` ConfigMap) is not an operator's.
const SYSTEM_MANAGERS: &[&str] = &[
    "kube-controller-manager",
    "kube-apiserver",
    "kube-scheduler",
    "kuberay-testenv",
    "testenv-kubelet",
    super::APPLY_MANAGER,
];

const RAY_KINDS: &[&str] = &["RayCluster", "RayJob", "RayService", "RayCronJob"];

/// `ray.io/*` annotations whose values change from run to run, recorded as `*`: the time of a RayCronJob's
/// tick.
pub const VOLATILE_ANNOTATIONS: &[&str] = &["ray.io/cronjob-scheduled-timestamp"];

/// The container a SidecarMode RayJob adds to its head Pod: its command carries the job's random submission
/// ID, so the head Pod's `ray.io/upgrade-strategy-recreate-hash` (a hash of the template) changes from run
/// to run too and is recorded as `*`.
const SIDECAR_SUBMITTER: &str = "ray-job-submitter";
const RECREATE_HASH: &str = "ray.io/upgrade-strategy-recreate-hash";

/// The API resources of [`KINDS`].
pub fn resources() -> Vec<ApiResource> {
    KINDS
        .iter()
        .map(|(group, version, kind, plural)| ApiResource {
            group: (*group).into(),
            version: (*version).into(),
            api_version: if group.is_empty() {
                (*version).into()
            } else {
                format!("{group}/{version}")
            },
            kind: (*kind).into(),
            plural: (*plural).into(),
        })
        .collect()
}

/// The graph of one sample's namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    /// The sample's path under `tests/fixtures/kuberay-samples`.
    pub sample: String,
    /// The sample's own `ray.io` objects as the operator left them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<Entry>,
    /// The objects the operator created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<Entry>,
}

/// One object (or `count` equal ones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: String,
    pub name: String,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: usize,
    /// The controller owner, `Kind/name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `ray.io/*` and `app.kubernetes.io/*` labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `ray.io/*` annotations (hashes of specs, versions, markers; see [`VOLATILE_ANNOTATIONS`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// Being deleted (a `deletionTimestamp`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub terminating: bool,
    /// Kind-specific facts (see [`spec_facts`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spec: BTreeMap<String, Value>,
    /// The status fields that settle, for `ray.io` objects (see [`status_facts`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub status: BTreeMap<String, Value>,
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Entry {
    /// `Kind name`, for messages.
    pub fn key(&self) -> String {
        format!("{} {}", self.kind, self.name)
    }

    /// The entry as JSON with `count` left out, keys sorted: what sorts and merges entries.
    fn canonical_without_count(&self) -> String {
        let mut copy = self.clone();
        copy.count = 1;
        canonical(&serde_json::to_value(&copy).unwrap_or(Value::Null))
    }
}

/// JSON text with every object's keys sorted, whatever the map type of `serde_json`.
pub fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, String> = map.iter().map(|(k, v)| (k, canonical(v))).collect();
            let inner: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// Replaces volatile names in strings.
#[derive(Debug, Default)]
struct Names {
    /// (actual, normalized), longest actual first when used.
    map: Vec<(String, String)>,
}

impl Names {
    fn add(&mut self, actual: &str, normalized: String) {
        if !actual.is_empty() && actual != normalized {
            self.map.push((actual.to_string(), normalized));
            self.map
                .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        }
    }

    fn norm(&self, s: &str) -> String {
        // One pass, longest match first at each position, so that a replacement is never replaced again.
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        'outer: while i < s.len() {
            for (actual, normalized) in &self.map {
                if s[i..].starts_with(actual.as_str()) {
                    out.push_str(normalized);
                    i += actual.len();
                    continue 'outer;
                }
            }
            let c = s[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
        out
    }

    fn norm_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.norm(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.norm_value(v)),
            Value::Object(map) => {
                let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
                for (k, mut v) in entries {
                    self.norm_value(&mut v);
                    map.insert(self.norm(&k), v);
                }
            }
            _ => {}
        }
    }
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

fn kind_of(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or_default()
}

fn name_of(object: &Value) -> &str {
    str_at(object, "/metadata/name").unwrap_or_default()
}

/// The controller owner reference, if any.
fn controller_owner(object: &Value) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|o| o["controller"] == true)
}

fn is_ray_api(api_version: &str) -> bool {
    api_version.starts_with("ray.io/")
}

fn is_ray_owner(owner: &Value) -> bool {
    owner["apiVersion"].as_str().is_some_and(is_ray_api)
        && owner["kind"].as_str().is_some_and(|k| RAY_KINDS.contains(&k))
}

/// Whether an operator (rather than the sample or the control plane) made `object`: its controller owner is a
/// `ray.io` object, or it has no controller owner and a `ray.io` owner (scheduler-plugins' PodGroup, whose
/// owner reference KubeRay does not mark as the controller), or no owner and a field manager that is not the
/// control plane's or the sample's.
fn operator_made(object: &Value) -> bool {
    if let Some(owner) = controller_owner(object) {
        return is_ray_owner(owner);
    }
    let owners = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if !owners.is_empty() {
        return owners.iter().any(is_ray_owner);
    }
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f["manager"].as_str())
        .any(|m| !SYSTEM_MANAGERS.contains(&m))
}

/// Whether `suffix` looks like the random part of a name KubeRay generates (`rand.String(5)`-like).
fn random_suffix(suffix: &str) -> bool {
    suffix.len() == 5
        && suffix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// The graph of `sample` from the `objects` (of [`KINDS`]) of its namespace.
pub fn normalize(
    sample: &str,
    namespace: &str,
    applied: &BTreeSet<AppliedObject>,
    objects: &[Value],
) -> Graph {
    let is_applied = |o: &Value| {
        applied
            .iter()
            .any(|a| a.kind == kind_of(o) && a.name == name_of(o))
    };
    let own: Vec<&Value> = objects
        .iter()
        .filter(|o| is_applied(o) && o["apiVersion"].as_str().is_some_and(is_ray_api))
        .collect();
    let created: Vec<&Value> = objects
        .iter()
        .filter(|o| !is_applied(o) && operator_made(o))
        .collect();

    let mut names = Names::default();
    names.add(namespace, "{namespace}".into());
    for a in applied {
        if let Some(prefix) = &a.generate_name {
            names.add(&a.name, format!("{prefix}*"));
        }
    }
    // RayJobs a RayCronJob made, then RayClusters a RayJob or RayService made (their owners may be the former).
    for (kind, owner_kinds, digits) in [
        ("RayJob", &["RayCronJob"][..], true),
        ("RayCluster", &["RayJob", "RayService"][..], false),
    ] {
        for o in created.iter().filter(|o| kind_of(o) == kind) {
            let Some(owner) = controller_owner(o) else {
                continue;
            };
            if !owner["kind"].as_str().is_some_and(|k| owner_kinds.contains(&k)) {
                continue;
            }
            let owner_name = owner["name"].as_str().unwrap_or_default();
            let Some(suffix) = name_of(o)
                .strip_prefix(owner_name)
                .and_then(|s| s.strip_prefix('-'))
            else {
                continue;
            };
            let volatile = if digits {
                !suffix.is_empty() && suffix.chars().all(|c| c.is_ascii_digit())
            } else {
                random_suffix(suffix)
            };
            if volatile {
                let normalized = format!("{}-*", names.norm(owner_name));
                names.add(name_of(o), normalized);
            }
        }
    }
    // The RayClusters RayJobs and RayServices name in their status, which may be gone already (a RayJob's
    // cluster deleted after the job) while other objects still name them (the RayJob's head Service).
    for o in own.iter().chain(&created) {
        if !matches!(kind_of(o), "RayJob" | "RayService") {
            continue;
        }
        for pointer in [
            "/status/rayClusterName",
            "/status/activeServiceStatus/rayClusterName",
            "/status/pendingServiceStatus/rayClusterName",
        ] {
            let Some(cluster) = str_at(o, pointer) else {
                continue;
            };
            if cluster
                .strip_prefix(name_of(o))
                .and_then(|s| s.strip_prefix('-'))
                .is_some_and(random_suffix)
            {
                let normalized = format!("{}-*", names.norm(name_of(o)));
                names.add(cluster, normalized);
            }
        }
    }
    // A multi-host worker group's replica name, `<group>-<random>` (the replica index label stays).
    for o in created.iter().filter(|o| kind_of(o) == "Pod") {
        let (Some(group), Some(replica)) = (
            str_at(o, "/metadata/labels/ray.io~1group"),
            str_at(o, "/metadata/labels/ray.io~1worker-group-replica-name"),
        ) else {
            continue;
        };
        if replica
            .strip_prefix(group)
            .and_then(|s| s.strip_prefix('-'))
            .is_some_and(random_suffix)
        {
            names.add(replica, format!("{group}-*"));
        }
    }
    for o in &created {
        if let Some(prefix) = str_at(o, "/metadata/generateName")
            && name_of(o).starts_with(prefix)
            && !prefix.is_empty()
        {
            let normalized = format!("{}*", names.norm(prefix));
            names.add(name_of(o), normalized);
        }
    }

    // A uid in a value (KubeRay's default `ray.io/external-storage-namespace` is the RayCluster's uid).
    for o in objects {
        if let Some(uid) = str_at(o, "/metadata/uid") {
            let whose = format!("{{uid of {} {}}}", kind_of(o), names.norm(name_of(o)));
            names.add(uid, whose);
        }
    }

    let entries = |objects: &[&Value]| merge(objects.iter().map(|o| entry(o, &names)).collect());
    Graph {
        sample: sample.to_string(),
        applied: entries(&own),
        created: entries(&created),
    }
}

/// Sorts entries and merges equal ones into one with a count.
fn merge(mut entries: Vec<Entry>) -> Vec<Entry> {
    let mut keyed: Vec<(String, Entry)> = entries
        .drain(..)
        .map(|e| (e.canonical_without_count(), e))
        .collect();
    keyed.sort_by(|a, b| {
        (a.1.kind.as_str(), a.1.name.as_str(), a.0.as_str()).cmp(&(
            b.1.kind.as_str(),
            b.1.name.as_str(),
            b.0.as_str(),
        ))
    });
    let mut out: Vec<(String, Entry)> = Vec::new();
    for (key, entry) in keyed {
        match out.last_mut() {
            Some((last, e)) if *last == key => e.count += entry.count,
            _ => out.push((key, entry)),
        }
    }
    out.into_iter().map(|(_, e)| e).collect()
}

fn entry(object: &Value, names: &Names) -> Entry {
    let kind = kind_of(object).to_string();
    let scheduled = SCHEDULED_KINDS.contains(&kind.as_str());
    let labels = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            k.starts_with("ray.io/")
                || k.starts_with("app.kubernetes.io/")
                || (scheduled && matches_key(SCHEDULER_LABELS, k))
        })
        .map(|(k, v)| (k.clone(), names.norm(v.as_str().unwrap_or_default())))
        .collect();
    let annotations = object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("ray.io/") || (scheduled && matches_key(SCHEDULER_ANNOTATIONS, k)))
        .map(|(k, v)| {
            let sidecar_hash = k == RECREATE_HASH
                && object
                    .pointer("/spec/containers")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| cs.iter().any(|c| c["name"] == SIDECAR_SUBMITTER));
            let value = if VOLATILE_ANNOTATIONS.contains(&k.as_str()) || sidecar_hash {
                "*".to_string()
            } else {
                names.norm(v.as_str().unwrap_or_default())
            };
            (k.clone(), value)
        })
        .collect();
    let mut finalizers: Vec<String> = object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    finalizers.sort();
    let owner = controller_owner(object).map(|o| {
        format!(
            "{}/{}",
            o["kind"].as_str().unwrap_or_default(),
            names.norm(o["name"].as_str().unwrap_or_default())
        )
    });
    let mut spec = spec_facts(&kind, object);
    let mut status = status_facts(&kind, object);
    for value in spec.values_mut().chain(status.values_mut()) {
        names.norm_value(value);
    }
    Entry {
        name: names.norm(name_of(object)),
        kind,
        count: 1,
        owner,
        labels,
        annotations,
        finalizers,
        terminating: object.pointer("/metadata/deletionTimestamp").is_some(),
        spec: spec.into_iter().filter(|(_, v)| !is_empty(v)).collect(),
        status: status.into_iter().filter(|(_, v)| !is_empty(v)).collect(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn strings(value: Option<&Value>) -> Vec<Value> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(Value::from)
        .collect()
}

fn sorted_strings(value: Option<&Value>) -> Value {
    let mut items: Vec<String> = strings(value)
        .into_iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    items.sort();
    json!(items)
}

fn container_names(pod_spec: Option<&Value>, field: &str) -> Value {
    let names: Vec<Value> = pod_spec
        .and_then(|s| s.get(field))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| c["name"].clone())
        .collect();
    Value::Array(names)
}

/// The `restartPolicy` of each of a Pod spec's (regular) containers that has one of its own (Kubernetes 1.35's
/// container restart rules, e.g. a restarting RayJob submitter sidecar), by container name; `None` if none has.
fn container_restart_policies(pod_spec: Option<&Value>) -> Option<Value> {
    let policies: BTreeMap<String, Value> = pod_spec?
        .get("containers")?
        .as_array()?
        .iter()
        .filter_map(|c| Some((c["name"].as_str()?.to_string(), c.get("restartPolicy")?.clone())))
        .filter(|(_, policy)| !policy.is_null())
        .collect();
    (!policies.is_empty()).then(|| json!(policies))
}

/// A Pod spec's `schedulerName` unless it is the default scheduler's.
fn scheduler_name(pod_spec: Option<&Value>) -> Option<Value> {
    pod_spec?
        .get("schedulerName")
        .filter(|s| !s.is_null() && *s != "default-scheduler")
        .cloned()
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn string_map(value: Option<&Value>) -> Value {
    let map: BTreeMap<String, Value> = value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    json!(map)
}

fn sorted_by_canonical(mut items: Vec<Value>) -> Value {
    items.sort_by_key(canonical);
    Value::Array(items)
}

/// Keeps only `keys` of an object, dropping nulls.
fn pick(object: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for key in keys {
        if let Some(v) = object.get(*key).filter(|v| !v.is_null()) {
            out.insert((*key).to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// The spec of a cert-manager Issuer or Certificate without what changes from run to run: the uid suffix of
/// a CA Secret's name (`<cluster>-ca-secret-<8 characters of the uid>`) becomes `*`, and IP addresses (Pod
/// IPs, plus `127.0.0.1`) are counted.
fn pki_spec(object: &Value) -> Value {
    let mut spec = object.get("spec").cloned().unwrap_or(Value::Null);
    for pointer in ["/secretName", "/ca/secretName"] {
        if let Some(name) = spec.pointer_mut(pointer)
            && let Some(text) = name.as_str()
            && let Some(at) = text.rfind("-ca-secret-")
        {
            *name = json!(format!("{}-ca-secret-*", &text[..at]));
        }
    }
    if let Some(ips) = spec.get_mut("ipAddresses") {
        let count = ips.as_array().map_or(0, Vec::len);
        *ips = json!(format!("{count} addresses"));
    }
    spec
}

/// Kind-specific facts: Pods their container names, their containers' own restart policies (where any has
/// one) and a scheduler other than the default; Services type,
/// headless, ports, selector; Jobs their template's container names, scheduler and scheduler labels and
/// annotations; PodGroups their `apiVersion`, spec, phase and (without a controller) owners; Roles their rules; RoleBindings role and subjects; Secrets and ConfigMaps
/// their type and keys; Ingresses class and backends; NetworkPolicies their policy types, Pod selector and rules;
/// Gateways class and listeners; HTTPRoutes parents and backends; cert-manager Issuers and Certificates their
/// spec ([`pki_spec`]) and Certificates whether they are `Ready`.
pub fn spec_facts(kind: &str, object: &Value) -> BTreeMap<String, Value> {
    let spec = object.get("spec");
    let mut facts = BTreeMap::new();
    match kind {
        "Pod" => {
            facts.insert("containers".into(), container_names(spec, "containers"));
            facts.insert("initContainers".into(), container_names(spec, "initContainers"));
            if let Some(policies) = container_restart_policies(spec) {
                facts.insert("containerRestartPolicies".into(), policies);
            }
            if let Some(scheduler) = scheduler_name(spec) {
                facts.insert("schedulerName".into(), scheduler);
            }
        }
        "Job" => {
            let pod = object.pointer("/spec/template/spec");
            facts.insert("containers".into(), container_names(pod, "containers"));
            if let Some(scheduler) = scheduler_name(pod) {
                facts.insert("schedulerName".into(), scheduler);
            }
            let template = object.pointer("/spec/template/metadata");
            for (field, keys) in [
                ("labels", SCHEDULER_LABELS),
                ("annotations", SCHEDULER_ANNOTATIONS),
            ] {
                let picked: BTreeMap<String, Value> = template
                    .and_then(|m| m.get(field))
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| matches_key(keys, k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                facts.insert(format!("template{}", capitalized(field)), json!(picked));
            }
        }
        "PodGroup" => {
            facts.insert("apiVersion".into(), object["apiVersion"].clone());
            facts.insert("spec".into(), spec.cloned().unwrap_or(Value::Null));
            if let Some(phase) = object.pointer("/status/phase") {
                facts.insert("phase".into(), phase.clone());
            }
            // KubeRay's scheduler-plugins PodGroup has an owner that is not its controller.
            if controller_owner(object).is_none() {
                let owners: Vec<Value> = object
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|o| pick(o, &["apiVersion", "kind", "name", "controller"]))
                    .collect();
                facts.insert("ownerReferences".into(), Value::Array(owners));
            }
        }
        "Service" => {
            let spec = spec.cloned().unwrap_or_default();
            facts.insert(
                "type".into(),
                spec.get("type").cloned().unwrap_or(json!("ClusterIP")),
            );
            if spec["clusterIP"] == "None" {
                facts.insert("headless".into(), json!(true));
            }
            if spec["publishNotReadyAddresses"] == true {
                facts.insert("publishNotReadyAddresses".into(), json!(true));
            }
            let ports: Vec<Value> = spec["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| pick(p, &["name", "port", "targetPort", "protocol", "appProtocol"]))
                .collect();
            facts.insert("ports".into(), sorted_by_canonical(ports));
            facts.insert("selector".into(), string_map(spec.get("selector")));
        }
        "Role" => {
            let rules: Vec<Value> = object["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    let mut rule = Map::new();
                    for key in [
                        "apiGroups",
                        "resources",
                        "verbs",
                        "resourceNames",
                        "nonResourceURLs",
                    ] {
                        let v = sorted_strings(r.get(key));
                        if !is_empty(&v) {
                            rule.insert(key.into(), v);
                        }
                    }
                    Value::Object(rule)
                })
                .collect();
            facts.insert("rules".into(), sorted_by_canonical(rules));
        }
        "RoleBinding" => {
            let role = &object["roleRef"];
            facts.insert(
                "roleRef".into(),
                json!(format!(
                    "{}/{}",
                    role["kind"].as_str().unwrap_or_default(),
                    role["name"].as_str().unwrap_or_default()
                )),
            );
            let subjects: Vec<Value> = object["subjects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| pick(s, &["kind", "name", "namespace"]))
                .collect();
            facts.insert("subjects".into(), sorted_by_canonical(subjects));
        }
        "Secret" | "ConfigMap" => {
            if kind == "Secret" {
                facts.insert("type".into(), object.get("type").cloned().unwrap_or(Value::Null));
            }
            let mut keys: Vec<String> = ["data", "stringData", "binaryData"]
                .iter()
                .filter_map(|f| object.get(*f).and_then(Value::as_object))
                .flat_map(|m| m.keys().cloned())
                .collect();
            keys.sort();
            keys.dedup();
            facts.insert("keys".into(), json!(keys));
        }
        "Ingress" => {
            let spec = spec.cloned().unwrap_or_default();
            if let Some(class) = spec.get("ingressClassName") {
                facts.insert("ingressClassName".into(), class.clone());
            }
            let mut backends = Vec::new();
            for rule in spec["rules"].as_array().into_iter().flatten() {
                for path in rule
                    .pointer("/http/paths")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let service = &path["backend"]["service"];
                    backends.push(json!({
                        "host": rule.get("host").cloned().unwrap_or(Value::Null),
                        "path": path.get("path").cloned().unwrap_or(Value::Null),
                        "pathType": path.get("pathType").cloned().unwrap_or(Value::Null),
                        "service": service.get("name").cloned().unwrap_or(Value::Null),
                        "port": service.get("port").cloned().unwrap_or(Value::Null),
                    }));
                }
            }
            facts.insert("rules".into(), sorted_by_canonical(backends));
        }
        "NetworkPolicy" => {
            facts.insert(
                "policyTypes".into(),
                sorted_strings(object.pointer("/spec/policyTypes")),
            );
            facts.insert(
                "podSelector".into(),
                object
                    .pointer("/spec/podSelector")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            // The rules, as written (KubeRay's RayClusterNetworkPolicy gate).
            for field in ["ingress", "egress"] {
                if let Some(rules) = object.pointer(&format!("/spec/{field}")) {
                    facts.insert(field.into(), rules.clone());
                }
            }
        }
        "Issuer" | "Certificate" => {
            facts.insert("spec".into(), pki_spec(object));
            if kind == "Certificate" {
                let ready = object
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|c| c["type"] == "Ready")
                    .map_or(Value::Null, |c| c["status"].clone());
                facts.insert("ready".into(), ready);
            }
        }
        "Gateway" => {
            let spec = spec.cloned().unwrap_or_default();
            facts.insert("gatewayClassName".into(), spec["gatewayClassName"].clone());
            let listeners: Vec<Value> = spec["listeners"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| pick(l, &["name", "port", "protocol"]))
                .collect();
            facts.insert("listeners".into(), sorted_by_canonical(listeners));
        }
        "HTTPRoute" => {
            let spec = spec.cloned().unwrap_or_default();
            let parents: Vec<Value> = spec["parentRefs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| pick(p, &["kind", "name", "sectionName"]))
                .collect();
            facts.insert("parentRefs".into(), sorted_by_canonical(parents));
            let mut backends = Vec::new();
            for rule in spec["rules"].as_array().into_iter().flatten() {
                for b in rule["backendRefs"].as_array().into_iter().flatten() {
                    backends.push(pick(b, &["kind", "name", "port", "weight"]));
                }
            }
            facts.insert("backendRefs".into(), sorted_by_canonical(backends));
        }
        _ => {}
    }
    facts
}

/// The status fields of `ray.io` objects that settle: RayCluster `state`, RayJob `jobDeploymentStatus`,
/// `jobStatus`, `reason` (a word such as `AppFailed`) and the keys of `rayJobInfo` (`"{}"` when empty),
/// RayService `serviceStatus`, and every object's conditions as `type: status`.
pub fn status_facts(kind: &str, object: &Value) -> BTreeMap<String, Value> {
    let fields: &[&str] = match kind {
        "RayCluster" => &["state"],
        "RayJob" => &["jobDeploymentStatus", "jobStatus", "reason"],
        "RayService" => &["serviceStatus"],
        "RayCronJob" => &[],
        _ => return BTreeMap::new(),
    };
    let status = object.get("status").cloned().unwrap_or_default();
    let mut facts = BTreeMap::new();
    for field in fields {
        if let Some(v) = status.get(*field).filter(|v| !v.is_null()) {
            facts.insert((*field).to_string(), v.clone());
        }
    }
    // KubeRay writes `rayJobInfo: {}` before it knows anything of the job: which keys it has.
    if let Some(info) = status.get("rayJobInfo").and_then(Value::as_object) {
        let mut keys: Vec<&String> = info.keys().collect();
        keys.sort();
        let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
        facts.insert("rayJobInfo".into(), json!(format!("{{{}}}", keys.join(", "))));
    }
    let conditions: BTreeMap<String, Value> = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["type"].as_str()?.to_string(), c["status"].clone())))
        .collect();
    facts.insert("conditions".into(), json!(conditions));
    facts
}

/// The golden file's text: a comment saying what it is, then the graph as YAML.
pub fn to_golden(graph: &Graph) -> String {
    let yaml = serde_yaml::to_string(graph).unwrap_or_default();
    format!(
        "# The objects KubeRay's operator {} made of tests/fixtures/kuberay-samples/{} (see README.md).\n\
         # Written by `make kuberay-samples-record`; do not edit by hand.\n{yaml}",
        super::KUBERAY_VERSION,
        graph.sample
    )
}

/// The golden file of a sample recorded with a profile: as [`to_golden`], the comment also naming the profile
/// and KubeRay's flags.
pub fn to_profile_golden(graph: &Graph, profile: &super::profiles::Profile, flags: &[String]) -> String {
    let yaml = serde_yaml::to_string(graph).unwrap_or_default();
    format!(
        "# The objects KubeRay's operator {} run with {} made of tests/fixtures/kuberay-samples/{}\n\
         # (profile {}; see ../../README.md). Written by `make kuberay-samples-record RECORD_ARGS=\"--profile {}\"`;\n\
         # do not edit by hand.\n{yaml}",
        super::KUBERAY_VERSION,
        flags.join(" "),
        graph.sample,
        profile.name,
        profile.name,
    )
}

/// Reads a golden file.
pub fn from_golden(text: &str) -> Result<Graph, serde_yaml::Error> {
    serde_yaml::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(kind: &str, name: &str) -> AppliedObject {
        AppliedObject {
            kind: kind.into(),
            name: name.into(),
            generate_name: None,
        }
    }

    fn owned(kind: &str, name: &str, generate: Option<&str>, owner: (&str, &str), labels: Value) -> Value {
        json!({
            "apiVersion": if kind.starts_with("Ray") { "ray.io/v1" } else { "v1" },
            "kind": kind,
            "metadata": {
                "name": name, "generateName": generate, "namespace": "ns-abcde", "uid": "u-1",
                "labels": labels,
                "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": owner.0, "name": owner.1,
                                     "uid": "x", "controller": true}],
            },
        })
    }

    #[test]
    fn random_names_are_normalized_everywhere_and_equal_entries_merged() {
        let job = json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-sample", "namespace": "ns-abcde"},
            "status": {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "startTime": "2026-01-01T00:00:00Z"}});
        let cluster = owned(
            "RayCluster",
            "rayjob-sample-x7k2p",
            None,
            ("RayJob", "rayjob-sample"),
            json!({"ray.io/originated-from-cr-name": "rayjob-sample", "other/label": "dropped"}),
        );
        let worker = |suffix: &str| {
            let mut pod = owned(
                "Pod",
                &format!("rayjob-sample-x7k2p-small-group-worker-{suffix}"),
                Some("rayjob-sample-x7k2p-small-group-worker-"),
                ("RayCluster", "rayjob-sample-x7k2p"),
                json!({"ray.io/cluster": "rayjob-sample-x7k2p", "ray.io/node-type": "worker"}),
            );
            pod["spec"] = json!({"containers": [{"name": "ray-worker"}]});
            pod
        };
        let service = {
            let mut svc = owned(
                "Service",
                "rayjob-sample-x7k2p-head-svc",
                None,
                ("RayCluster", "rayjob-sample-x7k2p"),
                json!({}),
            );
            svc["spec"] = json!({"clusterIP": "10.0.0.1", "ports": [{"name": "dashboard", "port": 8265, "nodePort": 31000}],
                                 "selector": {"ray.io/cluster": "rayjob-sample-x7k2p"}});
            svc
        };
        let objects = vec![job, cluster, worker("aaaaa"), worker("bbbbb"), service];
        let graph = normalize(
            "s.yaml",
            "ns-abcde",
            &BTreeSet::from([applied("RayJob", "rayjob-sample")]),
            &objects,
        );
        assert_eq!(graph.applied.len(), 1);
        assert_eq!(graph.applied[0].status["jobStatus"], "SUCCEEDED");
        assert!(!graph.applied[0].status.contains_key("startTime"));
        let names: Vec<(String, String, usize)> = graph
            .created
            .iter()
            .map(|e| (e.kind.clone(), e.name.clone(), e.count))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "Pod".to_string(),
                    "rayjob-sample-*-small-group-worker-*".to_string(),
                    2
                ),
                ("RayCluster".into(), "rayjob-sample-*".into(), 1),
                ("Service".into(), "rayjob-sample-*-head-svc".into(), 1),
            ]
        );
        let pod = &graph.created[0];
        assert_eq!(pod.owner.as_deref(), Some("RayCluster/rayjob-sample-*"));
        assert_eq!(pod.labels["ray.io/cluster"], "rayjob-sample-*");
        let svc = &graph.created[2];
        assert_eq!(svc.spec["selector"], json!({"ray.io/cluster": "rayjob-sample-*"}));
        assert_eq!(svc.spec["ports"], json!([{"name": "dashboard", "port": 8265}]));
        assert!(!graph.created[1].labels.contains_key("other/label"));
        let text = to_golden(&graph);
        assert_eq!(from_golden(&text).unwrap(), graph);
    }

    #[test]
    fn uids_and_volatile_annotations_are_replaced() {
        let mut cluster = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "c", "uid": "0f1b7847-ecf7-43a2-9dc2-4994e93fe195"}});
        let mut head = owned(
            "Pod",
            "c-head-abcde",
            Some("c-head-"),
            ("RayCluster", "c"),
            json!({}),
        );
        head["metadata"]["annotations"] = json!({
            "ray.io/external-storage-namespace": "0f1b7847-ecf7-43a2-9dc2-4994e93fe195",
            "ray.io/upgrade-strategy-recreate-hash": "KCAPPOH95H18NV1JF41S2RNGKVGEA1NV",
            "ray.io/cronjob-scheduled-timestamp": "2026-12-03T17:29:00Z",
            "other.io/dropped": "x",
        });
        head["spec"] = json!({"containers": [{"name": "ray-head"}, {"name": "ray-job-submitter"}]});
        cluster["status"] = json!({"state": "ready"});
        let graph = normalize(
            "s.yaml",
            "ns",
            &BTreeSet::from([applied("RayCluster", "c")]),
            &[cluster, head],
        );
        let annotations = &graph.created[0].annotations;
        assert_eq!(
            annotations["ray.io/external-storage-namespace"],
            "{uid of RayCluster c}"
        );
        assert_eq!(
            annotations["ray.io/upgrade-strategy-recreate-hash"], "*",
            "a sidecar's head template hash"
        );
        assert_eq!(annotations["ray.io/cronjob-scheduled-timestamp"], "*");
        assert!(!annotations.contains_key("other.io/dropped"));
    }

    #[test]
    fn batch_scheduler_facts_are_recorded_on_pods_and_pod_groups_only() {
        let mut pod = owned(
            "Pod",
            "c-head-abcde",
            Some("c-head-"),
            ("RayCluster", "c"),
            json!({"volcano.sh/queue-name": "q", "queue": "root.q", "other.io/x": "dropped"}),
        );
        pod["metadata"]["annotations"] =
            json!({"scheduling.k8s.io/group-name": "ray-c-pg", "other.io/y": "z"});
        pod["spec"] = json!({"containers": [{"name": "ray-head"}], "schedulerName": "volcano"});
        let mut default_pod = owned(
            "Pod",
            "c-worker-fghij",
            Some("c-worker-"),
            ("RayCluster", "c"),
            json!({}),
        );
        default_pod["spec"] =
            json!({"containers": [{"name": "ray-worker"}], "schedulerName": "default-scheduler"});
        let mut cluster = owned(
            "RayCluster",
            "c",
            None,
            ("RayJob", "j"),
            json!({"volcano.sh/queue-name": "q"}),
        );
        cluster["metadata"]["ownerReferences"][0]["controller"] = json!(true);
        // scheduler-plugins' PodGroup: owned by the RayCluster, not as its controller.
        let group = json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "c", "namespace": "ns",
                "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "c", "uid": "x"}]},
            "spec": {"minMember": 2, "minResources": {"cpu": "2"}}});
        let graph = normalize(
            "s.yaml",
            "ns",
            &BTreeSet::new(),
            &[pod, default_pod, cluster, group],
        );
        let by_name = |kind: &str, name: &str| {
            graph
                .created
                .iter()
                .find(|e| e.kind == kind && e.name == name)
                .unwrap_or_else(|| panic!("no {kind} {name} in {:?}", graph.created))
        };
        let head = by_name("Pod", "c-head-*");
        assert_eq!(head.labels["volcano.sh/queue-name"], "q");
        assert_eq!(head.labels["queue"], "root.q");
        assert!(!head.labels.contains_key("other.io/x"));
        assert_eq!(head.annotations["scheduling.k8s.io/group-name"], "ray-c-pg");
        assert_eq!(head.spec["schedulerName"], "volcano");
        assert!(!by_name("Pod", "c-worker-*").spec.contains_key("schedulerName"));
        assert!(
            by_name("RayCluster", "c").labels.is_empty(),
            "only Pods and PodGroups"
        );
        let group = by_name("PodGroup", "c");
        assert_eq!(group.owner, None);
        assert_eq!(group.spec["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
        assert_eq!(group.spec["spec"]["minMember"], 2);
        assert_eq!(
            group.spec["ownerReferences"],
            json!([{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "c"}])
        );
    }

    #[test]
    fn a_name_that_is_not_random_stays() {
        // A RayCluster named differently from KubeRay's `<owner>-<5 characters>` keeps its name, so a
        // different naming scheme shows as a difference.
        let cluster = owned(
            "RayCluster",
            "svc-raycluster-1",
            None,
            ("RayService", "svc"),
            json!({}),
        );
        let graph = normalize("s.yaml", "ns", &BTreeSet::new(), &[cluster]);
        assert_eq!(graph.created[0].name, "svc-raycluster-1");
    }

    #[test]
    fn objects_of_the_control_plane_and_the_sample_are_left_out() {
        let root_ca = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt",
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}]}});
        let job_pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j-abcde",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": true}]}});
        let mine = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made",
            "managedFields": [{"manager": "some-operator", "operation": "Apply"}]}});
        let sample_cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "code",
            "managedFields": [{"manager": "other", "operation": "Apply"}]}});
        let graph = normalize(
            "s.yaml",
            "ns",
            &BTreeSet::from([applied("ConfigMap", "code")]),
            &[root_ca, job_pod, mine, sample_cm],
        );
        let names: Vec<&str> = graph.created.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["made"]);
        assert!(
            graph.applied.is_empty(),
            "only the sample's ray.io objects are listed as applied"
        );
    }

    #[test]
    fn certificates_are_recorded_without_their_uid_suffix_and_pod_ips() {
        let certificate = json!({
            "spec": {"secretName": "c-ca-secret-0f3a9c1e", "ipAddresses": ["10.240.0.7", "127.0.0.1"],
                     "dnsNames": ["localhost"]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        });
        let facts = spec_facts("Certificate", &certificate);
        assert_eq!(
            facts["spec"],
            json!({"secretName": "c-ca-secret-*", "ipAddresses": "2 addresses", "dnsNames": ["localhost"]})
        );
        assert_eq!(facts["ready"], "True");
        let issuer = json!({"spec": {"ca": {"secretName": "c-ca-secret-0f3a9c1e"}}});
        assert_eq!(
            spec_facts("Issuer", &issuer)["spec"],
            json!({"ca": {"secretName": "c-ca-secret-*"}})
        );
    }
}
