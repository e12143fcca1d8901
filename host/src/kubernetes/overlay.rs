//! Read-your-writes. Right after a plugin creates, applies or deletes an object, the watch cache may not
//! have seen it yet; a reconcile that ran on the cache alone would create a second Pod for the same slot or
//! miss a deletion. The overlay remembers each write until the cache catches up (or for a minute at most)
//! and reads merge the two, which does what KubeRay's "scale expectations" do, for every kind.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use kube::api::ObjectMeta;
use kuberay_plugin_sdk::{Kind, selector::Selector};
use serde_json::Value;

use kuberay_admission::Key;

use super::compact::CachedObject;

const RETENTION: Duration = Duration::from_secs(60);
/// Entries kept at most; past this, expired entries are dropped and then the oldest.
const CAP: usize = 20_000;

enum Entry {
    Written { object: Value, at: Instant },
    Deleted { uid: Option<String>, at: Instant },
}

impl Entry {
    fn at(&self) -> Instant {
        match self {
            Self::Written { at, .. } | Self::Deleted { at, .. } => *at,
        }
    }
}

/// The entries of one kind in one namespace, by object name: what a list of that kind merges.
type Group = HashMap<String, Entry>;

#[derive(Default)]
struct Entries {
    groups: HashMap<(Kind, String), Group>,
    len: usize,
}

impl Entries {
    fn insert(&mut self, key: Key, entry: Entry) {
        let group = self.groups.entry((key.kind, key.namespace)).or_default();
        if group.insert(key.name, entry).is_none() {
            self.len += 1;
        }
    }

    fn remove(&mut self, key: &Key) {
        let group_key = (key.kind.clone(), key.namespace.clone());
        let Some(group) = self.groups.get_mut(&group_key) else {
            return;
        };
        if group.remove(&key.name).is_some() {
            self.len -= 1;
        }
        if group.is_empty() {
            self.groups.remove(&group_key);
        }
    }

    fn get(&self, key: &Key) -> Option<&Entry> {
        self.groups
            .get(&(key.kind.clone(), key.namespace.clone()))?
            .get(&key.name)
    }

    /// Drops expired entries, then the oldest, until at most [`CAP`] remain.
    fn shrink(&mut self) {
        for group in self.groups.values_mut() {
            group.retain(|_, e| e.at().elapsed() <= RETENTION);
        }
        self.groups.retain(|_, group| !group.is_empty());
        self.len = self.groups.values().map(HashMap::len).sum();
        while self.len > CAP {
            let oldest = self
                .groups
                .iter()
                .flat_map(|((kind, namespace), group)| {
                    group.iter().map(move |(name, e)| (e.at(), kind, namespace, name))
                })
                .min_by_key(|(at, ..)| *at)
                .map(|(_, kind, namespace, name)| Key {
                    kind: kind.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                });
            let Some(oldest) = oldest else {
                break;
            };
            self.remove(&oldest);
        }
    }
}

/// Recent writes by kind, namespace and name: a list looks only at the entries of its kind and namespace,
/// so its cost does not grow with writes elsewhere.
#[derive(Default)]
pub(crate) struct Overlay {
    entries: Mutex<Entries>,
}

/// What the overlay needs to know of the cached version of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CachedMeta {
    resource_version: Option<u64>,
    uid: Option<String>,
    terminating: bool,
}

impl CachedMeta {
    /// From a cached object's metadata.
    fn of(meta: &ObjectMeta) -> Self {
        Self {
            resource_version: meta.resource_version.as_deref().and_then(|v| v.parse().ok()),
            uid: meta.uid.clone(),
            terminating: meta.deletion_timestamp.is_some(),
        }
    }

    fn of_json(object: &Value) -> Self {
        Self {
            resource_version: resource_version(object),
            uid: object
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            terminating: object.pointer("/metadata/deletionTimestamp").is_some(),
        }
    }
}

fn resource_version(object: &Value) -> Option<u64> {
    object
        .pointer("/metadata/resourceVersion")?
        .as_str()?
        .parse()
        .ok()
}

/// Which version a read shows.
enum View {
    Cached,
    Written,
    Hidden,
}

/// What a read shows given an entry and the cached version, and whether the entry is still needed.
fn resolve(entry: &Entry, cached: Option<&CachedMeta>) -> (bool, View) {
    match entry {
        Entry::Written { at, .. } | Entry::Deleted { at, .. } if at.elapsed() > RETENTION => {
            (false, View::Cached)
        }
        Entry::Written { object, .. } => match cached {
            Some(c) if c.resource_version >= resource_version(object) => (false, View::Cached),
            _ => (true, View::Written),
        },
        Entry::Deleted { uid: deleted, .. } => match cached {
            None => (false, View::Hidden),
            // The cache has seen the deletion start: from now on it shows the object terminating, as the
            // API server does (a plugin may wait for a Pod to be gone).
            Some(c) if c.terminating => (false, View::Cached),
            Some(c) if deleted.is_none() || c.uid == *deleted => (true, View::Hidden),
            // A new object with the same name: the deletion is done.
            Some(_) => (false, View::Cached),
        },
    }
}

fn selects(selector: &Selector, object: &CachedObject) -> bool {
    selector.matches(object.metadata.labels.as_ref().unwrap_or(&Default::default()))
}

fn written(entry: &Entry) -> Option<&Value> {
    match entry {
        Entry::Written { object, .. } => Some(object),
        Entry::Deleted { .. } => None,
    }
}

impl Overlay {
    pub(crate) fn record_write(&self, key: Key, object: Value) {
        self.insert(
            key,
            Entry::Written {
                object,
                at: Instant::now(),
            },
        );
    }

    pub(crate) fn record_delete(&self, key: Key, uid: Option<String>) {
        self.insert(
            key,
            Entry::Deleted {
                uid,
                at: Instant::now(),
            },
        );
    }

    /// Inserts an entry, keeping the overlay within [`CAP`]: entries of objects that are never read again
    /// would otherwise stay forever.
    fn insert(&self, key: Key, entry: Entry) {
        let mut entries = self.lock();
        entries.insert(key, entry);
        if entries.len > CAP {
            entries.shrink();
        }
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len
    }

    /// The object as the plugin should see it, given what the cache has. Entries the cache has caught up
    /// with are dropped.
    pub(crate) fn merge(&self, key: &Key, cached: Option<Value>) -> Option<Value> {
        let mut entries = self.lock();
        let Some(entry) = entries.get(key) else {
            return cached;
        };
        let (keep, view) = resolve(entry, cached.as_ref().map(CachedMeta::of_json).as_ref());
        let result = match view {
            View::Cached => cached,
            View::Written => written(entry).cloned(),
            View::Hidden => None,
        };
        if !keep {
            entries.remove(key);
        }
        result
    }

    /// The watch has delivered `meta`'s version of the object (`deleted`: its deletion). An entry the watch
    /// has caught up with goes now rather than at the object's next read, so the overlay holds only writes
    /// still in flight instead of every object written in the last [`RETENTION`]. A deleted object counts
    /// as terminating: a pending deletion is done, a write older than its last version is stale.
    pub(crate) fn observe(&self, key: &Key, meta: &ObjectMeta, deleted: bool) {
        let mut entries = self.lock();
        let Some(entry) = entries.get(key) else {
            return;
        };
        let mut seen = CachedMeta::of(meta);
        seen.terminating |= deleted;
        if !resolve(entry, Some(&seen)).0 {
            entries.remove(key);
        }
    }

    /// A list (`listed`, already filtered by `selector`) with the overlay applied: recent writes added or
    /// replaced, recent deletions removed. `cached` looks up what the cache holds of an object the list
    /// does not show: one that does not match the selector, or one the list missed because the cache's
    /// label index is an event behind its store. Entries the cache has caught up with are dropped.
    pub(crate) fn merge_list(
        &self,
        kind: &Kind,
        namespace: &str,
        listed: Vec<Value>,
        selector: &Selector,
        cached: impl Fn(&str) -> Option<Arc<CachedObject>>,
    ) -> Vec<Value> {
        let mut entries = self.lock();
        let group_key = (kind.clone(), namespace.to_string());
        let Some(group) = entries.groups.get_mut(&group_key) else {
            return listed;
        };
        let mut by_name: HashMap<String, Value> = listed
            .into_iter()
            .filter_map(|o| Some((o.pointer("/metadata/name")?.as_str()?.to_string(), o)))
            .collect();
        let before = group.len();
        group.retain(|name, entry| {
            let (meta, unlisted) = match by_name.get(name) {
                Some(object) => (Some(CachedMeta::of_json(object)), None),
                None => {
                    let object = cached(name);
                    (object.as_ref().map(|o| CachedMeta::of(&o.metadata)), object)
                }
            };
            let (keep, view) = resolve(entry, meta.as_ref());
            match (view, written(entry)) {
                (View::Cached, _) => {
                    if let Some(object) = unlisted.filter(|o| selects(selector, o))
                        && let Ok(object) = object.to_value()
                    {
                        by_name.insert(name.clone(), object);
                    }
                }
                (View::Written, Some(object)) if selector.matches_object(object) => {
                    by_name.insert(name.clone(), object.clone());
                }
                (View::Written | View::Hidden, _) => {
                    by_name.remove(name);
                }
            }
            keep
        });
        let dropped = before - group.len();
        if group.is_empty() {
            entries.groups.remove(&group_key);
        }
        entries.len -= dropped;
        drop(entries);
        let mut items: Vec<Value> = by_name.into_values().collect();
        items.sort_by(|a, b| {
            a.pointer("/metadata/name")
                .and_then(Value::as_str)
                .cmp(&b.pointer("/metadata/name").and_then(Value::as_str))
        });
        items
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(name: &str, uid: &str, rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": uid, "resourceVersion": rv, "labels": {"app": "x"}}})
    }

    fn cached(object: Value) -> Arc<CachedObject> {
        Arc::new(serde_json::from_value(object).unwrap())
    }

    fn key(name: &str) -> Key {
        Key {
            kind: Kind::new("", "v1", "Pod"),
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[test]
    fn writes_show_until_the_cache_has_them() {
        let overlay = Overlay::default();
        overlay.record_write(key("a"), pod("a", "u1", "10"));
        assert_eq!(overlay.merge(&key("a"), None), Some(pod("a", "u1", "10")));
        // An older cached version does not win.
        assert_eq!(
            overlay.merge(&key("a"), Some(pod("a", "u1", "9"))),
            Some(pod("a", "u1", "10"))
        );
        // Once the cache catches up, it wins and the entry is gone.
        assert_eq!(
            overlay.merge(&key("a"), Some(pod("a", "u1", "11"))),
            Some(pod("a", "u1", "11"))
        );
        assert_eq!(overlay.merge(&key("a"), None), None);
    }

    #[test]
    fn deletions_hide_the_object_until_it_is_gone() {
        let overlay = Overlay::default();
        overlay.record_delete(key("a"), Some("u1".into()));
        assert_eq!(overlay.merge(&key("a"), Some(pod("a", "u1", "5"))), None);
        // A new incarnation is shown.
        assert_eq!(
            overlay.merge(&key("a"), Some(pod("a", "u2", "7"))),
            Some(pod("a", "u2", "7"))
        );
    }

    #[test]
    fn lists_merge_creations_and_deletions() {
        let overlay = Overlay::default();
        overlay.record_write(key("new"), pod("new", "u3", "20"));
        overlay.record_delete(key("old"), Some("u1".into()));
        let cached = vec![pod("old", "u1", "5"), pod("kept", "u2", "6")];
        let selector = Selector::parse("app=x").unwrap_or_default();
        let names: Vec<String> = overlay
            .merge_list(&Kind::new("", "v1", "Pod"), "ns", cached, &selector, |_| None)
            .iter()
            .filter_map(|o| {
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(names, vec!["kept", "new"]);
    }

    #[test]
    fn terminating_objects_are_shown_once_the_cache_sees_them() {
        let overlay = Overlay::default();
        overlay.record_delete(key("b"), Some("u3".into()));
        let mut terminating = pod("b", "u3", "9");
        terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(
            overlay.merge(&key("b"), Some(terminating.clone())),
            Some(terminating)
        );
    }

    fn meta(object: &Value) -> ObjectMeta {
        serde_json::from_value(object["metadata"].clone()).unwrap()
    }

    #[test]
    fn a_write_goes_when_the_watch_delivers_it() {
        let overlay = Overlay::default();
        overlay.record_write(key("a"), pod("a", "u1", "10"));
        // An older version seen by the watch keeps it.
        overlay.observe(&key("a"), &meta(&pod("a", "u1", "9")), false);
        assert_eq!(overlay.len(), 1);
        overlay.observe(&key("a"), &meta(&pod("a", "u1", "10")), false);
        assert_eq!(overlay.len(), 0);
        // Events of other objects touch nothing.
        overlay.record_write(key("b"), pod("b", "u2", "12"));
        overlay.observe(&key("a"), &meta(&pod("a", "u1", "13")), false);
        assert_eq!(overlay.len(), 1);
    }

    #[test]
    fn a_deletion_goes_when_the_watch_sees_the_object_terminate_or_go() {
        let overlay = Overlay::default();
        overlay.record_delete(key("a"), Some("u1".into()));
        // Still there and not terminating: the deletion is pending.
        overlay.observe(&key("a"), &meta(&pod("a", "u1", "5")), false);
        assert_eq!(overlay.len(), 1);
        overlay.observe(&key("a"), &meta(&pod("a", "u1", "6")), true);
        assert_eq!(overlay.len(), 0);
        // A write older than the deleted object's last version is stale; a newer one is kept.
        overlay.record_write(key("b"), pod("b", "u2", "7"));
        overlay.observe(&key("b"), &meta(&pod("b", "u2", "8")), true);
        assert_eq!(overlay.len(), 0);
        overlay.record_write(key("c"), pod("c", "u3", "20"));
        overlay.observe(&key("c"), &meta(&pod("c", "u0", "8")), true);
        assert_eq!(overlay.merge(&key("c"), None), Some(pod("c", "u3", "20")));
    }

    #[test]
    fn the_overlay_stays_within_its_cap() {
        let overlay = Overlay::default();
        for i in 0..CAP + 50 {
            overlay.record_write(key(&format!("p{i}")), pod("p", "u", "1"));
        }
        assert_eq!(overlay.len(), CAP);
        // The newest entries are the ones kept.
        let last = format!("p{}", CAP + 49);
        assert!(overlay.merge(&key(&last), None).is_some());
    }

    #[test]
    fn a_list_that_does_not_select_an_object_keeps_its_pending_deletion() {
        let overlay = Overlay::default();
        overlay.record_delete(key("a"), Some("u1".into()));
        let still_cached = |name: &str| (name == "a").then(|| cached(pod("a", "u1", "5")));
        let other = Selector::parse("app=y").unwrap_or_default();
        let listed = overlay.merge_list(&Kind::new("", "v1", "Pod"), "ns", vec![], &other, still_cached);
        assert!(listed.is_empty());
        // The cache still has the Pod, not yet terminating: a read must not show it.
        assert_eq!(overlay.merge(&key("a"), Some(pod("a", "u1", "5"))), None);
        assert_eq!(overlay.len(), 1);
    }

    #[test]
    fn a_pending_write_is_listed_only_if_it_matches() {
        let overlay = Overlay::default();
        overlay.record_write(key("b"), pod("b", "u2", "10"));
        let kind = Kind::new("", "v1", "Pod");
        let other = Selector::parse("app=y").unwrap_or_default();
        assert!(
            overlay
                .merge_list(&kind, "ns", vec![], &other, |_| None)
                .is_empty()
        );
        let mine = Selector::parse("app=x").unwrap_or_default();
        assert_eq!(overlay.merge_list(&kind, "ns", vec![], &mine, |_| None).len(), 1);
        // Entries of other namespaces are not touched by a list.
        assert!(
            overlay
                .merge_list(&kind, "elsewhere", vec![], &mine, |_| None)
                .is_empty()
        );
        assert_eq!(overlay.len(), 1);
    }

    #[test]
    fn an_object_the_list_missed_but_the_cache_has_is_listed() {
        // The cache has caught up with the write, but the list (from the label index, an event behind)
        // does not show it: the entry goes, the cached object is listed.
        let overlay = Overlay::default();
        overlay.record_write(key("c"), pod("c", "u3", "10"));
        let kind = Kind::new("", "v1", "Pod");
        let mine = Selector::parse("app=x").unwrap_or_default();
        let cache = |name: &str| (name == "c").then(|| cached(pod("c", "u3", "11")));
        let listed = overlay.merge_list(&kind, "ns", vec![], &mine, cache);
        assert_eq!(listed, vec![pod("c", "u3", "11")]);
        assert_eq!(overlay.len(), 0);
    }
}
