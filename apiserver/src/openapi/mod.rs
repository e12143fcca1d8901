//! The OpenAPI 3.0.3 document of the REST API, generated at run time from the same descriptor set as the
//! gRPC services and the gateway's routes, never written by hand. Every `google.api.http` binding is an
//! operation (`<Service>_<Method>`, tagged with the service, described by the proto comments); schemas
//! are described in [`schema`] (separate request and response forms, and why).
//!
//! [`document`] takes the paths other parts of the server add (the Kubernetes pass-through, say); the
//! returned value may also be extended further (`components.schemas`, `tags`) before it is served.

mod comments;
mod schema;
pub mod swagger2;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value, json};

use crate::api::FILE_DESCRIPTOR_SET;
use crate::rest::{BodyRule, Route, RouteError, RouteTable};
use comments::Comments;
use schema::{Mode, Schemas, reference};

/// The OpenAPI version of the document.
pub const OPENAPI_VERSION: &str = "3.0.3";

/// The schema component of the error body (`proto.Status` in `error.proto`).
const STATUS_SCHEMA: &str = "proto.Status";

/// The error responses every operation documents: status, component name, description.
const ERRORS: &[(&str, &str, &str)] = &[
    (
        "400",
        "BadRequest",
        "The request is malformed or breaks a rule (gRPC INVALID_ARGUMENT, FAILED_PRECONDITION or OUT_OF_RANGE).",
    ),
    (
        "401",
        "Unauthorized",
        "No usable credentials (gRPC UNAUTHENTICATED).",
    ),
    (
        "403",
        "Forbidden",
        "The caller may not do this; the message is the Kubernetes authorizer's reason (gRPC PERMISSION_DENIED).",
    ),
    (
        "404",
        "NotFound",
        "The object, or the route, does not exist (gRPC NOT_FOUND).",
    ),
    (
        "409",
        "Conflict",
        "An object of that name exists, or it changed meanwhile (gRPC ALREADY_EXISTS or ABORTED).",
    ),
    (
        "413",
        "PayloadTooLarge",
        "The request body is larger than the server accepts.",
    ),
    (
        "500",
        "InternalError",
        "A failure of the server (gRPC INTERNAL or UNKNOWN).",
    ),
    (
        "503",
        "Unavailable",
        "The Kubernetes API server or a Ray head cannot be reached (gRPC UNAVAILABLE).",
    ),
    (
        "504",
        "GatewayTimeout",
        "The call ran past the request timeout (gRPC DEADLINE_EXCEEDED).",
    ),
    (
        "default",
        "Error",
        "Any other failure, with the HTTP status grpc-gateway gives its gRPC code.",
    ),
];

/// Why the document cannot be generated.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiError {
    #[error("the API's descriptor set cannot be decoded: {0}")]
    Descriptors(#[from] prost_reflect::DescriptorError),
    #[error("invalid HTTP binding: {0}")]
    Route(#[from] RouteError),
    #[error("two operations for {method} {path}")]
    Duplicate { method: String, path: String },
}

/// The document of the API in [`crate::api::FILE_DESCRIPTOR_SET`], the fixed `/healthz` and `/readyz`
/// endpoints, and `extra_paths` (OpenAPI path items by path, added as given; a path the API already has
/// is an error).
pub fn document(extra_paths: Map<String, Value>) -> Result<Value, OpenApiError> {
    document_from_pool(&DescriptorPool::decode(FILE_DESCRIPTOR_SET)?, extra_paths)
}

/// The document of the bindings in `pool`; see [`document`].
pub fn document_from_pool(
    pool: &DescriptorPool,
    extra_paths: Map<String, Value>,
) -> Result<Value, OpenApiError> {
    let routes = RouteTable::from_pool(pool)?;
    let comments = Comments::new(pool);
    let mut schemas = Schemas::new(pool, &comments);
    let mut paths = Map::new();
    for route in routes.routes() {
        let operation = operation(route, &comments, &mut schemas);
        let item = paths
            .entry(route.template.openapi_path())
            .or_insert_with(|| json!({}));
        let method = route.method.as_str().to_ascii_lowercase();
        if item.get(&method).is_some() {
            return Err(OpenApiError::Duplicate {
                method: route.method.to_string(),
                path: route.template.openapi_path(),
            });
        }
        item[method] = operation;
    }
    if let Some(status) = pool.get_message_by_name(STATUS_SCHEMA) {
        schemas.message(&status, Mode::Response);
    }
    for (path, item) in fixed_paths().into_iter().chain(extra_paths) {
        if paths.contains_key(&path) {
            return Err(OpenApiError::Duplicate {
                method: "*".into(),
                path,
            });
        }
        paths.insert(path, item);
    }
    Ok(json!({
        "openapi": OPENAPI_VERSION,
        "info": info(),
        "tags": tags(pool, &routes, &comments),
        "security": [{ "bearerAuth": [] }],
        "paths": paths,
        "components": {
            "schemas": schemas.finish(),
            "responses": error_responses(),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A Kubernetes bearer token (a ServiceAccount token, or any token the Kubernetes API \
                        server accepts). The server acts toward Kubernetes as the token's user. A TLS client \
                        certificate, when the server asks for one, authenticates as well.",
                },
            },
        },
    }))
}

fn info() -> Value {
    json!({
        "title": "KubeRay API (kuberay-wasm)",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "KubeRay's apiserver v1 REST API: Ray clusters, compute templates, jobs, job submissions \
            and services, served as the calling user. JSON follows protobuf's JSON mapping as KubeRay's server \
            writes it: lowerCamelCase names, enums as numbers, 64-bit integers as strings, fields holding \
            their default value left out. Requests may also use the proto (snake_case) field names and enum \
            names; unknown keys are ignored. Errors have the body `{\"code\": <gRPC code>, \"message\": ..., \
            \"details\": []}`.",
    })
}

/// One tag per service with routes, described by the service's comment.
fn tags(pool: &DescriptorPool, routes: &RouteTable, comments: &Comments) -> Value {
    let mut tags = Vec::new();
    for service in pool.services() {
        if !routes.routes().iter().any(|r| *r.rpc.parent_service() == service) {
            continue;
        }
        let mut tag = json!({ "name": service.name() });
        if let Some(comment) = comments.get(service.parent_file().name(), service.path()) {
            tag["description"] = comment.into();
        }
        tags.push(tag);
    }
    tags.push(json!({ "name": "Health", "description": "Liveness and readiness of the server." }));
    Value::Array(tags)
}

/// The operation of one route.
fn operation(route: &Route, comments: &Comments, schemas: &mut Schemas<'_>) -> Value {
    let rpc = &route.rpc;
    let service = rpc.parent_service();
    let mut id = format!("{}_{}", service.name(), rpc.name());
    if route.binding > 0 {
        id = format!("{id}_{}", route.binding);
    }
    let mut parameters = path_parameters(route, schemas);
    if !matches!(route.body, BodyRule::Whole) {
        let skip = |f: &FieldDescriptor| {
            route.is_path_bound(&[f.name().to_string()])
                || matches!(&route.body, BodyRule::Field(body) if body == f)
        };
        query_parameters(&rpc.input(), "", &skip, schemas, &mut Vec::new(), &mut parameters);
    }
    let mut responses = Map::new();
    responses.insert(
        "200".into(),
        json!({
            "description": "OK",
            "content": { "application/json": { "schema": schemas.message(&rpc.output(), Mode::Response) } },
        }),
    );
    for (status, name, _) in ERRORS {
        responses.insert(
            (*status).into(),
            json!({ "$ref": format!("#/components/responses/{name}") }),
        );
    }
    let mut operation = json!({
        "operationId": id,
        "tags": [service.name()],
        "parameters": parameters,
        "responses": responses,
    });
    if let Some(comment) = comments.get(rpc.parent_file().name(), rpc.path()) {
        operation["summary"] = comments::summary(comment).into();
        operation["description"] = comment.into();
    }
    if let Some(body) = request_body(route, schemas) {
        operation["requestBody"] = body;
    }
    let options = rpc.options();
    if options
        .get_field_by_name("deprecated")
        .is_some_and(|v| v.as_bool() == Some(true))
    {
        operation["deprecated"] = true.into();
    }
    operation
}

/// The path variables, in template order.
fn path_parameters(route: &Route, schemas: &mut Schemas<'_>) -> Vec<Value> {
    let input = route.rpc.input();
    let mut parameters = Vec::new();
    for variable in route.template.variables() {
        let Ok(fields) = crate::rest::resolve_path_field(&input, variable) else {
            continue;
        };
        let Some(field) = fields.last() else {
            continue;
        };
        let mut parameter = json!({
            "name": variable.join("."),
            "in": "path",
            "required": true,
            "schema": schemas.kind(&field.kind(), Mode::Request),
        });
        if let Some(description) = schemas.field(field, Mode::Request).get("description") {
            parameter["description"] = description.clone();
        }
        parameters.push(parameter);
    }
    parameters
}

/// Query parameters for the fields of `message` (recursively, as `a.b`) that `skip` leaves: scalars,
/// enums, well-known scalar types and repeated ones of these. Maps cannot be given in a query string.
fn query_parameters(
    message: &MessageDescriptor,
    prefix: &str,
    skip: &dyn Fn(&FieldDescriptor) -> bool,
    schemas: &mut Schemas<'_>,
    visiting: &mut Vec<String>,
    out: &mut Vec<Value>,
) {
    visiting.push(message.full_name().to_string());
    for field in message.fields().filter(|f| !skip(f) && !f.is_map()) {
        let name = format!("{prefix}{}", field.json_name());
        match field.kind() {
            Kind::Message(inner) if !is_query_scalar(&inner) => {
                if !field.is_list() && !visiting.iter().any(|v| v == inner.full_name()) {
                    query_parameters(&inner, &format!("{name}."), &|_| false, schemas, visiting, out);
                }
            }
            _ => {
                let mut schema = schemas.field(&field, Mode::Request);
                let description = schema.as_object_mut().and_then(|o| o.remove("description"));
                let mut parameter =
                    json!({ "name": name, "in": "query", "required": false, "schema": schema });
                if let Some(description) = description {
                    parameter["description"] = description;
                }
                if field.is_list() {
                    parameter["style"] = "form".into();
                    parameter["explode"] = true.into();
                }
                out.push(parameter);
            }
        }
    }
    visiting.pop();
}

/// Well-known message types a query parameter can give as text.
fn is_query_scalar(message: &MessageDescriptor) -> bool {
    crate::rest::is_scalar_wkt(message)
        && !matches!(
            message.full_name(),
            "google.protobuf.Value" | "google.protobuf.ListValue"
        )
}

/// The request body: the body field's request schema, or the request message less its path variables.
fn request_body(route: &Route, schemas: &mut Schemas<'_>) -> Option<Value> {
    let (schema, required) = match &route.body {
        BodyRule::None => return None,
        BodyRule::Field(field) => {
            let mut schema = schemas.field(field, Mode::Request);
            let description = schema.as_object_mut().and_then(|o| o.remove("description"));
            let body = (unwrap_all_of(schema), schemas.is_required(field));
            return Some(body_value(body, description));
        }
        BodyRule::Whole => {
            let skip = |f: &FieldDescriptor| route.is_path_bound(&[f.name().to_string()]);
            (schemas.object(&route.rpc.input(), Mode::Request, &skip), true)
        }
    };
    Some(body_value((schema, required), None))
}

/// `{"allOf": [x]}` as `x`.
fn unwrap_all_of(schema: Value) -> Value {
    match schema
        .as_object()
        .and_then(|o| o.get("allOf").filter(|_| o.len() == 1))
    {
        Some(Value::Array(items)) if items.len() == 1 => items[0].clone(),
        _ => schema,
    }
}

fn body_value((schema, required): (Value, bool), description: Option<Value>) -> Value {
    let mut body = json!({
        "required": required,
        "content": { "application/json": { "schema": schema } },
    });
    if let Some(description) = description {
        body["description"] = description;
    }
    body
}

/// The shared error responses, all with the `proto.Status` body.
fn error_responses() -> Value {
    let mut responses = Map::new();
    for (_, name, description) in ERRORS {
        responses.insert(
            (*name).into(),
            json!({
                "description": description,
                "content": { "application/json": { "schema": reference(STATUS_SCHEMA) } },
            }),
        );
    }
    Value::Object(responses)
}

/// `/healthz` and `/readyz`: plain text, no authentication.
fn fixed_paths() -> Map<String, Value> {
    let probe = |id: &str, summary: &str, failing: &str| {
        json!({
            "get": {
                "operationId": id,
                "tags": ["Health"],
                "summary": summary,
                "security": [],
                "responses": {
                    "200": { "description": "OK", "content": { "text/plain": { "schema": { "type": "string" } } } },
                    "503": { "description": failing, "content": { "text/plain": { "schema": { "type": "string" } } } },
                },
            },
        })
    };
    let mut paths = Map::new();
    paths.insert(
        "/healthz".into(),
        probe(
            "healthz",
            "Whether the server is alive.",
            "The server is shutting down.",
        ),
    );
    paths.insert(
        "/readyz".into(),
        probe(
            "readyz",
            "Whether the server is ready to serve requests.",
            "Not ready; the body says why.",
        ),
    );
    paths
}

#[cfg(test)]
mod tests;
