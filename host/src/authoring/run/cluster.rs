//! The in-memory cluster `plugin run` reconciles against: the objects given (and the reconciled object), the
//! admission lookups ([`Cluster`]) answered from them, and the admitted writes committed to them roughly as
//! the API server would (names from `generateName`, uids, resource versions, preconditions, server-side
//! apply as a merge, finalizers holding a delete, dependents garbage-collected).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use kuberay_admission::Key;
use kuberay_plugin_sdk::{HostError, Kind, ownership, selector::Selector};
use serde_json::{Map, Value, json};

use crate::{
    admission::{Admitted, Cluster, Decision, ToSend},
    host_api::HostResult,
};

/// Where an object is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ObjectKey {
    pub(crate) kind: Kind,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

/// Every object, by where it is.
pub(crate) type Objects = BTreeMap<ObjectKey, Value>;

/// The characters Kubernetes draws `generateName` suffixes from.
const SUFFIX_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

/// An in-memory cluster. Uids and names it makes up are numbered, so a run's output is the same every time.
pub(crate) struct MemoryCluster {
    objects: Mutex<Objects>,
    /// Namespaces' `pod-security.kubernetes.io/enforce` labels.
    levels: BTreeMap<String, String>,
    /// Custom kinds the given CRDs declare cluster-scoped.
    cluster_scoped: BTreeSet<(String, String)>,
    counter: AtomicU64,
}

impl MemoryCluster {
    /// A cluster holding `objects` (each in `default_namespace` unless it names one, with a uid and a
    /// resource version if it has none); `levels` are the namespaces' enforce labels.
    pub(crate) fn new(
        objects: Vec<Value>,
        default_namespace: &str,
        levels: BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let mut cluster = Self {
            objects: Mutex::default(),
            levels,
            cluster_scoped: BTreeSet::new(),
            counter: AtomicU64::new(0),
        };
        for object in &objects {
            let crd = Kind::of_object(object).is_some_and(|k| k.kind == "CustomResourceDefinition");
            if crd && str_at(object, "/spec/scope") == Some("Cluster") {
                let group = str_at(object, "/spec/group").unwrap_or_default();
                let kind = str_at(object, "/spec/names/kind").unwrap_or_default();
                cluster.cluster_scoped.insert((group.into(), kind.into()));
            }
            if let Some(level) = str_at(object, "/metadata/labels/pod-security.kubernetes.io~1enforce")
                && Kind::of_object(object).is_some_and(|k| k.kind == "Namespace" && k.group.is_empty())
            {
                let namespace = str_at(object, "/metadata/name").unwrap_or_default();
                cluster
                    .levels
                    .entry(namespace.to_string())
                    .or_insert_with(|| level.to_string());
            }
        }
        for object in objects {
            cluster.insert(object, default_namespace)?;
        }
        Ok(cluster)
    }

    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn uid(&self) -> String {
        format!("00000000-0000-4000-8000-{:012x}", self.next())
    }

    fn suffix(&self) -> String {
        let mut n = self.next() * 7919;
        (0..5)
            .map(|_| {
                let c = SUFFIX_CHARS[(n % SUFFIX_CHARS.len() as u64) as usize];
                n /= SUFFIX_CHARS.len() as u64;
                char::from(c)
            })
            .collect()
    }

    fn scoped(&self, kind: &Kind) -> bool {
        kuberay_admission::scope::is_cluster_scoped(kind)
            || self
                .cluster_scoped
                .contains(&(kind.group.clone(), kind.kind.clone()))
    }

    /// Adds a given object; returns it as stored.
    pub(crate) fn insert(&self, mut object: Value, default_namespace: &str) -> Result<Value, String> {
        let kind = Kind::of_object(&object).ok_or("an object without apiVersion and kind")?;
        let name = str_at(&object, "/metadata/name")
            .ok_or_else(|| format!("a {kind} without metadata.name"))?
            .to_string();
        let namespace = if self.scoped(&kind) {
            String::new()
        } else {
            str_at(&object, "/metadata/namespace")
                .unwrap_or(default_namespace)
                .to_string()
        };
        let uid = self.uid();
        let version = self.next().to_string();
        let meta = object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| format!("{kind} {name}: metadata is not a map"))?;
        if !namespace.is_empty() {
            meta.insert("namespace".into(), json!(namespace));
        }
        // What the API server gives every object it holds.
        meta.entry("uid").or_insert_with(|| json!(uid));
        meta.entry("resourceVersion").or_insert_with(|| json!(version));
        meta.entry("generation").or_insert_with(|| json!(1));
        meta.entry("creationTimestamp").or_insert_with(|| json!(now()));
        let key = ObjectKey {
            kind,
            namespace,
            name,
        };
        self.lock().insert(key, object.clone());
        Ok(object)
    }

    /// Every object as it is now.
    pub(crate) fn snapshot(&self) -> Objects {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Objects> {
        self.objects
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn key(kind: &Kind, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            kind: kind.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// Writes what admission decided in `namespace`, as the API server would; the object as written (or as
    /// it already was), if any.
    pub(crate) fn commit(&self, namespace: &str, decision: Decision) -> HostResult<Option<Value>> {
        let Admitted {
            kind,
            name,
            send,
            conceal,
            ..
        } = match decision {
            Decision::Unchanged { current, .. } => return Ok(current),
            Decision::Write(admitted) => *admitted,
        };
        let mut objects = self.lock();
        let now = now();
        match send {
            ToSend::Create(object) | ToSend::CreateAsApply(object) => {
                let mut object = object;
                let name = match str_at(&object, "/metadata/name") {
                    Some(name) if !name.is_empty() => name.to_string(),
                    _ => format!(
                        "{}{}",
                        str_at(&object, "/metadata/generateName").unwrap_or_default(),
                        self.suffix()
                    ),
                };
                let key = Self::key(&kind, namespace, &name);
                if objects.contains_key(&key) {
                    return Err(HostError::Conflict(format!(
                        "{} \"{name}\" already exists",
                        plural(&kind)
                    )));
                }
                if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("generateName");
                    meta.insert("name".into(), json!(name));
                    meta.insert("uid".into(), json!(self.uid()));
                    meta.insert("resourceVersion".into(), json!(self.next().to_string()));
                    meta.insert("generation".into(), json!(1));
                    meta.insert("creationTimestamp".into(), json!(now));
                }
                objects.insert(key, object.clone());
                Ok(Some(object))
            }
            ToSend::Apply(intent) => {
                let key = Self::key(&kind, namespace, &name);
                let live = objects.get_mut(&key);
                let expected = str_at(&intent, "/metadata/uid");
                let Some(live) =
                    live.filter(|l| expected.is_none() || str_at(l, "/metadata/uid") == expected)
                else {
                    return Err(HostError::Conflict(format!(
                        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified or deleted (uid precondition)",
                        plural(&kind)
                    )));
                };
                merge(live, intent);
                self.bump(live);
                let mut written = live.clone();
                if conceal {
                    kuberay_admission::conceal(&mut written);
                }
                Ok(Some(written))
            }
            ToSend::Status(intent) => {
                let key = Self::key(&kind, namespace, &name);
                let live = objects
                    .get_mut(&key)
                    .ok_or_else(|| HostError::NotFound(format!("{kind} {name} is gone")))?;
                if let Some(status) = intent.get("status") {
                    merge(live, json!({ "status": status }));
                }
                self.bump(live);
                Ok(None)
            }
            ToSend::Merge(patch) => {
                let key = Self::key(&kind, namespace, &name);
                let live = objects
                    .get_mut(&key)
                    .ok_or_else(|| HostError::NotFound(format!("{kind} {name} is gone")))?;
                let mut patch = patch;
                let version = patch
                    .pointer_mut("/metadata")
                    .and_then(Value::as_object_mut)
                    .and_then(|m| m.remove("resourceVersion"));
                if let Some(version) = version.as_ref().and_then(Value::as_str)
                    && str_at(live, "/metadata/resourceVersion") != Some(version)
                {
                    return Err(HostError::Conflict(format!(
                        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified",
                        plural(&kind)
                    )));
                }
                merge(live, patch);
                self.bump(live);
                Ok(None)
            }
            ToSend::Delete { uid } => {
                let key = Self::key(&kind, namespace, &name);
                let matches = objects
                    .get(&key)
                    .is_some_and(|l| uid.is_none() || str_at(l, "/metadata/uid") == uid.as_deref());
                if matches {
                    delete(&mut objects, &key, &now);
                }
                Ok(None)
            }
        }
    }

    fn bump(&self, object: &mut Value) {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(self.next().to_string()));
        }
    }
}

/// Deletes `key`: an object with finalizers gets a deletion timestamp and stays; one without goes, and
/// what it controlled goes with it (the garbage collector, with the default background propagation).
fn delete(objects: &mut Objects, key: &ObjectKey, now: &str) {
    let Some(object) = objects.get_mut(key) else {
        return;
    };
    let finalizers = object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if finalizers {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.entry("deletionTimestamp").or_insert_with(|| json!(now));
        }
        return;
    }
    let uid = str_at(object, "/metadata/uid").unwrap_or_default().to_string();
    objects.remove(key);
    let dependents: Vec<ObjectKey> = objects
        .iter()
        .filter(|(_, o)| ownership::controlled_by(o, &uid))
        .map(|(k, _)| k.clone())
        .collect();
    for dependent in dependents {
        delete(objects, &dependent, now);
    }
}

/// A server-side apply's effect, near enough for one reconcile: maps merge key by key, anything else (lists
/// included) is replaced, `null` removes.
fn merge(live: &mut Value, intent: Value) {
    match (live, intent) {
        (Value::Object(live), Value::Object(intent)) => merge_maps(live, intent),
        (live, intent) => *live = intent,
    }
}

fn merge_maps(live: &mut Map<String, Value>, intent: Map<String, Value>) {
    for (key, value) in intent {
        if value.is_null() {
            live.remove(&key);
        } else if let Some(existing) = live.get_mut(&key) {
            merge(existing, value);
        } else {
            live.insert(key, value);
        }
    }
}

/// The resource name the API server's messages use for a kind.
fn plural(kind: &Kind) -> String {
    crate::authoring::plural(&kind.kind)
}

/// Now, as Kubernetes writes timestamps (RFC 3339, seconds, UTC).
fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    k8s_openapi::jiff::Timestamp::from_second(now.as_second())
        .map(|t| t.to_string())
        .unwrap_or_default()
}

impl Cluster for MemoryCluster {
    async fn read(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        Ok(self.lock().get(&Self::key(kind, namespace, name)).cloned())
    }

    async fn read_live(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        self.read(kind, namespace, name).await
    }

    async fn list(&self, kind: &Kind, namespace: &str, label_selector: &str) -> HostResult<Vec<Value>> {
        let selector = Selector::parse(label_selector).map_err(|e| HostError::Invalid(e.to_string()))?;
        Ok(self
            .lock()
            .iter()
            .filter(|(k, o)| k.kind == *kind && k.namespace == namespace && selector.matches_object(o))
            .map(|(_, o)| o.clone())
            .collect())
    }

    async fn is_namespaced(&self, kind: &Kind) -> HostResult<bool> {
        Ok(!self.scoped(kind))
    }

    async fn enforced_level(&self, namespace: &str) -> Result<Option<String>, String> {
        Ok(self.levels.get(namespace).cloned())
    }

    fn same_as_last(&self, _: &Key, _: &'static str, _: u64) -> bool {
        // One reconcile: nothing was applied before it.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_merge_maps_and_replace_lists_and_null_removes() {
        let mut live =
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"ports": [1, 2], "x": 1}});
        merge(
            &mut live,
            json!({"metadata": {"labels": {"b": "3"}}, "spec": {"ports": [3], "x": null}}),
        );
        assert_eq!(
            live,
            json!({"metadata": {"labels": {"a": "1", "b": "3"}}, "spec": {"ports": [3]}})
        );
    }

    #[test]
    fn deleting_an_object_takes_what_it_controls_and_a_finalizer_holds_it() {
        let cluster = MemoryCluster::new(
            vec![
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "parent", "uid": "p"}}),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "child",
                    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "parent", "uid": "p", "controller": true}]}}),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["x/y"]}}),
            ],
            "ns",
            BTreeMap::new(),
        )
        .unwrap();
        let config_maps = Kind::new("", "v1", "ConfigMap");
        let delete = |name: &str| {
            Decision::Write(Box::new(Admitted {
                verb: "delete",
                kind: config_maps.clone(),
                name: name.into(),
                send: ToSend::Delete { uid: None },
                remember: None,
                conceal: false,
            }))
        };
        cluster.commit("ns", delete("parent")).unwrap();
        cluster.commit("ns", delete("held")).unwrap();
        let left = cluster.snapshot();
        assert_eq!(left.len(), 1, "{left:?}");
        let held = left.values().next().unwrap();
        assert!(held.pointer("/metadata/deletionTimestamp").is_some());
    }

    #[test]
    fn generated_names_and_uids_are_numbered_and_a_second_create_conflicts() {
        let cluster = MemoryCluster::new(Vec::new(), "ns", BTreeMap::new()).unwrap();
        let pods = Kind::new("", "v1", "Pod");
        let create = |object: Value| {
            Decision::Write(Box::new(Admitted {
                verb: "create",
                kind: pods.clone(),
                name: String::new(),
                send: ToSend::Create(object),
                remember: None,
                conceal: false,
            }))
        };
        let made = cluster
            .commit("ns", create(json!({"metadata": {"generateName": "head-"}})))
            .unwrap()
            .unwrap();
        let name = made["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("head-") && name.len() == 10, "{name}");
        let again = json!({"metadata": {"name": name}});
        assert!(matches!(
            cluster.commit("ns", create(again)),
            Err(HostError::Conflict(m)) if m == format!("pods \"{name}\" already exists")
        ));
    }
}
