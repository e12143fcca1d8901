//! The CustomResourceDefinitions of the four kinds, rendered from the Rust types (feature `schema`).
//!
//! schemars describes the types; this module turns that description into what the API server accepts and
//! what KubeRay's CRDs contain: every `$ref` inlined, no descriptions (KubeRay's CRDs have none either: the
//! three Pod templates in a RayJob's schema would carry Kubernetes' documentation three times), optional
//! fields without `null`, and the Kubernetes types corrected where `k8s-openapi`'s schemas are looser than
//! the API server's own (`src/crd/kubernetes.rs`). The result is checked to be a structural schema before
//! it is returned, so a type that cannot be expressed fails here rather than at `kubectl apply`.

mod kubernetes;
mod schema;

use k8s_openapi::{
    ListableResource, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::{RayCluster, RayCronJob, RayJob, RayService};

/// Why the CRDs could not be rendered. Each is a bug in the types or in this module, not a runtime
/// condition, and names the kind and the place so that it can be fixed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("schema of {kind}: {message}")]
    Schema { kind: String, message: String },
    #[error("the CRD of {kind} is not a valid CustomResourceDefinition: {source}")]
    Crd {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("rendering the CRD of {kind} as YAML: {source}")]
    Yaml {
        kind: String,
        #[source]
        source: serde_yaml::Error,
    },
}

/// One rendered CRD file of `crds/`.
#[derive(Clone, Debug, PartialEq)]
pub struct CrdFile {
    /// `ray.io_<plural>.yaml`, KubeRay's file name.
    pub file_name: String,
    pub contents: String,
}

/// What is printed on top of every file: the files are generated, and too large for client-side apply.
pub const FILE_HEADER: &str = "\
# Generated from the Rust types in crds/src/ by `make crds`; do not edit.
# Too large for client-side `kubectl apply` (its last-applied annotation is capped at 256 KiB):
# install with `kubectl apply --server-side -f crds/`.
";

/// A column of `kubectl get`.
struct Column {
    name: &'static str,
    type_: &'static str,
    json_path: &'static str,
    /// 1 shows the column only with `-o wide`.
    priority: i32,
}

const fn column(name: &'static str, type_: &'static str, json_path: &'static str) -> Column {
    Column {
        name,
        type_,
        json_path,
        priority: 0,
    }
}

const fn wide(name: &'static str, type_: &'static str, json_path: &'static str) -> Column {
    Column {
        name,
        type_,
        json_path,
        priority: 1,
    }
}

const AGE: Column = column("age", "date", ".metadata.creationTimestamp");

/// KubeRay's printer columns, in KubeRay's order, so `kubectl get` looks the same with either operator.
const RAYCLUSTER_COLUMNS: &[Column] = &[
    column("desired workers", "integer", ".status.desiredWorkerReplicas"),
    column("available workers", "integer", ".status.availableWorkerReplicas"),
    column("cpus", "string", ".status.desiredCPU"),
    column("memory", "string", ".status.desiredMemory"),
    column("gpus", "string", ".status.desiredGPU"),
    wide("tpus", "string", ".status.desiredTPU"),
    column("status", "string", ".status.state"),
    AGE,
    wide("head pod IP", "string", ".status.head.podIP"),
    wide("head service IP", "string", ".status.head.serviceIP"),
];

const RAYJOB_COLUMNS: &[Column] = &[
    column("job status", "string", ".status.jobStatus"),
    column("deployment status", "string", ".status.jobDeploymentStatus"),
    column("ray cluster name", "string", ".status.rayClusterName"),
    column("start time", "string", ".status.startTime"),
    column("end time", "string", ".status.endTime"),
    AGE,
];

const RAYSERVICE_COLUMNS: &[Column] = &[
    column("service status", "string", ".status.serviceStatus"),
    column("num serve endpoints", "string", ".status.numServeEndpoints"),
];

const RAYCRONJOB_COLUMNS: &[Column] = &[
    column("schedule", "string", ".spec.schedule"),
    column("timezone", "string", ".spec.timeZone"),
    column("last schedule", "date", ".status.lastScheduleTime"),
    AGE,
    column("suspend", "boolean", ".spec.suspend"),
];

/// The facts about Kubernetes types that `src/crd/kubernetes.json` must hold, computed from the OpenAPI v3
/// documents an API server publishes (`/openapi/v3/api/v1`, `/openapi/v3/apis/networking.k8s.io/v1`).
/// The end-to-end tests compare the file with this, so that the file follows the Kubernetes version the
/// tests run against.
pub fn kubernetes_facts(openapi_documents: &[Value]) -> Result<Value, Error> {
    let mut generator = schema::settings().into_generator();
    generator.subschema_for::<crate::RayClusterSpec>();
    generator.subschema_for::<crate::RayClusterStatus>();
    generator.subschema_for::<crate::RayCronJobSpec>();
    generator.subschema_for::<crate::RayCronJobStatus>();
    generator.subschema_for::<crate::RayJobSpec>();
    generator.subschema_for::<crate::RayJobStatus>();
    generator.subschema_for::<crate::RayServiceSpec>();
    generator.subschema_for::<crate::RayServiceStatuses>();
    let definitions = generator.take_definitions(false);
    kubernetes::facts_from_openapi(&definitions, openapi_documents).map_err(|message| Error::Schema {
        kind: "Kubernetes types".into(),
        message,
    })
}

/// The four CRDs, in the order of their file names.
pub fn custom_resource_definitions() -> Result<Vec<CustomResourceDefinition>, Error> {
    definitions()?
        .into_iter()
        .map(|(kind, crd)| serde_json::from_value(crd).map_err(|source| Error::Crd { kind, source }))
        .collect()
}

/// The files of `crds/`: [`FILE_HEADER`] and the CRD as YAML, with keys sorted so that the output does not
/// depend on serde_json's `preserve_order` feature being enabled somewhere in the build.
///
/// They are rendered from the JSON the CRDs are built as rather than from [`CustomResourceDefinition`],
/// whose `f64` bounds would print `minimum: 1` as `1.0`; [`custom_resource_definitions`] proves that this
/// JSON is a CustomResourceDefinition, and the tests that nothing is lost in between.
pub fn render() -> Result<Vec<CrdFile>, Error> {
    definitions()?
        .into_iter()
        .map(|(kind, crd)| {
            serde_json::from_value::<CustomResourceDefinition>(crd.clone()).map_err(|source| Error::Crd {
                kind: kind.clone(),
                source,
            })?;
            let plural = crd
                .pointer("/spec/names/plural")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let file_name = format!("{}_{plural}.yaml", crate::GROUP);
            let yaml =
                serde_yaml::to_string(&schema::sorted(crd)).map_err(|source| Error::Yaml { kind, source })?;
            Ok(CrdFile {
                file_name,
                contents: format!("{FILE_HEADER}{yaml}"),
            })
        })
        .collect()
}

/// `(kind, CRD as JSON)` of the four kinds, in the order of their file names.
fn definitions() -> Result<Vec<(String, Value)>, Error> {
    Ok(vec![
        definition::<RayCluster, crate::RayClusterSpec, crate::RayClusterStatus>(RAYCLUSTER_COLUMNS)?,
        definition::<RayCronJob, crate::RayCronJobSpec, crate::RayCronJobStatus>(RAYCRONJOB_COLUMNS)?,
        definition::<RayJob, crate::RayJobSpec, crate::RayJobStatus>(RAYJOB_COLUMNS)?,
        definition::<RayService, crate::RayServiceSpec, crate::RayServiceStatuses>(RAYSERVICE_COLUMNS)?,
    ])
}

fn definition<K, Spec, Status>(columns: &[Column]) -> Result<(String, Value), Error>
where
    K: ListableResource,
    Spec: JsonSchema,
    Status: JsonSchema,
{
    let kind = K::KIND;
    let error = |message: String| Error::Schema {
        kind: kind.to_owned(),
        message,
    };
    let (spec, status) = schema::spec_and_status::<Spec, Status>().map_err(error)?;
    let root = json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            // The API server owns the top-level metadata schema and refuses anything more specific here.
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    });
    schema::check_structural(&root, "").map_err(error)?;

    let columns: Vec<Value> = columns
        .iter()
        .map(|c| {
            let mut column = json!({"name": c.name, "type": c.type_, "jsonPath": c.json_path});
            if c.priority != 0 {
                column["priority"] = json!(c.priority);
            }
            column
        })
        .collect();
    let singular = kind.to_lowercase();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", K::URL_PATH_SEGMENT, K::GROUP)},
        "spec": {
            "group": K::GROUP,
            "names": {
                "kind": kind,
                "listKind": K::LIST_KIND,
                "plural": K::URL_PATH_SEGMENT,
                "singular": singular,
                "categories": ["all"],
            },
            "scope": "Namespaced",
            "versions": versions(kind, &columns, &root),
        },
    });
    Ok((kind.to_owned(), crd))
}

/// The kinds KubeRay also serves as `ray.io/v1alpha1` (deprecated, not stored).
const SERVED_AS_V1ALPHA1: [&str; 3] = ["RayCluster", "RayJob", "RayService"];

/// `v1`, served and stored, and for the kinds KubeRay still serves as `v1alpha1`, that version too: served
/// with KubeRay's deprecation warning, never stored, with no conversion (the API server only rewrites
/// `apiVersion`, as with KubeRay's CRDs). Its schema is `v1`'s, where KubeRay keeps the older one: a
/// `v1alpha1` client can also send `v1`'s newer fields.
fn versions(kind: &str, columns: &[Value], root: &Value) -> Value {
    let version = |name: &str, storage: bool| {
        json!({
            "name": name,
            "served": true,
            "storage": storage,
            "subresources": {"status": {}},
            "additionalPrinterColumns": columns,
            "schema": {"openAPIV3Schema": root},
        })
    };
    let mut versions = vec![version(crate::VERSION, true)];
    if SERVED_AS_V1ALPHA1.contains(&kind) {
        let mut alpha = version("v1alpha1", false);
        alpha["deprecated"] = json!(true);
        alpha["deprecationWarning"] = json!(format!(
            "ray.io/v1alpha1 {kind} is deprecated; use ray.io/v1 {kind}."
        ));
        versions.push(alpha);
    }
    Value::Array(versions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal, with numbers compared by value (`1` and `1.0`).
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
            }
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same(v, w))
            }
            (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
            (a, b) => a == b,
        }
    }

    #[test]
    fn the_rendered_json_loses_nothing_as_a_custom_resource_definition() {
        for (kind, json) in definitions().unwrap() {
            let typed: CustomResourceDefinition = serde_json::from_value(json.clone()).unwrap();
            assert!(same(&json, &serde_json::to_value(typed).unwrap()), "{kind}");
        }
    }
}
