//! KubeRay's sample manifests (`tests/fixtures/kuberay-samples`) and the objects KubeRay's operator makes of
//! them (`tests/fixtures/kuberay-objects`, one golden file per sample, recorded with KubeRay v1.7.0 by
//! `make kuberay-samples-record`). What the recorder (`tests/kuberay-samples`) and the operator's test
//! (`host/tests/all/kuberay_samples.rs`) share:
//!
//! - which samples run and which are skipped, and why ([`SKIPPED`], [`samples`]);
//! - applying a sample into a namespace of its own ([`apply`]);
//! - the normalized graph of what an operator made there ([`graph`]): the objects it created with their
//!   kind, name, controller owner, `ray.io/*` and `app.kubernetes.io/*` labels and a few kind-specific facts,
//!   and the settled status of the sample's own `ray.io` objects, without volatile values;
//! - comparing two graphs field by field ([`diff`]);
//! - watching many namespaces at once until their graphs settle ([`observe`]);
//! - the recording profiles: KubeRay with a batch scheduler or alpha feature gates on the samples meant for
//!   them, golden graphs under `<group>/<profile>/` ([`profiles`]).

pub mod diff;
pub mod graph;
pub mod observe;
pub mod profiles;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use kube::{
    Api, Client, Discovery,
    api::{DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
    discovery::Scope,
};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// The samples, relative to the checkout.
pub const SAMPLES_DIR: &str = "tests/fixtures/kuberay-samples";
/// The golden graphs, relative to the checkout: `<sample path>` with the same folders.
pub const GOLDEN_DIR: &str = "tests/fixtures/kuberay-objects";
/// The KubeRay operator the golden graphs were recorded with.
pub const KUBERAY_VERSION: &str = "v1.7.0";
/// The field manager that applies the samples.
pub const APPLY_MANAGER: &str = "kuberay-samples";

/// Samples that are not recorded, and why: each needs a third-party CRD (its file contains such objects).
/// Every other YAML file under [`SAMPLES_DIR`] is recorded.
pub const SKIPPED: &[(&str, &str)] = &[
    (
        "agent-sandbox/sandbox.yaml",
        "SandboxTemplate and SandboxWarmPool (extensions.agents.x-k8s.io/v1beta1, kubernetes-sigs/agent-sandbox)",
    ),
    (
        "ray-cluster.kai-gpu-sharing.yaml",
        "Queue (scheduling.run.ai/v2, the KAI scheduler); its RayCluster asks for KubeRay's --batch-scheduler=kai-scheduler",
    ),
    (
        "ray-cluster.kai-scheduler.yaml",
        "Queue (scheduling.run.ai/v2, the KAI scheduler); its RayCluster asks for KubeRay's --batch-scheduler=kai-scheduler",
    ),
    (
        "ray-cluster.volcano-scheduler-queue.yaml",
        "Queue (scheduling.volcano.sh/v1beta1, Volcano); its RayCluster asks for KubeRay's --batch-scheduler=volcano",
    ),
    (
        "ray-job.volcano-scheduler-queue.yaml",
        "Queue (scheduling.volcano.sh/v1beta1, Volcano); its RayJob asks for KubeRay's --batch-scheduler=volcano",
    ),
];

/// One sample manifest.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Its path under [`SAMPLES_DIR`] (`ray-cluster.sample.yaml`, `pytorch-mnist/ray-job.pytorch-mnist.yaml`).
    pub path: String,
    /// Its YAML documents, in file order.
    pub documents: Vec<Value>,
}

/// The reason `path` is skipped, if it is.
pub fn skip_reason(path: &str) -> Option<&'static str> {
    SKIPPED.iter().find(|(p, _)| *p == path).map(|(_, why)| *why)
}

/// Every YAML file under the samples folder of `root` (a checkout), relative to it, sorted.
pub fn sample_paths(root: &Path) -> Result<Vec<String>> {
    let base = root.join(SAMPLES_DIR);
    let mut out = Vec::new();
    let mut dirs = vec![base.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).map_err(Error::io(format!("reading {}", dir.display())))? {
            let path = entry.map_err(Error::io("reading a directory entry"))?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let relative = path
                    .strip_prefix(&base)
                    .map_err(|e| Error::Other(e.to_string()))?
                    .to_string_lossy()
                    .into_owned();
                out.push(relative);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Reads one sample.
pub fn load(root: &Path, path: &str) -> Result<Sample> {
    let file = root.join(SAMPLES_DIR).join(path);
    let text = std::fs::read_to_string(&file).map_err(Error::io(format!("reading {}", file.display())))?;
    let mut documents = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value = Value::deserialize(doc).map_err(|e| Error::Other(format!("{path}: {e}")))?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(Sample {
        path: path.to_string(),
        documents,
    })
}

/// Every sample that is not skipped, sorted by path.
pub fn samples(root: &Path) -> Result<Vec<Sample>> {
    sample_paths(root)?
        .into_iter()
        .filter(|p| skip_reason(p).is_none())
        .map(|p| load(root, &p))
        .collect()
}

/// The golden file of a sample.
pub fn golden_path(root: &Path, sample: &str) -> PathBuf {
    root.join(GOLDEN_DIR).join(sample)
}

/// A namespace prefix for a sample: its file name, lower-case, with `-` for anything else, short enough for a
/// namespace name with a random suffix.
pub fn namespace_prefix(sample: &str) -> String {
    let stem = sample.trim_end_matches(".yaml").trim_end_matches(".yml");
    let mut out: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    out.truncate(50);
    let trimmed = out.trim_matches('-').to_string();
    format!("s-{trimmed}")
}

/// An object the sample itself contains, as applied: its kind and (for `generateName`) actual name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AppliedObject {
    pub kind: String,
    pub name: String,
    /// Its `generateName`, when the sample names it that way.
    pub generate_name: Option<String>,
}

/// Creates every document of `sample` in `namespace`, in file order, as `kubectl create -f` (or a first
/// `kubectl apply -f`) would: a POST, so that the API server drops the nulls of a sample (`metadata: null`
/// where the original has only comments) as it does for a create, which a server-side apply would refuse. Cluster-scoped documents (ClusterRoles and their bindings,
/// GatewayClasses) are applied cluster-wide. The samples assume the namespace `default`: a namespaced
/// document's own namespace is replaced by `namespace`, and so is `default` as the namespace of a binding's
/// subject. Returns the namespaced objects applied.
pub async fn apply(
    client: &Client,
    discovery: &Discovery,
    namespace: &str,
    sample: &Sample,
) -> Result<BTreeSet<AppliedObject>> {
    let mut applied = BTreeSet::new();
    for document in &sample.documents {
        let mut document = document.clone();
        if let Some(subjects) = document.get_mut("subjects").and_then(Value::as_array_mut) {
            for subject in subjects {
                if subject["namespace"] == "default" {
                    subject["namespace"] = Value::from(namespace);
                }
            }
        }
        let object: DynamicObject = serde_json::from_value(document.clone())
            .map_err(|e| Error::Other(format!("{}: not a Kubernetes object: {e}", sample.path)))?;
        let types = object
            .types
            .clone()
            .ok_or_else(|| Error::Other(format!("{}: a document without apiVersion/kind", sample.path)))?;
        let gvk = GroupVersionKind::try_from(&types).map_err(|e| Error::Other(e.to_string()))?;
        let (resource, capabilities) = discovery.resolve_gvk(&gvk).ok_or_else(|| {
            Error::Other(format!(
                "{}: {} {} is not served by the API server",
                sample.path, types.api_version, types.kind
            ))
        })?;
        let namespaced = capabilities.scope == Scope::Namespaced;
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(client.clone(), namespace, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        let mut object = object;
        if namespaced {
            object.metadata.namespace = Some(namespace.to_string());
        }
        let generate_name = object.metadata.generate_name.clone();
        let what = object
            .metadata
            .name
            .clone()
            .or_else(|| generate_name.as_ref().map(|p| format!("{p}*")))
            .unwrap_or_default();
        let created = api
            .create(
                &PostParams {
                    field_manager: Some(APPLY_MANAGER.into()),
                    ..Default::default()
                },
                &object,
            )
            .await;
        let name = match (created, &object.metadata.name) {
            (Ok(created), _) => created.metadata.name.unwrap_or_default(),
            // A cluster-scoped object an earlier sample (or run) created: brought up to date.
            (Err(kube::Error::Api(status)), Some(name)) if status.code == 409 && !namespaced => {
                api.patch(
                    name,
                    &PatchParams::apply(APPLY_MANAGER).force(),
                    &Patch::Apply(&object),
                )
                .await
                .map_err(|e| Error::Other(format!("{}: applying {} {name}: {e}", sample.path, types.kind)))?;
                name.clone()
            }
            (Err(e), _) => {
                return Err(Error::Other(format!(
                    "{}: creating {} {what}: {e}",
                    sample.path, types.kind
                )));
            }
        };
        if namespaced {
            applied.insert(AppliedObject {
                kind: types.kind.clone(),
                name,
                generate_name,
            });
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_prefixes_are_valid_and_short() {
        let p = namespace_prefix("ray-data-image-resize/ray-data-image-resize-gcsfusecsi-job.yaml");
        assert!(p.len() <= 52, "{p}");
        assert!(
            p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{p}"
        );
        assert!(!p.ends_with('-'));
        assert_eq!(
            namespace_prefix("ray-cluster.sample.yaml"),
            "s-ray-cluster-sample"
        );
    }
}
