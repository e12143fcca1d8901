//! "Does the live object already carry everything we would write?" The host asks it before a server-side
//! apply (to skip writes that change nothing) and plugins ask it before deciding to write at all; both
//! must answer alike, or a plugin would write what the host then skips (or the other way round).

use serde_json::Value;

/// Whether every value in `intent` is present, equal, in `live`. Objects may have more fields live
/// (defaults, other managers); a `null` in the intent asks for nothing. Lists whose objects all carry a
/// `name` (or a `type`, as conditions do) are matched by that key, the way Kubernetes merges containers,
/// ports and conditions, so entries other managers added are not differences; other lists must match
/// element by element. Numbers compare by value (`1` equals `1.0`).
pub fn is_subset(intent: &Value, live: &Value) -> bool {
    match (intent, live) {
        (Value::Object(want), Value::Object(have)) => want.iter().all(|(k, v)| match have.get(k) {
            Some(h) => is_subset(v, h),
            None => v.is_null(),
        }),
        (Value::Array(want), Value::Array(have)) => match list_key(want) {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_on_the_live_object_do_not_count_as_differences() {
        let live =
            json!({"spec": {"ports": [{"name": "a", "port": 1, "protocol": "TCP"}], "type": "ClusterIP"}});
        assert!(is_subset(
            &json!({"spec": {"ports": [{"name": "a", "port": 1}]}}),
            &live
        ));
        assert!(!is_subset(
            &json!({"spec": {"ports": [{"name": "a", "port": 2}]}}),
            &live
        ));
        assert!(!is_subset(&json!({"metadata": {"labels": {"x": "y"}}}), &live));
        assert!(is_subset(&json!({"spec": {"clusterIP": null}}), &live));
    }

    #[test]
    fn keyed_lists_match_by_key_and_others_by_position() {
        let live = json!({"c": [{"name": "b", "v": 2}, {"name": "a", "v": 1}], "args": ["x", "y"]});
        assert!(is_subset(&json!({"c": [{"name": "a", "v": 1}]}), &live));
        assert!(!is_subset(&json!({"c": [{"name": "a", "v": 2}]}), &live));
        assert!(!is_subset(&json!({"args": ["x"]}), &live));
        assert!(!is_subset(&json!({"args": ["y", "x"]}), &live));
        assert!(is_subset(&json!({"n": 1}), &json!({"n": 1.0})));
    }
}
