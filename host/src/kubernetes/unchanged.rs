//! Deciding that a server-side apply would change nothing, so the write can be skipped. A write is skipped
//! only when the plugin applies exactly what it applied last time (so no field it used to own would be
//! released) and the live object already carries every value it asks for.

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::Mutex,
};

use serde_json::Value;

use super::overlay::Key;

/// Whether every value in `intent` is present, equal, in `live`. Lists whose objects all carry a `name` (or
/// a `type`, as conditions do) are matched by that key, the way Kubernetes merges containers, ports and
/// conditions; other lists must match element by element.
pub fn is_subset(intent: &Value, live: &Value) -> bool {
    match (intent, live) {
        (Value::Object(want), Value::Object(have)) => want.iter().all(|(k, v)| match have.get(k) {
            Some(h) => is_subset(v, h),
            None => v.is_null(),
        }),
        (Value::Array(want), Value::Array(have)) => match list_key(want) {
            // Entries other managers added (another controller's condition, a mutating webhook's
            // container) are not ours to judge; removals of our own entries show up as a changed intent.
            Some(key) => want
                .iter()
                .all(|w| have.iter().any(|h| h.get(key) == w.get(key) && is_subset(w, h))),
            None => want.len() == have.len() && want.iter().zip(have).all(|(w, h)| is_subset(w, h)),
        },
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// The key of a list of keyed objects, if it is one.
fn list_key(items: &[Value]) -> Option<&'static str> {
    if items.is_empty() {
        return None;
    }
    ["name", "type"].into_iter().find(|key| {
        items
            .iter()
            .all(|i| i.get(*key).and_then(Value::as_str).is_some())
    })
}

/// What each plugin last applied to each object (as a hash), per subresource.
#[derive(Default)]
pub struct LastApplied {
    hashes: Mutex<HashMap<(Key, &'static str), u64>>,
}

pub fn intent_hash(intent: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    intent.to_string().hash(&mut hasher);
    hasher.finish()
}

impl LastApplied {
    pub fn same_as_last(&self, key: &Key, subresource: &'static str, hash: u64) -> bool {
        self.lock().get(&(key.clone(), subresource)) == Some(&hash)
    }

    pub fn record(&self, key: Key, subresource: &'static str, hash: u64) {
        self.lock().insert((key, subresource), hash);
    }

    pub fn forget(&self, key: &Key) {
        self.lock().retain(|(k, _), _| k != key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Key, &'static str), u64>> {
        self.hashes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaulted_and_extra_fields_do_not_count_as_changes() {
        let intent = json!({"spec": {"ports": [{"name": "dashboard", "port": 8265}], "clusterIP": "None"}});
        let live = json!({"spec": {
            "ports": [{"name": "dashboard", "port": 8265, "protocol": "TCP", "targetPort": 8265}],
            "clusterIP": "None", "sessionAffinity": "None",
        }, "status": {}});
        assert!(is_subset(&intent, &live));
        assert!(!is_subset(&json!({"spec": {"clusterIP": "10.0.0.1"}}), &live));
        assert!(!is_subset(
            &json!({"spec": {"ports": [{"name": "serve", "port": 8000}]}}),
            &live
        ));
        assert!(is_subset(&json!({"a": null}), &json!({})));
        assert!(!is_subset(&json!({"a": [1, 2]}), &json!({"a": [2, 1]})));
        assert!(is_subset(&json!({"n": 1}), &json!({"n": 1.0})));
    }
}
