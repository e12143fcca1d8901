//! JSON schemas of the API's messages and enums, generated from the descriptors.
//!
//! Every message and enum has two schemas, because what the server sends and what it accepts differ:
//!
//! - **Response schemas** (`proto.Cluster`) describe what the server writes: lowerCamelCase names,
//!   enums as numbers (`type: integer` with the numbers in `enum`, the names in `x-enum-varnames` and the
//!   description), 64-bit integers as decimal strings (`type: string`, `format: int64`/`uint64`, a
//!   pattern). They have **no `required`**: proto3's JSON mapping leaves out every field that holds its
//!   default value, so any field may be missing from a valid response, REQUIRED ones included.
//! - **Request schemas** (`proto.Cluster-Input`; `-` cannot occur in a proto name, so these never clash)
//!   describe what the server accepts: enums by name or number (`oneOf`), numbers as JSON numbers or
//!   decimal strings (`oneOf`), and `required` listing the fields marked `(google.api.field_behavior) =
//!   REQUIRED`, except output-only ones. The proto field names (snake_case) are accepted too and unknown
//!   keys are ignored; the schemas name the lowerCamelCase form only.
//!
//! In both, `OUTPUT_ONLY` fields are `readOnly: true` (a request may carry them; the server ignores them)
//! and deprecated fields are `deprecated: true`. Well-known types are inlined in their JSON forms
//! (`Timestamp` is an RFC 3339 `date-time` string), except `Any` (an object with `@type`) and `Empty` (an
//! empty object), which are components.

use std::collections::{BTreeMap, BTreeSet};

use prost_reflect::{
    DescriptorPool, EnumDescriptor, ExtensionDescriptor, FieldDescriptor, Kind, MessageDescriptor,
};
use serde_json::{Map, Value, json};

use super::comments::Comments;

/// `google.api.FieldBehavior` values the schemas use.
const REQUIRED: i32 = 2;
const OUTPUT_ONLY: i32 = 3;

/// Which side of a call a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// What the server sends.
    Response,
    /// What the server accepts.
    Request,
}

enum Pending {
    Message(MessageDescriptor, Mode),
    Enum(EnumDescriptor, Mode),
}

/// The component schemas referenced so far; [`Schemas::finish`] generates them (and what they reference).
pub(crate) struct Schemas<'a> {
    comments: &'a Comments,
    field_behavior: Option<ExtensionDescriptor>,
    done: BTreeMap<String, Value>,
    queued: BTreeSet<String>,
    pending: Vec<Pending>,
}

/// `{"$ref": "#/components/schemas/<name>"}`.
pub(crate) fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn component_name(full_name: &str, mode: Mode) -> String {
    match mode {
        Mode::Response => full_name.to_string(),
        Mode::Request => format!("{full_name}-Input"),
    }
}

impl<'a> Schemas<'a> {
    pub(crate) fn new(pool: &DescriptorPool, comments: &'a Comments) -> Self {
        Self {
            comments,
            field_behavior: pool.get_extension_by_name("google.api.field_behavior"),
            done: BTreeMap::new(),
            queued: BTreeSet::new(),
            pending: Vec::new(),
        }
    }

    /// The schema of a message: a reference to its component, or a well-known type's JSON form.
    pub(crate) fn message(&mut self, message: &MessageDescriptor, mode: Mode) -> Value {
        if let Some(inline) = well_known(message, mode) {
            return inline;
        }
        let mode = if message.full_name() == "google.protobuf.Any" {
            Mode::Response
        } else {
            mode
        };
        let name = component_name(message.full_name(), mode);
        if self.queued.insert(name.clone()) {
            self.pending.push(Pending::Message(message.clone(), mode));
        }
        reference(&name)
    }

    fn enumeration(&mut self, enumeration: &EnumDescriptor, mode: Mode) -> Value {
        let name = component_name(enumeration.full_name(), mode);
        if self.queued.insert(name.clone()) {
            self.pending.push(Pending::Enum(enumeration.clone(), mode));
        }
        reference(&name)
    }

    /// The schema of one value of `kind`.
    pub(crate) fn kind(&mut self, kind: &Kind, mode: Mode) -> Value {
        match kind {
            Kind::Message(message) => self.message(message, mode),
            Kind::Enum(enumeration) => self.enumeration(enumeration, mode),
            scalar => scalar_schema(scalar, mode),
        }
    }

    /// The schema of a field (maps as objects, repeated fields as arrays) with its description, and
    /// `readOnly`/`deprecated` as the field says.
    pub(crate) fn field(&mut self, field: &FieldDescriptor, mode: Mode) -> Value {
        let schema = if field.is_map() {
            let value = match field.kind() {
                Kind::Message(entry) => self.kind(&entry.map_entry_value_field().kind(), mode),
                _ => json!({}),
            };
            json!({ "type": "object", "additionalProperties": value })
        } else if field.is_list() {
            json!({ "type": "array", "items": self.kind(&field.kind(), mode) })
        } else {
            self.kind(&field.kind(), mode)
        };
        let mut notes = Map::new();
        if let Some(comment) = self.comments.get(field.parent_file().name(), field.path()) {
            notes.insert("description".into(), comment.into());
        }
        if self.has_behavior(field, OUTPUT_ONLY) {
            notes.insert("readOnly".into(), true.into());
        }
        if is_deprecated(field) {
            notes.insert("deprecated".into(), true.into());
        }
        annotate(schema, notes)
    }

    /// Whether the field is marked with the `google.api.field_behavior` value `behavior`.
    fn has_behavior(&self, field: &FieldDescriptor, behavior: i32) -> bool {
        let Some(extension) = &self.field_behavior else {
            return false;
        };
        let options = field.options();
        let value = options.get_extension(extension);
        value
            .as_list()
            .is_some_and(|list| list.iter().any(|v| v.as_enum_number() == Some(behavior)))
    }

    /// Whether a request must give the field (REQUIRED and not output-only).
    pub(crate) fn is_required(&self, field: &FieldDescriptor) -> bool {
        self.has_behavior(field, REQUIRED) && !self.has_behavior(field, OUTPUT_ONLY)
    }

    /// The object schema of `message`'s fields, leaving out those `skip` names.
    pub(crate) fn object(
        &mut self,
        message: &MessageDescriptor,
        mode: Mode,
        skip: &dyn Fn(&FieldDescriptor) -> bool,
    ) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for field in message.fields().filter(|f| !skip(f)) {
            properties.insert(field.json_name().to_string(), self.field(&field, mode));
            if mode == Mode::Request && self.is_required(&field) {
                required.push(Value::from(field.json_name()));
            }
        }
        let mut schema = json!({ "type": "object", "properties": properties });
        if let Some(comment) = self.comments.get(message.parent_file().name(), message.path()) {
            schema["description"] = comment.into();
        }
        if !required.is_empty() {
            schema["required"] = required.into();
        }
        schema
    }

    /// Every component schema referenced so far and everything they reference.
    pub(crate) fn finish(mut self) -> Map<String, Value> {
        while let Some(next) = self.pending.pop() {
            let (name, schema) = match next {
                Pending::Message(message, mode) => {
                    let schema = if message.full_name() == "google.protobuf.Any" {
                        any_schema()
                    } else {
                        self.object(&message, mode, &|_| false)
                    };
                    (component_name(message.full_name(), mode), schema)
                }
                Pending::Enum(enumeration, mode) => (
                    component_name(enumeration.full_name(), mode),
                    self.enum_schema(&enumeration, mode),
                ),
            };
            self.done.insert(name, schema);
        }
        self.done.into_iter().collect()
    }

    /// Numbers in responses; names or numbers in requests. The description lists both.
    fn enum_schema(&self, enumeration: &EnumDescriptor, mode: Mode) -> Value {
        let values: Vec<_> = enumeration.values().collect();
        let numbers: Vec<i32> = values.iter().map(|v| v.number()).collect();
        let names: Vec<&str> = values.iter().map(|v| v.name()).collect();
        let mut lines = Vec::new();
        if let Some(comment) = self
            .comments
            .get(enumeration.parent_file().name(), enumeration.path())
        {
            lines.push(format!("{comment}\n"));
        }
        lines.push(match mode {
            Mode::Response => "Sent as the number of the value:".to_string(),
            Mode::Request => "Given as the name or the number of the value:".to_string(),
        });
        for value in &values {
            let comment = self.comments.get(value.parent_file().name(), value.path());
            let comment = comment.map(|c| format!(": {c}")).unwrap_or_default();
            lines.push(format!("- {} = `{}`{comment}", value.number(), value.name()));
        }
        let description = lines.join("\n");
        match mode {
            Mode::Response => json!({
                "type": "integer", "format": "int32", "enum": numbers,
                "x-enum-varnames": names, "description": description,
            }),
            Mode::Request => json!({
                "oneOf": [
                    { "type": "string", "enum": names },
                    { "type": "integer", "format": "int32", "enum": numbers },
                ],
                "description": description,
            }),
        }
    }
}

/// `schema` with the keys of `notes` added (a `$ref` is wrapped in `allOf`, since OpenAPI 3.0 ignores
/// the siblings of a `$ref`).
fn annotate(schema: Value, notes: Map<String, Value>) -> Value {
    if notes.is_empty() {
        return schema;
    }
    let mut schema = if schema.get("$ref").is_some() {
        json!({ "allOf": [schema] })
    } else {
        schema
    };
    if let Value::Object(object) = &mut schema {
        object.extend(notes);
    }
    schema
}

fn is_deprecated(field: &FieldDescriptor) -> bool {
    let options = field.options();
    options
        .get_field_by_name("deprecated")
        .is_some_and(|v| v.as_bool() == Some(true))
}

fn any_schema() -> Value {
    json!({
        "type": "object",
        "description": "A message of any type: `@type` names it, the other keys are its fields.",
        "properties": { "@type": { "type": "string" } },
        "additionalProperties": true,
    })
}

/// The JSON forms of the well-known types that are not plain messages (`None` for the others).
fn well_known(message: &MessageDescriptor, mode: Mode) -> Option<Value> {
    let wrapped = |kind: Kind| {
        let mut schema = scalar_schema(&kind, mode);
        schema["nullable"] = true.into();
        schema
    };
    Some(match message.full_name() {
        "google.protobuf.Timestamp" => json!({
            "type": "string", "format": "date-time", "description": "An RFC 3339 time, e.g. `2024-05-01T12:00:00Z`.",
        }),
        "google.protobuf.Duration" => json!({
            "type": "string", "pattern": "^-?[0-9]+(\\.[0-9]{1,9})?s$", "description": "Seconds with an `s` suffix, e.g. `1.5s`.",
        }),
        "google.protobuf.FieldMask" => {
            json!({ "type": "string", "description": "Comma-separated field paths." })
        }
        "google.protobuf.Struct" => json!({ "type": "object", "additionalProperties": true }),
        "google.protobuf.Value" => json!({ "description": "Any JSON value." }),
        "google.protobuf.ListValue" => json!({ "type": "array", "items": {} }),
        "google.protobuf.DoubleValue" => wrapped(Kind::Double),
        "google.protobuf.FloatValue" => wrapped(Kind::Float),
        "google.protobuf.Int64Value" => wrapped(Kind::Int64),
        "google.protobuf.UInt64Value" => wrapped(Kind::Uint64),
        "google.protobuf.Int32Value" => wrapped(Kind::Int32),
        "google.protobuf.UInt32Value" => wrapped(Kind::Uint32),
        "google.protobuf.BoolValue" => wrapped(Kind::Bool),
        "google.protobuf.StringValue" => wrapped(Kind::String),
        "google.protobuf.BytesValue" => wrapped(Kind::Bytes),
        _ => return None,
    })
}

/// Decimal integers, as a pattern.
const SIGNED: &str = "^-?[0-9]+$";
const UNSIGNED: &str = "^[0-9]+$";
const DECIMAL: &str = "^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$";

/// The schema of a scalar field value. 64-bit integers are strings in responses; in requests every
/// number may be a JSON number or a decimal string.
fn scalar_schema(kind: &Kind, mode: Mode) -> Value {
    let number = |schema: Value, pattern: &str| match mode {
        Mode::Response => schema,
        Mode::Request => json!({
            "oneOf": [schema, { "type": "string", "pattern": pattern, "description": "The number as a string." }],
        }),
    };
    match kind {
        Kind::Double => number(json!({ "type": "number", "format": "double" }), DECIMAL),
        Kind::Float => number(
            json!({ "type": "number", "format": "float", "minimum": -3.402_823_5e38, "maximum": 3.402_823_5e38 }),
            DECIMAL,
        ),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => number(
            json!({ "type": "integer", "format": "int32", "minimum": i32::MIN, "maximum": i32::MAX }),
            SIGNED,
        ),
        Kind::Uint32 | Kind::Fixed32 => number(
            json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": u32::MAX }),
            UNSIGNED,
        ),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => match mode {
            Mode::Response => json!({ "type": "string", "format": "int64", "pattern": SIGNED }),
            Mode::Request => json!({ "oneOf": [
                { "type": "string", "format": "int64", "pattern": SIGNED },
                { "type": "integer", "format": "int64", "minimum": i64::MIN, "maximum": i64::MAX },
            ]}),
        },
        Kind::Uint64 | Kind::Fixed64 => match mode {
            Mode::Response => json!({ "type": "string", "format": "uint64", "pattern": UNSIGNED }),
            Mode::Request => json!({ "oneOf": [
                { "type": "string", "format": "uint64", "pattern": UNSIGNED },
                { "type": "integer", "format": "int64", "minimum": 0, "maximum": u64::MAX },
            ]}),
        },
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::String => json!({ "type": "string" }),
        Kind::Bytes => json!({ "type": "string", "format": "byte" }),
        Kind::Message(_) | Kind::Enum(_) => json!({}),
    }
}
