//! KubeRay's compute-template middleware of the pass-through: a RayCluster, RayJob or RayService created
//! (`POST` to its collection) or replaced (`PUT` to it) with `computeTemplate: <name>` on its head group or
//! a worker group gets that compute template's sizing written into the group's Pod template before the
//! request goes on to the API server:
//!
//! - every container: `cpu` and `memory` limits and requests (requests equal to limits);
//! - the `ray-head` container of the head group, the `ray-worker` container of a worker group: the
//!   template's GPUs (its accelerator, `nvidia.com/gpu` when it names none) and extended resources;
//! - the Pod template: the template's tolerations (after its own), and the annotation
//!   `ray.io/compute-template: <name>`.
//!
//! The groups are looked for where each kind keeps them: `spec.rayClusterSpec` (RayJob),
//! `spec.rayClusterConfig` (RayService), else `spec` itself (RayCluster). The `computeTemplate` field
//! stays in the body: the API server prunes it, since the CRDs do not have it.
//!
//! The template is read as the caller: one the caller cannot read, or that does not exist, fails the
//! request with 422 and KubeRay's message, and nothing is created. The body must be JSON or YAML
//! (`Content-Type`), as KubeRay's middleware requires; it goes on as JSON.

use std::collections::BTreeMap;

use axum::body::{Body, Bytes};
use http::{HeaderValue, Method, Response, StatusCode, header, request::Parts};
use serde_json::{Map, Value, json};

use crate::{
    api::ComputeTemplate,
    context::CallContext,
    convert::{compute_template, labels},
    resources,
};

/// The kinds whose creates and replacements go through the middleware.
const PLURALS: [&str; 3] = ["rayclusters", "rayjobs", "rayservices"];

/// The namespace of a request the middleware applies to: `POST .../namespaces/{ns}/{plural}` or
/// `PUT .../namespaces/{ns}/{plural}/{name}` of RayClusters, RayJobs and RayServices.
pub fn applies_to<'a>(method: &Method, path: &'a str) -> Option<&'a str> {
    let rest = path.strip_prefix(super::PREFIX)?.strip_prefix("/namespaces/")?;
    let segments: Vec<&str> = rest.split('/').collect();
    let (namespace, plural, named) = match segments.as_slice() {
        [namespace, plural] => (*namespace, *plural, false),
        [namespace, plural, name] if !name.is_empty() => (*namespace, *plural, true),
        _ => return None,
    };
    let method_fits = if named {
        method == Method::PUT
    } else {
        method == Method::POST
    };
    (method_fits && !namespace.is_empty() && PLURALS.contains(&plural)).then_some(namespace)
}

/// Why a body cannot go through the middleware (a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error(
        "the request body must be JSON or YAML (Content-Type application/json or application/yaml) to \
         apply compute templates, not {0:?}"
    )]
    ContentType(String),
    #[error("the request body is not a {format} object: {reason}")]
    Unreadable { format: &'static str, reason: String },
}

/// The body as a JSON object, read as its `Content-Type` says (JSON or YAML).
pub fn parse_body(content_type: &str, body: &[u8]) -> Result<Map<String, Value>, BodyError> {
    let unreadable = |format: &'static str, reason: String| BodyError::Unreadable { format, reason };
    if content_type.contains("application/json") {
        serde_json::from_slice(body).map_err(|e| unreadable("JSON", e.to_string()))
    } else if content_type.contains("application/yaml") {
        serde_yaml::from_slice(body).map_err(|e| unreadable("YAML", e.to_string()))
    } else {
        Err(BodyError::ContentType(content_type.to_string()))
    }
}

/// Where a Pod template is: the head group or the worker group at this index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Head,
    Worker(usize),
}

impl Group {
    /// The Ray container the template's accelerators go to.
    fn ray_container(self) -> &'static str {
        match self {
            Self::Head => "ray-head",
            Self::Worker(_) => "ray-worker",
        }
    }
}

/// The cluster spec of the body's object, where its kind keeps it (`None`: no `spec` object).
fn cluster_spec(object: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    let spec = object.get_mut("spec")?.as_object_mut()?;
    // The same order as KubeRay's: a RayJob's, a RayService's, else the spec itself.
    let nested = ["rayClusterSpec", "rayClusterConfig"]
        .into_iter()
        .find(|key| spec.get(*key).is_some_and(Value::is_object));
    match nested {
        Some(key) => spec.get_mut(key)?.as_object_mut(),
        None => Some(spec),
    }
}

/// The groups of the body that name a compute template, with the name.
pub fn requested(object: &mut Map<String, Value>) -> Vec<(Group, String)> {
    let Some(spec) = cluster_spec(object) else {
        return Vec::new();
    };
    let name = |group: &Value| group.get("computeTemplate")?.as_str().map(str::to_string);
    let head = spec
        .get("headGroupSpec")
        .and_then(&name)
        .map(|n| (Group::Head, n));
    let workers = spec
        .get("workerGroupSpecs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, group)| name(group).map(|n| (Group::Worker(i), n)));
    head.into_iter().chain(workers).collect()
}

/// Writes `template` into `group` of the body (a group without a Pod template is left as it is, as
/// KubeRay leaves it).
pub fn apply(object: &mut Map<String, Value>, group: Group, template: &ComputeTemplate) {
    let Some(spec) = cluster_spec(object) else {
        return;
    };
    let group_spec = match group {
        Group::Head => spec.get_mut("headGroupSpec"),
        Group::Worker(i) => spec
            .get_mut("workerGroupSpecs")
            .and_then(|groups| groups.get_mut(i)),
    };
    let Some(pod_template) = group_spec
        .and_then(|g| g.get_mut("template"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let annotations = object_at(object_at(pod_template, "metadata"), "annotations");
    annotations.insert(labels::COMPUTE_TEMPLATE.into(), template.name.clone().into());
    let Some(pod_spec) = pod_template.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    size_containers(pod_spec, group, template);
    if !template.tolerations.is_empty() {
        // As the template stores them, not as the v1 API maps them onto Pods.
        let tolerations = template
            .tolerations
            .iter()
            .map(|t| json!({"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}));
        let mut all = match pod_spec.remove("tolerations") {
            Some(Value::Array(own)) => own,
            _ => Vec::new(),
        };
        all.extend(tolerations);
        pod_spec.insert("tolerations".into(), Value::Array(all));
    }
}

/// CPU and memory for every container; accelerators and extended resources for the group's Ray container.
fn size_containers(pod_spec: &mut Map<String, Value>, group: Group, template: &ComputeTemplate) {
    let Some(containers) = pod_spec.get_mut("containers").and_then(Value::as_array_mut) else {
        return;
    };
    let sizes = BTreeMap::from([
        ("cpu".to_string(), json!(template.cpu.to_string())),
        (
            "memory".to_string(),
            json!(compute_template::memory_quantity(template)),
        ),
    ]);
    let mut accelerators = BTreeMap::new();
    if template.gpu != 0 {
        accelerators.insert(
            compute_template::gpu_resource(template).to_string(),
            json!(template.gpu),
        );
    }
    for (name, count) in &template.extended_resources {
        accelerators.insert(name.clone(), json!(count));
    }
    for container in containers.iter_mut().filter_map(Value::as_object_mut) {
        let ray = container.get("name").and_then(Value::as_str) == Some(group.ray_container());
        let resources = object_at(container, "resources");
        for key in ["limits", "requests"] {
            let quantities = object_at(resources, key);
            quantities.extend(sizes.clone());
            if ray {
                quantities.extend(accelerators.clone());
            }
        }
    }
}

/// The object at `key` of `map`, made (or made an object) if it is not one.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert(Value::Null);
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(inner) => inner,
        _ => unreachable!("an object was just put at {key}"),
    }
}

/// Runs the middleware over a request to the API server: the body to forward (JSON, with the templates
/// applied, when the object has a `spec`; the body as sent otherwise), or the answer refusing the request
/// (400 for a body that is not JSON or YAML, 422 for a template that cannot be read).
pub async fn run(
    context: &CallContext,
    namespace: &str,
    parts: &mut Parts,
    body: Bytes,
) -> Result<Bytes, Response<Body>> {
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut object = parse_body(content_type, &body)
        .map_err(|e| super::status(StatusCode::BAD_REQUEST, &e.to_string()))?;
    if !object.get("spec").is_some_and(Value::is_object) {
        return Ok(body);
    }
    let mut templates: BTreeMap<String, ComputeTemplate> = BTreeMap::new();
    for (group, name) in requested(&mut object) {
        if !templates.contains_key(&name) {
            let template = resources::read_compute_template(&context.kube, namespace, &name)
                .await
                .map_err(|e| {
                    let message = unreadable_template(&name, namespace, &e.to_string());
                    super::status(StatusCode::UNPROCESSABLE_ENTITY, &message)
                })?;
            templates.insert(name.clone(), template);
        }
        if let Some(template) = templates.get(&name) {
            apply(&mut object, group, template);
        }
    }
    let json = serde_json::to_vec(&object).map_err(|e| {
        super::status(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the object with its compute templates could not be written as JSON: {e}"),
        )
    })?;
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(json.into())
}

/// KubeRay's message when a named template cannot be read.
pub fn unreadable_template(name: &str, namespace: &str, error: &str) -> String {
    format!("Cannot get compute template for name '{name}' in namespace '{namespace}', error: {error}")
}

#[cfg(test)]
mod tests;
