//! Structural checks of the generated document (the real validator runs in `tests/openapi.rs`).

use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};
use serde_json::{Map, Value, json};

use super::*;

fn doc() -> Value {
    document(Map::new()).unwrap()
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let schema = &doc["components"]["schemas"][name];
    assert!(schema.is_object(), "no schema {name}");
    schema
}

/// Every `$ref` in `value`, with where it was found.
fn refs(value: &Value, at: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                if key == "$ref"
                    && let Some(target) = inner.as_str()
                {
                    out.push((at.clone(), target.to_string()));
                }
                refs(inner, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                refs(inner, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn header_security_and_fixed_endpoints() {
    let doc = doc();
    assert_eq!(doc["openapi"], "3.0.3");
    assert_eq!(doc["info"]["title"], "KubeRay API (kuberay-wasm)");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["security"], json!([{ "bearerAuth": [] }]));
    let bearer = &doc["components"]["securitySchemes"]["bearerAuth"];
    assert_eq!(
        (bearer["type"].as_str(), bearer["scheme"].as_str()),
        (Some("http"), Some("bearer"))
    );
    for probe in ["/healthz", "/readyz"] {
        let get = &doc["paths"][probe]["get"];
        assert_eq!(get["security"], json!([]), "{probe}");
        assert!(
            get["responses"]["200"]["content"]["text/plain"].is_object(),
            "{probe}"
        );
        assert!(get["responses"]["503"].is_object(), "{probe}");
    }
}

#[test]
fn every_binding_is_an_operation_with_its_parameters() {
    let doc = doc();
    let pool = DescriptorPool::decode(FILE_DESCRIPTOR_SET).unwrap();
    let routes = RouteTable::from_pool(&pool).unwrap();
    assert_eq!(routes.routes().len(), 27);
    let mut ids = std::collections::BTreeSet::new();
    for route in routes.routes() {
        let path = route.template.openapi_path();
        let method = route.method.as_str().to_ascii_lowercase();
        let operation = &doc["paths"][&path][&method];
        assert!(operation.is_object(), "{} missing", route.label);
        let id = format!("{}_{}", route.rpc.parent_service().name(), route.rpc.name());
        assert_eq!(operation["operationId"], id.as_str());
        assert!(ids.insert(id.clone()), "{id} twice");
        assert_eq!(operation["tags"], json!([route.rpc.parent_service().name()]));
        assert!(
            operation["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{id} has no summary"
        );
        let in_path: Vec<&str> = operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        let variables: Vec<String> = route.template.variables().map(|v| v.join(".")).collect();
        assert_eq!(in_path, variables, "{id}");
        for (status, _, _) in ERRORS {
            assert!(operation["responses"][*status].is_object(), "{id} lacks {status}");
        }
        assert!(operation["responses"]["200"]["content"]["application/json"]["schema"].is_object());
        let has_body = !matches!(route.body, BodyRule::None);
        assert_eq!(operation.get("requestBody").is_some(), has_body, "{id}");
    }
}

fn parameters(doc: &Value, path: &str, method: &str) -> Vec<(String, String, Value)> {
    doc["paths"][path][method]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["in"].as_str().unwrap().to_string(),
                p["schema"].clone(),
            )
        })
        .collect()
}

#[test]
fn query_parameters_for_fields_the_path_does_not_bind() {
    let doc = doc();
    let list = parameters(&doc, "/apis/v1/namespaces/{namespace}/clusters", "get");
    let names: Vec<(&str, &str)> = list.iter().map(|(n, i, _)| (n.as_str(), i.as_str())).collect();
    assert_eq!(
        names,
        [("namespace", "path"), ("continue", "query"), ("limit", "query")]
    );
    // limit is an int64: a number or a decimal string.
    let limit = &list[2].2;
    let types: Vec<&str> = limit["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["string", "integer"]);
    let services = parameters(&doc, "/apis/v1/services", "get");
    let names: Vec<&str> = services.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["pageToken", "pageSize"]);
    // The body field and the path variables are not query parameters.
    let create = parameters(&doc, "/apis/v1/namespaces/{namespace}/clusters", "post");
    assert_eq!(create.len(), 1);
    assert!(parameters(&doc, "/apis/v1/namespaces/{namespace}/clusters/{name}", "delete").len() == 2);
}

#[test]
fn request_bodies_use_input_schemas_with_required_fields() {
    let doc = doc();
    let body = &doc["paths"]["/apis/v1/namespaces/{namespace}/clusters"]["post"]["requestBody"];
    assert_eq!(body["required"], true);
    assert_eq!(
        body["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/proto.Cluster-Input"
    );
    let input = schema(&doc, "proto.Cluster-Input");
    assert_eq!(
        input["required"],
        json!(["name", "namespace", "user", "clusterSpec"])
    );
    assert_eq!(
        schema(&doc, "proto.ComputeTemplate-Input")["required"],
        json!(["name", "namespace", "cpu", "memory"])
    );
    // Input enums accept names and numbers; input int64/uint32 numbers accept strings too.
    let environment = schema(&doc, "proto.Cluster.Environment-Input");
    assert_eq!(
        environment["oneOf"][0]["enum"],
        json!(["DEV", "TESTING", "STAGING", "PRODUCTION"])
    );
    assert_eq!(environment["oneOf"][1]["enum"], json!([0, 1, 2, 3]));
    let cpu = &schema(&doc, "proto.ComputeTemplate-Input")["properties"]["cpu"];
    assert_eq!(cpu["oneOf"][0]["minimum"], 0);
    assert_eq!(cpu["oneOf"][1]["type"], "string");
}

#[test]
fn response_schemas_never_require_and_describe_what_is_sent() {
    let doc = doc();
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')),
            "{name} is not a valid component key"
        );
        if !name.ends_with("-Input") {
            assert!(schema.get("required").is_none(), "{name} has required fields");
        }
    }
    let cluster = schema(&doc, "proto.Cluster");
    let properties = &cluster["properties"];
    assert_eq!(properties["createdAt"]["type"], "string");
    assert_eq!(properties["createdAt"]["format"], "date-time");
    assert_eq!(properties["createdAt"]["readOnly"], true);
    assert_eq!(properties["clusterState"]["readOnly"], true);
    assert!(properties["clusterSpec"]["$ref"].is_string());
    assert_eq!(
        properties["annotations"]["additionalProperties"]["type"],
        "string"
    );
    assert_eq!(properties["events"]["type"], "array");
    assert_eq!(properties["events"]["readOnly"], true);
    let environment = schema(&doc, "proto.Cluster.Environment");
    assert_eq!(
        (environment["type"].as_str(), &environment["enum"]),
        (Some("integer"), &json!([0, 1, 2, 3]))
    );
    let info = &schema(&doc, "proto.JobSubmissionInfo")["properties"]["startTime"];
    assert_eq!(
        (info["type"].as_str(), info["format"].as_str()),
        (Some("string"), Some("uint64"))
    );
    let service = &schema(&doc, "proto.RayService")["properties"];
    assert_eq!(service["serviceUnhealthySecondThreshold"]["deprecated"], true);
    assert!(service["name"].get("deprecated").is_none());
    let template = &schema(&doc, "proto.ComputeTemplate")["properties"];
    assert_eq!(template["cpu"]["minimum"], 0);
    assert_eq!(
        template["extendedResources"]["additionalProperties"]["maximum"],
        u32::MAX
    );
    assert!(template["cpu"]["description"].as_str().unwrap().contains("CPU"));
    // Empty (Delete answers) is an empty object; the error body is proto.Status with Any details.
    let delete = &doc["paths"]["/apis/v1/namespaces/{namespace}/clusters/{name}"]["delete"];
    assert_eq!(
        delete["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/google.protobuf.Empty"
    );
    assert_eq!(schema(&doc, "google.protobuf.Empty")["properties"], json!({}));
    let status = schema(&doc, "proto.Status");
    assert_eq!(
        status["properties"]["details"]["items"]["$ref"],
        "#/components/schemas/google.protobuf.Any"
    );
    assert!(schema(&doc, "google.protobuf.Any")["properties"]["@type"].is_object());
}

#[test]
fn every_reference_resolves() {
    let doc = doc();
    let mut found = Vec::new();
    refs(&doc, String::new(), &mut found);
    assert!(found.len() > 100, "only {} references", found.len());
    for (at, target) in found {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{at}: {target} is not local"));
        assert!(doc.pointer(pointer).is_some(), "{at}: {target} does not resolve");
    }
    // No schema is generated but never referenced (everything in components is reachable).
    let text = doc.to_string();
    for name in doc["components"]["schemas"].as_object().unwrap().keys() {
        assert!(
            text.contains(&format!("\"#/components/schemas/{name}\"")),
            "{name} is unreferenced"
        );
    }
}

#[test]
fn extra_paths_are_added_and_may_not_collide() {
    let mut extra = Map::new();
    extra.insert(
        "/apis/ray.io/v1/rayclusters".into(),
        json!({ "get": { "responses": { "200": { "description": "OK" } } } }),
    );
    let doc = document(extra).unwrap();
    assert!(doc["paths"]["/apis/ray.io/v1/rayclusters"]["get"].is_object());
    let mut clash = Map::new();
    clash.insert("/readyz".into(), json!({}));
    assert!(matches!(document(clash), Err(OpenApiError::Duplicate { .. })));
}

/// A message with every field set to a value unlike its default (lists and maps with two entries),
/// nested messages too, down to a few levels. `Any` fields stay empty; output-only fields are left out
/// when `outputs` is false.
fn populated(message: &MessageDescriptor, depth: usize, outputs: bool) -> prost_reflect::DynamicMessage {
    use prost_reflect::{DynamicMessage, MapKey, Value as Field};
    let mut out = DynamicMessage::new(message.clone());
    if message.full_name() == "google.protobuf.Timestamp" {
        out.set_field_by_name("seconds", Field::I64(1_700_000_000));
        out.set_field_by_name("nanos", Field::I32(5_000));
        return out;
    }
    let behavior = message
        .parent_pool()
        .get_extension_by_name("google.api.field_behavior")
        .unwrap();
    for field in message.fields() {
        let output_only = field
            .options()
            .get_extension(&behavior)
            .as_list()
            .is_some_and(|l| l.contains(&Field::EnumNumber(3)));
        if output_only && !outputs {
            continue;
        }
        let sample = |kind: &Kind| -> Option<Field> {
            Some(match kind {
                Kind::Double => Field::F64(1.5),
                Kind::Float => Field::F32(-2.25),
                Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Field::I32(-7),
                Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Field::I64(-9_007_199_254_740_993),
                Kind::Uint32 | Kind::Fixed32 => Field::U32(4_000_000_000),
                Kind::Uint64 | Kind::Fixed64 => Field::U64(u64::MAX),
                Kind::Bool => Field::Bool(true),
                Kind::String => Field::String("text".into()),
                Kind::Bytes => Field::Bytes(bytes::Bytes::from_static(b"bytes")),
                Kind::Enum(e) => Field::EnumNumber(e.values().last()?.number()),
                Kind::Message(m) if m.full_name() == "google.protobuf.Any" || depth > 5 => return None,
                Kind::Message(m) => Field::Message(populated(m, depth + 1, outputs)),
            })
        };
        let value = if field.is_map() {
            let Kind::Message(entry) = field.kind() else {
                continue;
            };
            let Some(value) = sample(&entry.map_entry_value_field().kind()) else {
                continue;
            };
            let keys = [MapKey::String("a".into()), MapKey::String("b.c/d".into())];
            Field::Map(keys.into_iter().map(|k| (k, value.clone())).collect())
        } else if field.is_list() {
            let Some(value) = sample(&field.kind()) else {
                continue;
            };
            Field::List(vec![value.clone(), value])
        } else {
            let Some(value) = sample(&field.kind()) else {
                continue;
            };
            value
        };
        out.set_field(&field, value);
    }
    out
}

#[test]
fn schemas_accept_what_the_server_sends_and_what_clients_send() {
    use prost_reflect::SerializeOptions;
    let doc = doc();
    let pool = DescriptorPool::decode(FILE_DESCRIPTOR_SET).unwrap();
    let mut responses = Map::new();
    let mut requests = Map::new();
    for name in doc["components"]["schemas"].as_object().unwrap().keys() {
        let (full_name, input) = match name.strip_suffix("-Input") {
            Some(full_name) => (full_name, true),
            None => (name.as_str(), false),
        };
        let Some(message) = pool.get_message_by_name(full_name) else {
            continue; // an enum
        };
        if full_name == "google.protobuf.Any" {
            continue;
        }
        if input {
            let sample = populated(&message, 0, false);
            // As KubeRay's Go client writes requests: enum names (64-bit integers as strings) ...
            let mut names = serde_json::Serializer::new(Vec::new());
            sample
                .serialize_with_options(&mut names, &SerializeOptions::new())
                .unwrap();
            // ... and with enum numbers and 64-bit integers as JSON numbers.
            let options = SerializeOptions::new()
                .use_enum_numbers(true)
                .stringify_64_bit_integers(false);
            let mut numbers = serde_json::Serializer::new(Vec::new());
            sample.serialize_with_options(&mut numbers, &options).unwrap();
            let names: Value = serde_json::from_slice(&names.into_inner()).unwrap();
            let numbers: Value = serde_json::from_slice(&numbers.into_inner()).unwrap();
            requests.insert(name.clone(), json!([names, numbers]));
        } else {
            let json = crate::rest::response_json(&populated(&message, 0, true)).unwrap();
            let json: Value = serde_json::from_slice(&json).unwrap();
            responses.insert(name.clone(), json!([json]));
        }
    }
    assert!(responses.contains_key("proto.Cluster") && requests.contains_key("proto.Cluster-Input"));
    assert_eq!(
        responses["proto.JobSubmissionInfo"][0]["startTime"],
        u64::MAX.to_string()
    );
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, value: &Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_vec(value).unwrap()).unwrap();
        path
    };
    let documents = [
        write("openapi.json", &doc),
        write("responses.json", &Value::Object(responses)),
        write("requests.json", &Value::Object(requests)),
    ];
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.local/apitools-venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `make apitools`",
        python.display()
    );
    let output = std::process::Command::new(python)
        .arg("-c")
        .arg(CONFORMANCE)
        .args(documents)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("checked"), "{stdout}\n{stderr}");
}

/// Validates samples against component schemas with openapi-schema-validator (response samples in the
/// read context, request samples in the write context), with format checks.
const CONFORMANCE: &str = r##"
import json, sys
from openapi_schema_validator import OAS30ReadValidator, OAS30WriteValidator, oas30_format_checker
doc, responses, requests = (json.load(open(p)) for p in sys.argv[1:4])
failures, count = [], 0
for samples, cls in ((responses, OAS30ReadValidator), (requests, OAS30WriteValidator)):
    for name, instances in samples.items():
        schema = {"$ref": "#/components/schemas/" + name, "components": doc["components"]}
        validator = cls(schema, format_checker=oas30_format_checker)
        for instance in instances:
            count += 1
            for error in validator.iter_errors(instance):
                failures.append(f"{name} at {list(error.absolute_path)}: {error.message}")
print("\n".join(failures))
print(f"checked {count} samples")
sys.exit(1 if failures else 0)
"##;
