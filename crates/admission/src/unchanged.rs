//! Deciding that a server-side apply would change nothing, so the write can be skipped. A write is skipped
//! only when the plugin applies exactly what it applied last time (so no field it used to own would be
//! released) and the live object already carries every value it asks for.

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::Mutex,
};

use serde_json::Value;

use crate::Key;

/// Whether every value in `intent` is present, equal, in `live`: the one rule plugins and host share
/// (`kuberay_rules::subset`), so a plugin never writes what the host then skips, or the other way round.
pub use kuberay_core::subset::is_subset;

/// Objects (per subresource) remembered at most; past this the least recently used are forgotten, which
/// costs one write that could have been skipped.
const CAP: usize = 50_000;

/// The parts of an object a plugin's writes are remembered for: the object, its status, and a label-only
/// apply (`crate::admission`).
pub const OBJECT: &str = "";
pub const STATUS: &str = "status";
pub const LABELS: &str = "labels";

/// An intent's hash and the tick it was last used at, per object and subresource.
type Hashes = HashMap<(Key, &'static str), (u64, u64)>;

/// What each plugin last applied to each object (as a hash), per subresource, with when it was last used.
#[derive(Default)]
pub struct LastApplied {
    hashes: Mutex<Hashes>,
    clock: std::sync::atomic::AtomicU64,
}

pub fn intent_hash(intent: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    intent.to_string().hash(&mut hasher);
    hasher.finish()
}

impl LastApplied {
    pub fn same_as_last(&self, key: &Key, subresource: &'static str, hash: u64) -> bool {
        let tick = self.tick();
        match self.lock().get_mut(&(key.clone(), subresource)) {
            Some((last, used)) => {
                *used = tick;
                *last == hash
            }
            None => false,
        }
    }

    pub fn record(&self, key: Key, subresource: &'static str, hash: u64) {
        let tick = self.tick();
        let mut hashes = self.lock();
        hashes.insert((key, subresource), (hash, tick));
        if hashes.len() > CAP {
            // Forget the least recently used tenth at once, so that eviction stays rare.
            let mut ticks: Vec<u64> = hashes.values().map(|(_, used)| *used).collect();
            let cut = CAP / 10;
            ticks.select_nth_unstable(cut);
            let threshold = ticks[cut];
            hashes.retain(|_, (_, used)| *used > threshold);
        }
    }

    /// Entries held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Forgets what was applied to an object (deleted), without walking the other entries.
    pub fn forget(&self, key: &Key) {
        let mut hashes = self.lock();
        for part in [OBJECT, STATUS, LABELS] {
            hashes.remove(&(key.clone(), part));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Hashes> {
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
    fn last_applied_stays_within_its_cap_and_keeps_what_is_used() {
        let key = |name: &str| Key {
            kind: kuberay_core::Kind::new("", "v1", "ConfigMap"),
            namespace: "ns".into(),
            name: name.into(),
        };
        let applied = LastApplied::default();
        applied.record(key("hot"), "", 1);
        for i in 0..CAP + 10 {
            applied.record(key(&format!("c{i}")), "", 2);
            if i % 1000 == 0 {
                assert!(applied.same_as_last(&key("hot"), "", 1));
            }
        }
        assert!(applied.len() <= CAP, "{}", applied.len());
        assert!(applied.same_as_last(&key("hot"), "", 1));
        assert!(!applied.same_as_last(&key("c0"), "", 2));
    }

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
