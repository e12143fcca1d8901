//! The pass-through in the OpenAPI document: each `ray.io/v1` kind's collection, objects and status, with
//! Kubernetes objects and `Status` answers as free-form JSON objects (their schemas are the CRDs' and the
//! API server's), and the two discovery documents, the only operations without credentials.

use serde_json::{Map, Value, json};

use super::PREFIX;

/// The pass-through's paths for the OpenAPI document: each `ray.io/v1` kind's collection, objects and
/// status, with the Kubernetes object and `Status` as free-form JSON objects (their schemas are the CRDs').
pub fn openapi_paths() -> Map<String, Value> {
    let mut paths = Map::new();
    let object = json!({"type": "object", "additionalProperties": true,
        "description": "A Kubernetes object or list, as the Kubernetes API server sends it"});
    let errors = errors_openapi();
    let ok = |description: &str| json!({"description": description, "content": {"application/json": {"schema": object}}});
    let body = json!({"required": true, "content": {
        "application/json": {"schema": object},
        "application/yaml": {"schema": object},
        "application/merge-patch+json": {"schema": object},
    }});
    let namespace =
        json!({"name": "namespace", "in": "path", "required": true, "schema": {"type": "string"}});
    let name = json!({"name": "name", "in": "path", "required": true, "schema": {"type": "string"}});
    let list_query = ["labelSelector", "fieldSelector", "continue", "resourceVersion"]
        .iter()
        .map(|q| json!({"name": q, "in": "query", "required": false, "schema": {"type": "string"}}))
        .chain([json!({"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0}})])
        .collect::<Vec<_>>();
    let operation = |id: String, summary: String, parameters: Vec<Value>, with_body: bool, success: &str| {
        let mut responses = errors.clone();
        responses.insert("200".into(), ok(success));
        if with_body {
            responses.insert("201".into(), ok("created"));
        }
        let mut op = json!({"operationId": id, "tags": ["Kubernetes pass-through (ray.io/v1)"],
            "summary": summary, "parameters": parameters, "responses": responses});
        if with_body {
            op["requestBody"] = body.clone();
        }
        op
    };
    for (plural, kind) in [
        ("rayclusters", "RayCluster"),
        ("rayjobs", "RayJob"),
        ("rayservices", "RayService"),
        ("raycronjobs", "RayCronJob"),
    ] {
        let collection = format!("{PREFIX}/namespaces/{{namespace}}/{plural}");
        paths.insert(collection.clone(), json!({
            "get": operation(format!("Kubernetes_list_{kind}"), format!("Lists the {kind}s of a namespace"),
                [vec![namespace.clone()], list_query.clone()].concat(), false, "the list"),
            "post": operation(format!("Kubernetes_create_{kind}"), format!("Creates a {kind}"),
                vec![namespace.clone()], true, "the object"),
        }));
        paths.insert(format!("{PREFIX}/{plural}"), json!({
            "get": operation(format!("Kubernetes_listAll_{kind}"), format!("Lists the {kind}s of every namespace"),
                list_query.clone(), false, "the list"),
        }));
        let both = vec![namespace.clone(), name.clone()];
        for (suffix, what) in [("", ""), ("/status", "Status")] {
            paths.insert(format!("{collection}/{{name}}{suffix}"), json!({
                "get": operation(format!("Kubernetes_read{what}_{kind}"), format!("Reads a {kind}{suffix}"), both.clone(), false, "the object"),
                "put": operation(format!("Kubernetes_replace{what}_{kind}"), format!("Replaces a {kind}{suffix}"), both.clone(), true, "the object"),
                "patch": operation(format!("Kubernetes_patch{what}_{kind}"), format!("Patches a {kind}{suffix}"), both.clone(), true, "the object"),
                "delete": operation(format!("Kubernetes_delete{what}_{kind}"), format!("Deletes a {kind}"), both.clone(), false, "the deletion status"),
            }));
        }
        if let Some(status) = paths
            .get_mut(&format!("{collection}/{{name}}/status"))
            .and_then(Value::as_object_mut)
        {
            status.remove("delete");
        }
    }
    let service = json!({"name": "service", "in": "path", "required": true, "schema": {"type": "string"},
        "description": "[scheme:]name[:port] of a Service KubeRay made (labelled app.kubernetes.io/name=kuberay)"});
    let rest = json!({"name": "path", "in": "path", "required": true, "schema": {"type": "string"},
        "description": "the rest of the path on the Service (slashes included), e.g. api/jobs/"});
    let proxy_parameters = vec![namespace.clone(), service, rest];
    let mut proxy = Map::new();
    for (method, verb) in [
        ("get", "GET"),
        ("post", "POST"),
        ("put", "PUT"),
        ("patch", "PATCH"),
        ("delete", "DELETE"),
    ] {
        let mut op = operation(
            format!("Kubernetes_proxy_{verb}_Service"),
            format!(
                "{verb} on a Ray head's Service (its dashboard, the Jobs API) through the Kubernetes API server's services/proxy, as the caller"
            ),
            proxy_parameters.clone(),
            false,
            "the Service's answer",
        );
        op["tags"] = json!(["Ray head proxy (services/proxy)"]);
        op["responses"]["200"] = json!({"description": "the Service's answer, as it sent it"});
        if verb != "GET" && verb != "DELETE" {
            op["requestBody"] = json!({"required": false, "content": {"application/octet-stream": {
                "schema": {"type": "string", "format": "binary"}}}});
        }
        proxy.insert(method.into(), op);
    }
    paths.insert(
        "/api/v1/namespaces/{namespace}/services/{service}/proxy/{path}".into(),
        Value::Object(proxy),
    );
    for (path, kind) in [("/api", "APIVersions"), ("/apis", "APIGroupList")] {
        let mut get = operation(
            format!("Kubernetes_discovery_{kind}"),
            format!("The {kind} discovery document, listing ray.io/v1 only"),
            vec![],
            false,
            "the document",
        );
        // Answered without credentials (the same document for everyone).
        get["security"] = json!([]);
        paths.insert(path.into(), json!({ "get": get }));
    }
    paths
}

/// The refusals of the pass-through, as Kubernetes `Status` objects.
fn errors_openapi() -> Map<String, Value> {
    let status = json!({"type": "object", "additionalProperties": true, "properties": {
        "kind": {"type": "string"}, "apiVersion": {"type": "string"}, "status": {"type": "string"},
        "message": {"type": "string"}, "reason": {"type": "string"}, "code": {"type": "integer"},
    }, "description": "A Kubernetes Status"});
    ["400", "401", "403", "404", "405", "409", "413", "422", "500", "503", "504"]
        .into_iter()
        .map(|code| (code.to_string(), json!({"description": "a Kubernetes Status", "content": {"application/json": {"schema": status}}})))
        .chain([("default".to_string(), json!({"description": "a Kubernetes Status", "content": {"application/json": {"schema": status}}}))])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_discovery_documents_are_documented_as_public() {
        let paths = openapi_paths();
        for (path, item) in &paths {
            for (method, operation) in item.as_object().unwrap() {
                let public = operation.get("security") == Some(&json!([]));
                assert_eq!(public, path == "/api" || path == "/apis", "{method} {path}");
            }
        }
    }
}
