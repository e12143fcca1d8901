//! Multi-document YAML (what `helm template` and `kustomize build` print) as JSON values.

use serde_json::Value;

use crate::{Error, Result};

/// Every non-empty document of `text`.
pub fn parse(text: &str) -> Result<Vec<Value>> {
    let mut objects = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(document)
            .map_err(|e| Error::Parse(format!("a rendered document is not valid YAML: {e}")))?;
        if !value.is_null() {
            objects.push(value);
        }
    }
    Ok(objects)
}

/// The objects of `kind`.
pub fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// The one object of `kind`, or an error saying how many there are.
pub fn one<'a>(objects: &'a [Value], kind: &str) -> Result<&'a Value> {
    match of_kind(objects, kind).as_slice() {
        [object] => Ok(object),
        found => Err(Error::Parse(format!(
            "{} objects of kind {kind}, not one",
            found.len()
        ))),
    }
}

/// `metadata.name` of `object` (empty when it has none).
pub fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// `metadata.namespace` of `object` (empty when it has none).
pub fn namespace(object: &Value) -> &str {
    object["metadata"]["namespace"].as_str().unwrap_or_default()
}

/// The arguments of the first container of a Deployment.
pub fn container_args(deployment: &Value) -> Vec<String> {
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .map(|args| args.iter().filter_map(|a| a.as_str().map(String::from)).collect())
        .unwrap_or_default()
}
