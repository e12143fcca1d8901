//! JSON and URL parts to request messages, response messages to JSON, following protobuf's JSON mapping
//! as KubeRay's grpc-gateway configures it (see the module docs of [`super`]).

use prost::Message as _;
use prost_reflect::{
    DeserializeOptions, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, ReflectMessage,
    SerializeOptions,
};
use serde_json::{Map, Value};

use super::routes::{BodyRule, Route, resolve_path_field};
use super::template::Capture;

/// A request the gateway rejects before calling the service: HTTP 400 with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadRequest(pub(crate) String);

/// The request message of `route`: the body first, then the path variables (the path wins over the body),
/// then, unless the body is the whole message, the query string for the fields neither fills.
pub(crate) fn request_message(
    route: &Route,
    captures: Vec<Capture>,
    query: Option<&str>,
    body: &[u8],
) -> Result<DynamicMessage, BadRequest> {
    let input = route.rpc.input();
    let mut message = body_message(&input, &route.body, body)?;
    for (path, value) in captures {
        let fields = resolve_path_field(&input, &path).map_err(BadRequest)?;
        set_from_text(&mut message, &fields, std::slice::from_ref(&value))
            .map_err(|reason| BadRequest(format!("invalid path variable {}: {reason}", path.join("."))))?;
    }
    if !matches!(route.body, BodyRule::Whole)
        && let Some(query) = query
    {
        apply_query(route, &mut message, query)?;
    }
    Ok(message)
}

/// The response message as KubeRay's server writes it: lowerCamelCase names, enums as numbers, 64-bit
/// integers as strings, unpopulated fields left out, well-known types in their JSON forms.
pub(crate) fn response_json(message: &DynamicMessage) -> Result<Vec<u8>, serde_json::Error> {
    let mut serializer = serde_json::Serializer::new(Vec::new());
    let options = SerializeOptions::new().use_enum_numbers(true);
    message.serialize_with_options(&mut serializer, &options)?;
    Ok(serializer.into_inner())
}

/// The message the body gives (an empty one when there is no body or the route takes none).
fn body_message(
    input: &MessageDescriptor,
    rule: &BodyRule,
    body: &[u8],
) -> Result<DynamicMessage, BadRequest> {
    let field = match rule {
        BodyRule::None => return Ok(DynamicMessage::new(input.clone())),
        BodyRule::Whole => None,
        BodyRule::Field(field) => Some(field),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(DynamicMessage::new(input.clone()));
    }
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| BadRequest(format!("the request body is not valid JSON: {e}")))?;
    if field.is_none_or(is_json_object) && !json.is_object() {
        let what = field.map_or(String::new(), |f| format!(" (the {:?} field)", f.name()));
        return Err(BadRequest(format!(
            "the request body must be a JSON object{what}"
        )));
    }
    let json = match field {
        Some(field) => Value::Object(Map::from_iter([(field.name().to_string(), json)])),
        None => json,
    };
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    deserialize(input, json, &options).map_err(|(path, reason)| {
        let at = if path == "." {
            String::new()
        } else {
            format!(" at {path:?}")
        };
        BadRequest(format!("invalid request body{at}: {reason}"))
    })
}

/// Deserializes `json` into a `desc` message; on failure, the path to the bad value and the reason.
fn deserialize(
    desc: &MessageDescriptor,
    json: Value,
    options: &DeserializeOptions,
) -> Result<DynamicMessage, (String, String)> {
    let mut track = serde_path_to_error::Track::new();
    let deserializer = serde_path_to_error::Deserializer::new(json, &mut track);
    match DynamicMessage::deserialize_with_options(desc.clone(), deserializer, options) {
        Ok(message) => Ok(message),
        Err(e) => Err((track.path().to_string(), e.to_string())),
    }
}

/// Whether values of `field` are JSON objects (messages other than the well-known types written as
/// scalars or arrays, and maps).
fn is_json_object(field: &FieldDescriptor) -> bool {
    if field.is_map() {
        return true;
    }
    match field.kind() {
        Kind::Message(message) => !field.is_list() && !is_scalar_wkt(&message),
        _ => false,
    }
}

/// Well-known message types whose JSON form is not an object.
pub(crate) fn is_scalar_wkt(message: &MessageDescriptor) -> bool {
    matches!(
        message.full_name(),
        "google.protobuf.Timestamp"
            | "google.protobuf.Duration"
            | "google.protobuf.FieldMask"
            | "google.protobuf.Value"
            | "google.protobuf.ListValue"
            | "google.protobuf.DoubleValue"
            | "google.protobuf.FloatValue"
            | "google.protobuf.Int64Value"
            | "google.protobuf.UInt64Value"
            | "google.protobuf.Int32Value"
            | "google.protobuf.UInt32Value"
            | "google.protobuf.BoolValue"
            | "google.protobuf.StringValue"
            | "google.protobuf.BytesValue"
    )
}

/// Fills fields from the query string, grpc-gateway's way: `a.b=v` for nested fields (proto or JSON
/// names), a key once per element of a repeated field, enums by name or number. Keys that name no field,
/// or a field the path or the body fills, are ignored.
fn apply_query(route: &Route, message: &mut DynamicMessage, query: &str) -> Result<(), BadRequest> {
    let mut params: Vec<(String, Vec<String>)> = Vec::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match params.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(value.into_owned()),
            None => params.push((key.into_owned(), vec![value.into_owned()])),
        }
    }
    let desc = message.descriptor();
    for (key, values) in params {
        let Some(fields) = query_field(route, &desc, &key)? else {
            continue;
        };
        set_from_text(message, &fields, &values)
            .map_err(|reason| BadRequest(format!("invalid query parameter {key:?}: {reason}")))?;
    }
    Ok(())
}

/// The fields a query key names; `None` when it is to be ignored.
fn query_field(
    route: &Route,
    desc: &MessageDescriptor,
    key: &str,
) -> Result<Option<Vec<FieldDescriptor>>, BadRequest> {
    let mut fields: Vec<FieldDescriptor> = Vec::new();
    let mut current = desc.clone();
    for part in key.split('.') {
        if let Some(previous) = fields.last() {
            match previous.kind() {
                Kind::Message(inner)
                    if !previous.is_list() && !previous.is_map() && !is_scalar_wkt(&inner) =>
                {
                    current = inner;
                }
                _ => return Ok(None),
            }
        }
        let Some(field) = current
            .get_field_by_name(part)
            .or_else(|| current.get_field_by_json_name(part))
        else {
            return Ok(None);
        };
        fields.push(field);
    }
    let names: Vec<String> = fields.iter().map(|f| f.name().to_string()).collect();
    let in_body = matches!(&route.body, BodyRule::Field(body) if fields.first() == Some(body));
    if route.is_path_bound(&names) || in_body {
        return Ok(None);
    }
    let Some(last) = fields.last() else {
        return Ok(None);
    };
    if last.is_map() {
        return Err(BadRequest(format!(
            "query parameter {key:?}: map fields cannot be set in the query string"
        )));
    }
    if let Kind::Message(message) = last.kind()
        && !is_scalar_wkt(&message)
    {
        return Err(BadRequest(format!(
            "query parameter {key:?}: {} is a message; set its fields as {key}.<field>",
            last.name()
        )));
    }
    Ok(Some(fields))
}

/// Sets the field at the end of `fields` (a path from the message down) from text values: all of them
/// for a repeated field (appended), exactly one otherwise.
fn set_from_text(
    message: &mut DynamicMessage,
    fields: &[FieldDescriptor],
    values: &[String],
) -> Result<(), String> {
    let Some(last) = fields.last() else {
        return Ok(());
    };
    let mut json = if last.is_list() {
        let items = values.iter().map(|v| text_to_json(&last.kind(), v));
        Value::Array(items.collect::<Result<_, _>>()?)
    } else {
        match values {
            [one] => text_to_json(&last.kind(), one)?,
            _ => return Err(format!("given {} times, but it is not repeated", values.len())),
        }
    };
    for field in fields.iter().rev() {
        json = Value::Object(Map::from_iter([(field.name().to_string(), json)]));
    }
    // Strict here: an enum name that does not exist is an error, not a silently dropped value.
    let partial = deserialize(&message.descriptor(), json, &DeserializeOptions::new())
        .map_err(|(_, e)| format!("{} ({e})", quoted(values)))?;
    message
        .merge(partial.encode_to_vec().as_slice())
        .map_err(|e| e.to_string())
}

fn quoted(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    quoted.join(", ")
}

/// The JSON value protobuf's JSON mapping reads for a field of `kind` given as `text`: numbers, bytes and
/// well-known types are read from strings; booleans as Go's `strconv.ParseBool`; enums by name or number.
fn text_to_json(kind: &Kind, text: &str) -> Result<Value, String> {
    match kind {
        Kind::Bool => match text {
            "true" | "True" | "TRUE" | "t" | "T" | "1" => Ok(Value::Bool(true)),
            "false" | "False" | "FALSE" | "f" | "F" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("{text:?} is not a boolean")),
        },
        Kind::Enum(_) => Ok(text
            .parse::<i32>()
            .map_or_else(|_| Value::String(text.to_string()), Value::from)),
        _ => Ok(Value::String(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use prost_reflect::{DescriptorPool, Value as Field};

    use super::*;
    use crate::{api::FILE_DESCRIPTOR_SET, rest::routes::RouteTable};

    fn pool() -> DescriptorPool {
        DescriptorPool::decode(FILE_DESCRIPTOR_SET).unwrap()
    }

    fn route(rpc: &str) -> Route {
        let table = RouteTable::from_pool(&pool()).unwrap();
        table
            .routes()
            .iter()
            .find(|r| r.rpc.name() == rpc)
            .unwrap()
            .clone()
    }

    fn descriptor(name: &str) -> MessageDescriptor {
        pool().get_message_by_name(name).unwrap()
    }

    fn whole(name: &str, body: &str) -> Result<DynamicMessage, BadRequest> {
        body_message(&descriptor(name), &BodyRule::Whole, body.as_bytes())
    }

    fn get(message: &DynamicMessage, name: &str) -> Field {
        message.get_field_by_name(name).unwrap().into_owned()
    }

    #[test]
    fn int64_as_string_or_number() {
        for body in [r#"{"limit":"9007199254740993"}"#, r#"{"limit":9007199254740993}"#] {
            let m = whole("proto.ListAllClustersRequest", body).unwrap();
            assert_eq!(get(&m, "limit"), Field::I64(9_007_199_254_740_993), "{body}");
        }
        let err = whole("proto.ListAllClustersRequest", r#"{"limit":"1.5x"}"#).unwrap_err();
        assert!(err.0.contains("\"limit\""), "{err}");
    }

    #[test]
    fn both_field_name_forms_and_unknown_keys() {
        let m = whole(
            "proto.RayJobSubmission",
            r#"{"submission_id":"a","entrypointNumCpus":1.5,"entrypoint_num_gpus":"2","nope":1}"#,
        )
        .unwrap();
        assert_eq!(get(&m, "submission_id"), Field::String("a".into()));
        assert_eq!(get(&m, "entrypoint_num_cpus"), Field::F32(1.5));
        assert_eq!(get(&m, "entrypoint_num_gpus"), Field::F32(2.0));
        let m = whole("proto.RayJobSubmission", r#"{"submissionId":"b"}"#).unwrap();
        assert_eq!(get(&m, "submission_id"), Field::String("b".into()));
    }

    #[test]
    fn enums_by_name_number_and_unknown_names_dropped() {
        let m = whole("proto.EnvValueFrom", r#"{"source":"FIELD"}"#).unwrap();
        assert_eq!(get(&m, "source"), Field::EnumNumber(3));
        let m = whole("proto.EnvValueFrom", r#"{"source":2}"#).unwrap();
        assert_eq!(get(&m, "source"), Field::EnumNumber(2));
        // protojson with DiscardUnknown ignores enum names it does not know, as KubeRay's server does.
        let m = whole("proto.EnvValueFrom", r#"{"source":"NOPE","name":"n"}"#).unwrap();
        assert_eq!(get(&m, "source"), Field::EnumNumber(0));
        assert_eq!(get(&m, "name"), Field::String("n".into()));
        let err = whole("proto.EnvValueFrom", r#"{"source":true}"#).unwrap_err();
        assert!(err.0.contains("\"source\""), "{err}");
    }

    #[test]
    fn query_strings_snake_camel_nested_repeated_and_enums() {
        let list = route("ListRayServices");
        let m = request_message(&list, vec![], Some("pageToken=t&page_size=3"), b"").unwrap();
        assert_eq!(get(&m, "page_token"), Field::String("t".into()));
        assert_eq!(get(&m, "page_size"), Field::I32(3));
        // A route's query string may set nested fields, repeated fields and enums (a made-up GET with
        // `EnvValueFrom`/`Volume` fields is enough: the rules do not depend on the route).
        let mut route = list.clone();
        route.body = BodyRule::None;
        let mut message = DynamicMessage::new(descriptor("proto.HeadGroupSpec"));
        let query = "volumes=x&security_context.capabilities.add=A&securityContext.capabilities.add=B\
                     &security_context.privileged=true&imagePullPolicy=Always";
        // `volumes` is a repeated message: it cannot be given as text.
        assert!(apply_query(&route, &mut message, query).is_err());
        let query = "security_context.capabilities.add=A&securityContext.capabilities.add=B\
                     &security_context.privileged=t&imagePullPolicy=Always&nothing.at=all";
        apply_query(&route, &mut message, query).unwrap();
        let context = get(&message, "security_context");
        let context = context.as_message().unwrap();
        assert_eq!(get(context, "privileged"), Field::Bool(true));
        let capabilities = get(context, "capabilities");
        let add = get(capabilities.as_message().unwrap(), "add");
        assert_eq!(
            add,
            Field::List(vec![Field::String("A".into()), Field::String("B".into())])
        );
        assert_eq!(get(&message, "imagePullPolicy"), Field::String("Always".into()));

        let mut message = DynamicMessage::new(descriptor("proto.EnvValueFrom"));
        apply_query(&route, &mut message, "source=SECRET").unwrap();
        assert_eq!(get(&message, "source"), Field::EnumNumber(1));
        apply_query(&route, &mut message, "source=3").unwrap();
        assert_eq!(get(&message, "source"), Field::EnumNumber(3));
        let err = apply_query(&route, &mut message, "source=NOPE").unwrap_err();
        assert!(err.0.contains("\"source\"") && err.0.contains("NOPE"), "{err}");
        let err = apply_query(&route, &mut message, "name=a&name=b").unwrap_err();
        assert!(err.0.contains("\"name\""), "{err}");
    }

    #[test]
    fn path_wins_over_body_and_query() {
        let update = route("UpdateRayService");
        let captures = vec![
            (vec!["namespace".to_string()], "ns".to_string()),
            (vec!["name".to_string()], "svc".to_string()),
        ];
        let m = request_message(
            &update,
            captures,
            Some("name=other&service.name=x"),
            br#"{"name":"n"}"#,
        )
        .unwrap();
        assert_eq!(get(&m, "name"), Field::String("svc".into()));
        assert_eq!(get(&m, "namespace"), Field::String("ns".into()));
        let service = get(&m, "service");
        assert_eq!(
            get(service.as_message().unwrap(), "name"),
            Field::String("n".into())
        );
    }

    #[test]
    fn responses_as_kuberay_writes_them() {
        let mut info = DynamicMessage::new(descriptor("proto.JobSubmissionInfo"));
        info.set_field_by_name("submission_id", Field::String("s".into()));
        info.set_field_by_name("start_time", Field::U64(1_700_000_000_123));
        info.set_field_by_name("end_time", Field::U64(0));
        let json: Value = serde_json::from_slice(&response_json(&info).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"submissionId":"s","startTime":"1700000000123"})
        );
        let empty = DynamicMessage::new(descriptor("google.protobuf.Empty"));
        assert_eq!(response_json(&empty).unwrap(), b"{}");
        let mut from = DynamicMessage::new(descriptor("proto.EnvValueFrom"));
        from.set_field_by_name("source", Field::EnumNumber(2));
        assert_eq!(response_json(&from).unwrap(), br#"{"source":2}"#);
    }
}
