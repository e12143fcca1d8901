//! Label-only intents: the one write a plugin may make to an object its object does not control itself but
//! controls through an object it owns (a "grandchild": the head Pod of a RayService's RayCluster, which
//! KubeRay's RayService labels `ray.io/serve=true|false`).
//!
//! Such an intent names the object and its labels and nothing else, and every label key must be one the
//! plugin's policy entry lists in `grandchildLabels` (`kuberay_core::ownership::label_only`, shared
//! with `FakeHost`); the host also checks each label's syntax. What the host sends is rebuilt from
//! those parts with the live object's uid, so the apply cannot create an object that has gone in the
//! meantime (the API server refuses a uid it cannot find) and carries no owner reference.

use std::collections::BTreeSet;

use kuberay_core::{Kind, ownership};
use serde_json::{Map, Value, json};

use crate::names;

/// The labels of a label-only intent for an object in `namespace`, or why `object` is not one (the SDK's
/// rule, which `FakeHost` applies too), sets a key outside `allowed`, or a label Kubernetes would refuse.
pub fn labels(
    object: &Value,
    namespace: &str,
    allowed: &BTreeSet<String>,
) -> Result<Map<String, Value>, String> {
    let labels = ownership::label_only(object, namespace, allowed)?;
    for (key, value) in &labels {
        names::label(key, value.as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
    }
    Ok(labels)
}

/// The server-side apply body the host sends for a label-only intent: the object named by kind, name,
/// namespace and `uid` (a precondition), and its labels.
pub fn intent(kind: &Kind, namespace: &str, name: &str, uid: &str, labels: Map<String, Value>) -> Value {
    json!({
        "apiVersion": kind.api_version(),
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "labels": labels},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve() -> BTreeSet<String> {
        ["ray.io/serve".to_string()].into()
    }

    fn pod(metadata: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata})
    }

    #[test]
    fn names_and_allowed_labels_pass() {
        let intent = pod(json!({"name": "c-head-x", "labels": {"ray.io/serve": "true"}}));
        let labels = labels(&intent, "ns", &serve()).unwrap();
        assert_eq!(Value::Object(labels), json!({"ray.io/serve": "true"}));
        let same_namespace = pod(json!({"name": "c-head-x", "namespace": "ns", "labels": {}}));
        assert!(labels_ok(&same_namespace));
        assert!(
            labels_ok(&pod(json!({"name": "c-head-x"}))),
            "no labels drops the plugin's"
        );
    }

    fn labels_ok(intent: &Value) -> bool {
        labels(intent, "ns", &serve()).is_ok()
    }

    #[test]
    fn anything_besides_labels_is_refused() {
        let with = |field: &str, value: Value| {
            let mut intent = pod(json!({"name": "c-head-x", "labels": {"ray.io/serve": "true"}}));
            intent[field] = value;
            labels(&intent, "ns", &serve()).unwrap_err()
        };
        assert!(with("spec", json!({"containers": []})).contains("set spec"));
        assert!(with("status", json!({})).contains("set status"));
        assert!(with("data", json!({"a": "b"})).contains("set data"));
        for (field, value) in [
            ("annotations", json!({"a": "b"})),
            ("ownerReferences", json!([{"uid": "1", "controller": true}])),
            ("finalizers", json!(["example.com/keep"])),
            ("uid", json!("1")),
            ("resourceVersion", json!("1")),
            ("generateName", json!("x-")),
        ] {
            let mut intent = pod(json!({"name": "c-head-x"}));
            intent["metadata"][field] = value;
            let refused = labels(&intent, "ns", &serve()).unwrap_err();
            assert!(refused.contains(&format!("metadata.{field}")), "{refused}");
        }
        let elsewhere = pod(json!({"name": "c-head-x", "namespace": "other"}));
        assert!(
            labels(&elsewhere, "ns", &serve())
                .unwrap_err()
                .contains("outside")
        );
        assert!(!labels_ok(&json!("not an object")));
        assert!(!labels_ok(&json!({"apiVersion": "v1", "kind": "Pod"})));
    }

    #[test]
    fn only_allowed_and_valid_label_keys() {
        for (key, value) in [
            ("ray.io/cluster", json!("victim")),
            ("ray.io/node-type", json!("worker")),
            ("ray.io/group", json!("g")),
            ("ray.io/identifier", json!("x")),
            ("app", json!("x")),
        ] {
            let intent = pod(json!({"name": "c-head-x", "labels": {key: value}}));
            let refused = labels(&intent, "ns", &serve()).unwrap_err();
            assert!(refused.contains("grandchildLabels"), "{refused}");
        }
        let bad_value = pod(json!({"name": "c", "labels": {"ray.io/serve": "no way"}}));
        assert!(
            labels(&bad_value, "ns", &serve())
                .unwrap_err()
                .contains("label value")
        );
        let not_string = pod(json!({"name": "c", "labels": {"ray.io/serve": true}}));
        assert!(!labels_ok(&not_string));
        let not_map = pod(json!({"name": "c", "labels": ["ray.io/serve"]}));
        assert!(!labels_ok(&not_map));
        let nothing_allowed = pod(json!({"name": "c", "labels": {"ray.io/serve": "true"}}));
        assert!(labels(&nothing_allowed, "ns", &BTreeSet::new()).is_err());
    }

    #[test]
    fn the_sent_intent_is_rebuilt_with_the_uid_and_no_owner() {
        let labels = json!({"ray.io/serve": "false"}).as_object().cloned().unwrap();
        let sent = intent(&Kind::new("", "v1", "Pod"), "ns", "c-head-x", "uid-1", labels);
        assert_eq!(
            sent,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": "c-head-x", "namespace": "ns", "uid": "uid-1", "labels": {"ray.io/serve": "false"}}})
        );
    }
}
