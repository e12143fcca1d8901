//! Read-your-writes. Right after a plugin creates, applies or deletes an object, the watch cache may not
//! have seen it yet; a reconcile that ran on the cache alone would create a second Pod for the same slot or
//! miss a deletion. The overlay remembers each write until the cache catches up (or for a minute at most)
//! and reads merge the two, which does what KubeRay's "scale expectations" do, for every kind.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use kuberay_plugin_sdk::{Kind, selector::Selector};
use serde_json::Value;

const RETENTION: Duration = Duration::from_secs(60);
/// Entries kept at most; past this, expired entries are dropped and then the oldest.
const CAP: usize = 20_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

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

#[derive(Default)]
pub(crate) struct Overlay {
    entries: Mutex<HashMap<Key, Entry>>,
}

fn resource_version(object: &Value) -> Option<u64> {
    object
        .pointer("/metadata/resourceVersion")?
        .as_str()?
        .parse()
        .ok()
}

fn uid(object: &Value) -> Option<&str> {
    object.pointer("/metadata/uid")?.as_str()
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
        if entries.len() <= CAP {
            return;
        }
        entries.retain(|_, e| e.at().elapsed() <= RETENTION);
        while entries.len() > CAP {
            let Some(oldest) = entries.iter().min_by_key(|(_, e)| e.at()).map(|(k, _)| k.clone()) else {
                break;
            };
            entries.remove(&oldest);
        }
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The object as the plugin should see it, given what the cache has. Entries the cache has caught up
    /// with are dropped.
    pub(crate) fn merge(&self, key: &Key, cached: Option<Value>) -> Option<Value> {
        let mut entries = self.lock();
        let Some(entry) = entries.get(key) else {
            return cached;
        };
        let (keep, result) = match entry {
            Entry::Written { at, .. } | Entry::Deleted { at, .. } if at.elapsed() > RETENTION => {
                (false, cached)
            }
            Entry::Written { object, .. } => match &cached {
                Some(c) if resource_version(c) >= resource_version(object) => (false, cached),
                _ => (true, Some(object.clone())),
            },
            Entry::Deleted { uid: deleted, .. } => match &cached {
                None => (false, None),
                // The cache has seen the deletion start: from now on it shows the object terminating, as the
                // API server does (a plugin may wait for a Pod to be gone).
                Some(c) if c.pointer("/metadata/deletionTimestamp").is_some() => (false, cached),
                Some(c) if deleted.is_none() || uid(c) == deleted.as_deref() => (true, None),
                // A new object with the same name: the deletion is done.
                Some(_) => (false, cached),
            },
        };
        if !keep {
            entries.remove(key);
        }
        result
    }

    /// A list from the cache with the overlay applied: recent writes added or replaced, recent deletions
    /// removed.
    pub(crate) fn merge_list(
        &self,
        kind: &Kind,
        namespace: &str,
        cached: Vec<Value>,
        selector: &Selector,
    ) -> Vec<Value> {
        let pending: Vec<Key> = self
            .lock()
            .keys()
            .filter(|k| &k.kind == kind && k.namespace == namespace)
            .cloned()
            .collect();
        if pending.is_empty() {
            return cached
                .into_iter()
                .filter(|o| selector.matches_object(o))
                .collect();
        }
        let mut by_name: HashMap<String, Value> = cached
            .into_iter()
            .filter_map(|o| Some((o.pointer("/metadata/name")?.as_str()?.to_string(), o)))
            .collect();
        for key in pending {
            let merged = self.merge(&key, by_name.remove(&key.name));
            if let Some(object) = merged {
                by_name.insert(key.name.clone(), object);
            }
        }
        let mut items: Vec<Value> = by_name
            .into_values()
            .filter(|o| selector.matches_object(o))
            .collect();
        items.sort_by(|a, b| {
            a.pointer("/metadata/name")
                .and_then(Value::as_str)
                .cmp(&b.pointer("/metadata/name").and_then(Value::as_str))
        });
        items
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
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
            .merge_list(&Kind::new("", "v1", "Pod"), "ns", cached, &selector)
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
    fn lists_without_pending_writes_still_apply_the_selector() {
        let overlay = Overlay::default();
        let mut other = pod("other", "u9", "3");
        other["metadata"]["labels"] = json!({"app": "y"});
        let selector = Selector::parse("app=x").unwrap_or_default();
        let listed = overlay.merge_list(
            &Kind::new("", "v1", "Pod"),
            "ns",
            vec![pod("a", "u1", "1"), other],
            &selector,
        );
        assert_eq!(listed.len(), 1);
    }
}
