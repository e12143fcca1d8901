//! "Does the live object already say everything we would apply?" Server-side apply of an unchanged
//! object is still a request; answering this first keeps a steady-state reconcile free of writes.

use serde_json::Value;

/// Whether every field of `desired` is present in `live` with the same value. Objects may have more
/// fields live (defaults, other managers); lists must match element by element.
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(live), Value::Object(desired)) => desired
            .iter()
            .all(|(k, v)| v.is_null() || live.get(k).is_some_and(|l| contains(l, v))),
        (Value::Array(live), Value::Array(desired)) => {
            live.len() == desired.len() && live.iter().zip(desired).all(|(l, d)| contains(l, d))
        }
        (live, desired) => live == desired,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_on_the_live_object_do_not_count_as_differences() {
        let live =
            json!({"spec": {"ports": [{"name": "a", "port": 1, "protocol": "TCP"}], "type": "ClusterIP"}});
        assert!(contains(
            &live,
            &json!({"spec": {"ports": [{"name": "a", "port": 1}]}})
        ));
        assert!(!contains(
            &live,
            &json!({"spec": {"ports": [{"name": "a", "port": 2}]}})
        ));
        assert!(!contains(&live, &json!({"spec": {"ports": []}})));
        assert!(!contains(&live, &json!({"metadata": {"labels": {"x": "y"}}})));
    }
}
