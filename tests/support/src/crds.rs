//! Installing the project's CRDs. They are too large for client-side `kubectl apply` (its
//! last-applied-configuration annotation is capped at 256 KiB), so they are server-side applied.

use std::{path::Path, time::Duration};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams},
};
use serde::Deserialize;

use crate::error::{Error, Result};

const FIELD_MANAGER: &str = "kuberay-testenv";

/// Every CRD in the YAML files of `dir`.
pub fn load(dir: &Path) -> Result<Vec<CustomResourceDefinition>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(Error::io(format!("reading {}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(Error::io(format!("reading {}", file.display())))?;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_json::Value::deserialize(doc)
                .map_err(|e| Error::Other(format!("{}: {e}", file.display())))?;
            if value.is_null() {
                continue;
            }
            let crd: CustomResourceDefinition = serde_json::from_value(value)
                .map_err(|e| Error::Other(format!("{}: {e}", file.display())))?;
            crds.push(crd);
        }
    }
    Ok(crds)
}

/// Applies the CRDs of `dir` that the API server does not already hold as the files say, and waits until each is
/// Established and served. Every test calls this at its start: server-side applying 4 MiB of unchanged ray.io
/// schemas took the API server about a second per CRD each time (946 applies, 1,116 s of request time in one run of the
/// operator's tests), so a CRD that already says everything its file says is left as it is.
pub async fn install(client: &Client, dir: &Path) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crds = load(dir)?;
    let mut applied = Vec::new();
    for crd in &crds {
        let current = api.get_opt(&crd.name_any()).await?;
        if current.is_some_and(|current| holds(&current, crd)) {
            continue;
        }
        api.patch(
            &crd.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(crd),
        )
        .await?;
        applied.push(crd);
    }
    for crd in applied {
        wait_established(&api, &crd.name_any()).await?;
    }
    for crd in &crds {
        wait_served(client, crd).await?;
    }
    Ok(())
}

/// Whether `current` is Established and already says everything `wanted` says in its spec, labels and
/// annotations (what the API server adds, such as defaults, is not compared).
fn holds(current: &CustomResourceDefinition, wanted: &CustomResourceDefinition) -> bool {
    if !is_established(current) {
        return false;
    }
    let (Ok(current), Ok(wanted)) = (serde_json::to_value(current), serde_json::to_value(wanted)) else {
        return false;
    };
    ["/spec", "/metadata/labels", "/metadata/annotations"]
        .iter()
        .all(|pointer| match wanted.pointer(pointer) {
            None => true,
            Some(want) => current.pointer(pointer).is_some_and(|have| contains(have, want)),
        })
}

/// Whether `have` has every field of `want` with the same value (arrays element by element).
fn contains(have: &serde_json::Value, want: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (have, want) {
        (Value::Object(have), Value::Object(want)) => want
            .iter()
            .all(|(key, want)| have.get(key).is_some_and(|have| contains(have, want))),
        (Value::Array(have), Value::Array(want)) => {
            have.len() == want.len() && have.iter().zip(want).all(|(have, want)| contains(have, want))
        }
        _ => have == want,
    }
}

fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Established" && c.status == "True")
}

/// Waits (up to 10 s) until the CRD `name` is Established.
async fn wait_established(api: &Api<CustomResourceDefinition>, name: &str) -> Result<()> {
    for _ in 0..100 {
        if is_established(&api.get(name).await?) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(Error::Other(format!("CRD {name} did not become Established")))
}

/// Waits until objects of `crd` can be listed: for a moment after a CRD is Established the API server may
/// still answer 429 "storage is (re)initializing".
async fn wait_served(client: &Client, crd: &CustomResourceDefinition) -> Result<()> {
    let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
        return Ok(());
    };
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", crd.spec.group, version.name),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    for _ in 0..200 {
        match api.list(&ListParams::default().limit(1)).await {
            Err(kube::Error::Api(status)) if status.code == 429 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
            Ok(_) => return Ok(()),
        }
    }
    Err(Error::Other(format!("{} is not served", crd.name_any())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::contains;

    #[test]
    fn a_field_added_by_the_server_is_held_a_changed_or_missing_one_is_not() {
        let want = json!({"a": {"b": [1, {"c": "x"}]}, "d": true});
        assert!(contains(
            &json!({"a": {"b": [1, {"c": "x", "e": 2}]}, "d": true, "f": 0}),
            &want
        ));
        assert!(!contains(&json!({"a": {"b": [1, {"c": "y"}]}, "d": true}), &want));
        assert!(!contains(&json!({"a": {"b": [1]}, "d": true}), &want));
        assert!(!contains(&json!({"a": {"b": [1, {"c": "x"}]}}), &want));
    }
}
