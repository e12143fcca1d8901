//! A label index over one watch cache, so that a plugin's list costs what it returns, not the size of the
//! cache. Plugins list a cluster's children by a selector with an equality (`ray.io/cluster=NAME`); with a
//! thousand clusters in a namespace, walking every cached Pod for each such list made each reconcile's work
//! grow with the number of objects (issue 11). The index maps `(namespace, key, value)` to the names of the
//! objects carrying that label; a list looks up the rarest pair its selector requires and checks the rest
//! of the selector on those objects only. A selector without an equality uses the namespace's names.
//!
//! The index follows the same watch events as the cache's store, and each event is applied to both while
//! the index is locked, so a list sees both before or both after it; like the store, the index swaps in a
//! re-list only once the re-list is complete.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
};

use kube::runtime::watcher::Event;
use kuberay_plugin_sdk::selector::Selector;

use super::compact::CachedObject;

type LabelKey = (String, String, String);
type ObjectKey = (String, String);

#[derive(Default)]
struct Index {
    by_label: HashMap<LabelKey, BTreeSet<String>>,
    by_namespace: HashMap<String, BTreeSet<String>>,
    /// The labels each object is indexed under, to unindex it when it changes or goes away.
    labels_of: HashMap<ObjectKey, Vec<(String, String)>>,
}

fn object_key(object: &CachedObject) -> Option<ObjectKey> {
    let meta = &object.metadata;
    Some((meta.namespace.clone().unwrap_or_default(), meta.name.clone()?))
}

impl Index {
    fn insert(&mut self, object: &CachedObject) {
        let Some(key) = object_key(object) else {
            return;
        };
        self.remove(&key);
        let labels: Vec<(String, String)> = object
            .metadata
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let (namespace, name) = &key;
        for (k, v) in &labels {
            self.by_label
                .entry((namespace.clone(), k.clone(), v.clone()))
                .or_default()
                .insert(name.clone());
        }
        self.by_namespace
            .entry(namespace.clone())
            .or_default()
            .insert(name.clone());
        self.labels_of.insert(key, labels);
    }

    fn remove(&mut self, key: &ObjectKey) {
        let Some(labels) = self.labels_of.remove(key) else {
            return;
        };
        let (namespace, name) = key;
        for (k, v) in labels {
            let label = (namespace.clone(), k, v);
            if let Some(names) = self.by_label.get_mut(&label) {
                names.remove(name);
                if names.is_empty() {
                    self.by_label.remove(&label);
                }
            }
        }
        if let Some(names) = self.by_namespace.get_mut(namespace) {
            names.remove(name);
            if names.is_empty() {
                self.by_namespace.remove(namespace);
            }
        }
    }

    /// The names of the objects in `namespace` that may match `selector`, in name order: a superset of
    /// those that do.
    fn candidates(&self, namespace: &str, selector: &Selector) -> Vec<&str> {
        let mut smallest: Option<&BTreeSet<String>> = None;
        for (k, v) in selector.required_pairs() {
            let label = (namespace.to_string(), k.to_string(), v.to_string());
            let Some(names) = self.by_label.get(&label) else {
                return Vec::new();
            };
            if smallest.is_none_or(|s| names.len() < s.len()) {
                smallest = Some(names);
            }
        }
        smallest
            .or_else(|| self.by_namespace.get(namespace))
            .map(|names| names.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// The label index of one cache.
#[derive(Default)]
pub(crate) struct LabelIndex {
    live: Mutex<Index>,
    /// A re-list in progress, swapped in when complete.
    relist: Mutex<Option<Index>>,
}

impl LabelIndex {
    /// Follows one watch event: `update_store` applies it to the cache's store while the index is locked,
    /// so that a [`select`](Self::select) sees both before or both after.
    pub(crate) fn apply(&self, event: &Event<CachedObject>, update_store: impl FnOnce()) {
        let mut live = lock(&self.live);
        update_store();
        match event {
            Event::Apply(object) => live.insert(object),
            Event::Delete(object) => {
                if let Some(key) = object_key(object) {
                    live.remove(&key);
                }
            }
            Event::Init => *lock(&self.relist) = Some(Index::default()),
            Event::InitApply(object) => {
                if let Some(index) = lock(&self.relist).as_mut() {
                    index.insert(object);
                }
            }
            Event::InitDone => {
                if let Some(index) = lock(&self.relist).take() {
                    *live = index;
                }
            }
        }
    }

    /// The objects in `namespace` that match `selector`, in name order, fetched from the store with `get`
    /// while the index is locked.
    pub(crate) fn select(
        &self,
        namespace: &str,
        selector: &Selector,
        get: impl Fn(&str) -> Option<Arc<CachedObject>>,
    ) -> Vec<Arc<CachedObject>> {
        let no_labels = Default::default();
        let live = lock(&self.live);
        live.candidates(namespace, selector)
            .iter()
            .filter_map(|name| get(name))
            .filter(|o| selector.matches(o.metadata.labels.as_ref().unwrap_or(&no_labels)))
            .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;

    fn object(namespace: &str, name: &str, labels: &[(&str, &str)]) -> CachedObject {
        CachedObject::from_metadata(ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        })
    }

    fn selector(text: &str) -> Selector {
        Selector::parse(text).unwrap_or_default()
    }

    fn listed(index: &LabelIndex, namespace: &str, text: &str) -> Vec<String> {
        lock(&index.live)
            .candidates(namespace, &selector(text))
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    fn apply(index: &LabelIndex, event: Event<CachedObject>) {
        index.apply(&event, || {});
    }

    #[test]
    fn looks_up_the_rarest_required_label_in_the_namespace() {
        let index = LabelIndex::default();
        for i in 0..50 {
            let cluster = format!("c{i}");
            apply(
                &index,
                Event::Apply(object(
                    "ns",
                    &format!("{cluster}-head"),
                    &[("ray.io/cluster", &cluster), ("kind", "pod")],
                )),
            );
        }
        apply(
            &index,
            Event::Apply(object(
                "other",
                "c1-head",
                &[("ray.io/cluster", "c1"), ("kind", "pod")],
            )),
        );
        assert_eq!(
            listed(&index, "ns", "kind=pod,ray.io/cluster=c1"),
            vec!["c1-head"]
        );
        assert_eq!(listed(&index, "ns", "ray.io/cluster in (c2)"), vec!["c2-head"]);
        assert!(listed(&index, "ns", "ray.io/cluster=none").is_empty());
        // Without an equality: every object of the namespace is a candidate.
        assert_eq!(listed(&index, "ns", "ray.io/cluster").len(), 50);
        assert_eq!(listed(&index, "other", "").len(), 1);
    }

    #[test]
    fn follows_label_changes_and_deletions() {
        let index = LabelIndex::default();
        apply(&index, Event::Apply(object("ns", "a", &[("app", "x")])));
        apply(&index, Event::Apply(object("ns", "a", &[("app", "y")])));
        assert!(listed(&index, "ns", "app=x").is_empty());
        assert_eq!(listed(&index, "ns", "app=y"), vec!["a"]);
        apply(&index, Event::Delete(object("ns", "a", &[("app", "y")])));
        assert!(listed(&index, "ns", "app=y").is_empty());
        assert!(listed(&index, "ns", "").is_empty());
        let inner = lock(&index.live);
        assert!(inner.by_label.is_empty() && inner.by_namespace.is_empty() && inner.labels_of.is_empty());
    }

    #[test]
    fn a_relist_replaces_the_index_once_complete() {
        let index = LabelIndex::default();
        apply(&index, Event::Apply(object("ns", "gone", &[("app", "x")])));
        apply(&index, Event::Init);
        apply(&index, Event::InitApply(object("ns", "new", &[("app", "x")])));
        // Until the re-list is done, readers see the old index, as the store's readers do.
        assert_eq!(listed(&index, "ns", "app=x"), vec!["gone"]);
        apply(&index, Event::InitDone);
        assert_eq!(listed(&index, "ns", "app=x"), vec!["new"]);
    }
}
