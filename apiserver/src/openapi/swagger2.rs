//! The Swagger 2.0 documents KubeRay's apiserver serves at `/swagger/<file>.swagger.json` (one per proto file
//! of the API, as `protoc-gen-openapiv2` writes them, and `kuberay_api.swagger.json` with everything), made
//! from the OpenAPI 3 document ([`super::document`]) rather than written again: each operation keeps its
//! id, tags, texts, parameters and responses; a request body becomes the `body` parameter, components become
//! `definitions`, referenced responses are written out, and a parameter's schema becomes its type. What
//! Swagger 2.0 cannot say is left out (`nullable`, a deprecated field's flag) or narrowed (a choice of
//! forms is its first).

use std::collections::{BTreeMap, BTreeSet};

use prost_reflect::DescriptorPool;
use serde_json::{Map, Value, json};

use crate::api::FILE_DESCRIPTOR_SET;

/// The name of the document with every operation (KubeRay's `proto/kuberay_api.swagger.json`).
pub const ALL: &str = "kuberay_api";

/// The Swagger 2.0 documents of `openapi` by name (`cluster`, `job`, ..., and [`ALL`]): one per proto file of
/// the API (package `proto`), with the operations of its services and the definitions they use.
pub fn documents(openapi: &Value) -> Result<BTreeMap<String, Value>, prost_reflect::DescriptorError> {
    let pool = DescriptorPool::decode(FILE_DESCRIPTOR_SET)?;
    let mut out = BTreeMap::new();
    for file in pool.files().filter(|f| f.package_name() == "proto") {
        let Some(stem) = file
            .name()
            .rsplit('/')
            .next()
            .and_then(|n| n.strip_suffix(".proto"))
        else {
            continue;
        };
        let tags: BTreeSet<String> = file.services().map(|s| s.name().to_string()).collect();
        // A file without services (error.proto) documents its messages.
        let messages: BTreeSet<String> = file.messages().map(|m| m.full_name().to_string()).collect();
        out.insert(stem.to_string(), convert(openapi, Some(&tags), &messages));
    }
    out.insert(ALL.to_string(), convert(openapi, None, &BTreeSet::new()));
    Ok(out)
}

/// The Swagger 2.0 form of `openapi`, with the operations tagged with one of `tags` (all if `None`) and the
/// definitions they reach, plus `messages`' own.
fn convert(openapi: &Value, tags: Option<&BTreeSet<String>>, messages: &BTreeSet<String>) -> Value {
    let components = &openapi["components"];
    let mut paths = Map::new();
    for (path, item) in openapi["paths"].as_object().into_iter().flatten() {
        let mut operations = Map::new();
        for (method, operation) in item.as_object().into_iter().flatten() {
            let tagged = operation["tags"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|t| tags.is_none_or(|tags| tags.contains(t)));
            if tagged {
                operations.insert(method.clone(), self::operation(operation, components));
            }
        }
        if !operations.is_empty() {
            paths.insert(path.clone(), Value::Object(operations));
        }
    }
    let mut paths = Value::Object(paths);
    rewrite_refs(&mut paths);
    let definitions = reachable(&paths, components, messages);
    let mut document = json!({
        "swagger": "2.0",
        "info": openapi["info"],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "bearerAuth": {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": "`Bearer <token>`: a Kubernetes bearer token; the server acts toward Kubernetes as its user.",
            },
        },
        "security": [{ "bearerAuth": [] }],
    });
    if let Some(tags) = openapi["tags"].as_array() {
        let kept: Vec<&Value> = tags
            .iter()
            .filter(|t| {
                t["name"]
                    .as_str()
                    .is_some_and(|n| tags_keep(n, document["paths"].as_object()))
            })
            .collect();
        document["tags"] = json!(kept);
    }
    document
}

/// Whether an operation of `paths` carries the tag `name`.
fn tags_keep(name: &str, paths: Option<&Map<String, Value>>) -> bool {
    paths.into_iter().flatten().any(|(_, item)| {
        item.as_object()
            .into_iter()
            .flatten()
            .any(|(_, op)| op["tags"].as_array().is_some_and(|t| t.iter().any(|t| t == name)))
    })
}

/// One operation: its parameters in Swagger 2.0's form, its body as the `body` parameter, its responses
/// written out.
fn operation(operation: &Value, components: &Value) -> Value {
    let mut out = operation.clone();
    let Some(map) = out.as_object_mut() else {
        return out;
    };
    let mut parameters: Vec<Value> = map
        .remove("parameters")
        .and_then(|p| p.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|p| parameter(p, components))
        .collect();
    if let Some(body) = map.remove("requestBody") {
        let mut parameter = json!({
            "name": "body",
            "in": "body",
            "required": body["required"].as_bool().unwrap_or(false),
            "schema": body["content"]["application/json"]["schema"],
        });
        if let Some(description) = body.get("description") {
            parameter["description"] = description.clone();
        }
        parameters.push(parameter);
    }
    map.insert("parameters".into(), Value::Array(parameters));
    let responses: Map<String, Value> = map
        .remove("responses")
        .and_then(|r| r.as_object().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|(status, response)| (status, self::response(&response, components)))
        .collect();
    map.insert("responses".into(), Value::Object(responses));
    out
}

/// A path or query parameter: its schema's type, format, items and enum on the parameter itself (Swagger
/// 2.0 has no schemas there), a referenced schema written out.
fn parameter(mut parameter: Value, components: &Value) -> Value {
    let Some(schema) = parameter.as_object_mut().and_then(|p| p.remove("schema")) else {
        return parameter;
    };
    let schema = resolve(&schema, components);
    for key in [
        "type", "format", "enum", "default", "pattern", "maximum", "minimum",
    ] {
        if let Some(value) = schema.get(key) {
            parameter[key] = value.clone();
        }
    }
    if let Some(items) = schema.get("items") {
        parameter["items"] = resolve(items, components);
        parameter["collectionFormat"] = "multi".into();
    }
    if parameter.get("type").is_none() {
        parameter["type"] = "string".into();
    }
    parameter
}

/// A response: a referenced one written out, its JSON schema as `schema`.
fn response(response: &Value, components: &Value) -> Value {
    let response = resolve(response, components);
    let mut out = json!({ "description": response["description"].as_str().unwrap_or("") });
    if let Some(schema) = response.pointer("/content/application~1json/schema") {
        out["schema"] = schema.clone();
    }
    out
}

/// `value`, or the component its `$ref` names (one level: components here never point at each other's
/// references).
fn resolve(value: &Value, components: &Value) -> Value {
    let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
        return value.clone();
    };
    let mut parts = reference.trim_start_matches("#/components/").splitn(2, '/');
    match (parts.next(), parts.next()) {
        (Some(kind), Some(name)) => components[kind][name].clone(),
        _ => value.clone(),
    }
}

/// `#/components/schemas/X` → `#/definitions/X` everywhere, and what Swagger 2.0 cannot say removed or
/// narrowed: a choice of forms (`oneOf`, `anyOf`: a number also given as a string, an enum also given by
/// number) becomes its first form, the one the server writes.
fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("nullable");
            // Operations may be deprecated in Swagger 2.0; schemas may not (their descriptions say so).
            if !map.contains_key("operationId") {
                map.remove("deprecated");
            }
            for choice in ["oneOf", "anyOf"] {
                if let Some(Value::Array(forms)) = map.remove(choice)
                    && let Some(Value::Object(first)) = forms.into_iter().next()
                {
                    for (key, value) in first {
                        map.entry(key).or_insert(value);
                    }
                }
            }
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/components/schemas/")
            {
                *reference = format!("#/definitions/{name}");
            }
            map.values_mut().for_each(rewrite_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The definitions `paths` reaches (directly or through other definitions), and `messages`.
fn reachable(paths: &Value, components: &Value, messages: &BTreeSet<String>) -> Map<String, Value> {
    let schemas = components["schemas"].as_object().cloned().unwrap_or_default();
    let mut todo: Vec<String> = messages.iter().cloned().collect();
    collect_refs(paths, &mut todo);
    let mut out = Map::new();
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(schema) = schemas.get(&name) else {
            continue;
        };
        let mut schema = schema.clone();
        rewrite_refs(&mut schema);
        collect_refs(&schema, &mut todo);
        out.insert(name, schema);
    }
    out
}

fn collect_refs(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/definitions/"))
            {
                into.push(name.to_string());
            }
            map.values().for_each(|v| collect_refs(v, into));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, into)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documents() -> BTreeMap<String, Value> {
        let openapi = super::super::document(Map::new()).unwrap();
        super::documents(&openapi).unwrap()
    }

    /// Every `$ref` of a document names one of its definitions.
    fn dangling(document: &Value) -> Vec<String> {
        let mut refs = Vec::new();
        collect_refs(document, &mut refs);
        refs.into_iter()
            .filter(|r| document["definitions"].get(r).is_none())
            .collect()
    }

    #[test]
    fn one_document_per_proto_file_as_kuberay_serves_them() {
        let documents = documents();
        let names: Vec<&str> = documents.keys().map(String::as_str).collect();
        for name in [
            "cluster",
            "config",
            "error",
            "job",
            "job_submission",
            "serve",
            ALL,
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        for (name, document) in &documents {
            assert_eq!(document["swagger"], "2.0", "{name}");
            assert!(document.get("components").is_none(), "{name}");
            assert_eq!(dangling(document), Vec::<String>::new(), "{name}");
            assert!(!document.to_string().contains("#/components/"), "{name}");
        }
        let cluster = &documents["cluster"];
        let get = &cluster["paths"]["/apis/v1/namespaces/{namespace}/clusters/{name}"]["get"];
        assert_eq!(get["operationId"], "ClusterService_GetCluster");
        assert!(
            get["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["in"] == "path" && p["type"] == "string")
        );
        assert_eq!(
            get["responses"]["200"]["schema"]["$ref"],
            "#/definitions/proto.Cluster"
        );
        assert_eq!(
            get["responses"]["404"]["schema"]["$ref"],
            "#/definitions/proto.Status"
        );
        let create = &cluster["paths"]["/apis/v1/namespaces/{namespace}/clusters"]["post"];
        let body = create["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["in"] == "body")
            .unwrap();
        assert!(
            body["schema"]["$ref"]
                .as_str()
                .unwrap()
                .starts_with("#/definitions/")
        );
        // Only the file's own operations.
        assert!(
            cluster["paths"]
                .get("/apis/v1/namespaces/{namespace}/jobs")
                .is_none()
        );
        assert!(
            documents[ALL]["paths"]
                .get("/apis/v1/namespaces/{namespace}/jobs")
                .is_some()
        );
        // A file of messages only documents them.
        assert!(documents["error"]["definitions"].get("proto.Status").is_some());
    }
}
