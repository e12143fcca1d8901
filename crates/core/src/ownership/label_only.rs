//! The one exception to "no adoption": a *label-only* intent on a grandchild, an object controlled by an
//! object the reconciled object controls (the head Pod of a RayService's RayCluster, which KubeRay's
//! RayService labels `ray.io/serve=true|false`). The intent names the object and its labels and nothing else
//! (`apiVersion`, `kind`, `metadata.name`, optionally `metadata.namespace` equal to the reconciled object's,
//! `metadata.labels`), and every key must be one the plugin's policy entry lists in `grandchildLabels`. The
//! host additionally checks the labels' syntax and sends the intent with the live object's uid and no owner
//! reference.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

const TOP_LEVEL: [&str; 3] = ["apiVersion", "kind", "metadata"];
const METADATA: [&str; 3] = ["name", "namespace", "labels"];

fn short(text: &str) -> String {
    text.chars().take(80).collect()
}

fn only(object: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(extra) => Err(format!("a label-only apply may not set {what}{}", short(extra))),
        None => Ok(()),
    }
}

/// The labels of a label-only intent for an object in `namespace` (keys with string values), or why
/// `object` is not one or sets a key outside `allowed`.
pub fn label_only(
    object: &Value,
    namespace: &str,
    allowed: &BTreeSet<String>,
) -> Result<Map<String, Value>, String> {
    let top = object.as_object().ok_or("the object is not a JSON object")?;
    only(top, &TOP_LEVEL, "")?;
    let meta = top
        .get("metadata")
        .and_then(Value::as_object)
        .ok_or("the object has no metadata")?;
    only(meta, &METADATA, "metadata.")?;
    if let Some(other) = meta.get("namespace").filter(|ns| ns.as_str() != Some(namespace)) {
        return Err(format!(
            "namespace {} is outside the reconciled object's namespace {namespace}",
            short(&other.to_string())
        ));
    }
    let labels = match meta.get("labels") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(labels)) => labels.clone(),
        Some(_) => return Err("metadata.labels is not a map".into()),
    };
    for (key, value) in &labels {
        if !value.is_string() {
            return Err(format!("label {} has a value that is not a string", short(key)));
        }
        if !allowed.contains(key) {
            return Err(format!(
                "label {} is not one the policy lets the plugin set on objects its object controls through another (grandchildLabels)",
                short(key)
            ));
        }
    }
    Ok(labels)
}
