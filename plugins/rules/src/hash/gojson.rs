//! What Go's `json.Marshal` writes for a value that `json.Unmarshal` decoded from a JSON document into the
//! Go types of [`super::go_types`]. Members come in the Go struct's order; members the Go type does not
//! have are dropped (as decoding drops them); members the document leaves out are Go zero values, written
//! unless `omitempty` or `omitzero` leave them out; maps are written with sorted keys; strings are escaped
//! as Go escapes them (`<`, `>` and `&` too).

use serde_json::Value;

use super::{
    go_types::TYPES,
    gotime, quantity,
    table::{Field, Ty},
};

/// Go's JSON for `value` decoded into the type `ty` (an index into [`TYPES`]).
pub fn encode(ty: usize, value: &Value) -> String {
    let mut out = String::new();
    write(ty, Some(value), &mut out);
    out
}

/// The type of the member `name` of the struct `index` (through pointers), if it has one.
pub fn member(index: usize, name: &str) -> Option<usize> {
    match ty(index) {
        Ty::Ptr(elem) => member(*elem, name),
        Ty::Struct(fields) => fields.iter().find(|f| f.name == name).map(|f| f.ty),
        _ => None,
    }
}

fn ty(index: usize) -> &'static Ty {
    // The generated table only refers to its own entries; an out-of-range index would be a generator bug,
    // written as a raw value rather than a panic.
    TYPES.get(index).unwrap_or(&Ty::Raw)
}

/// Writes the value; `None` and JSON `null` both decode to Go's zero value.
fn write(index: usize, value: Option<&Value>, out: &mut String) {
    let value = value.filter(|v| !v.is_null());
    match ty(index) {
        Ty::Bool => out.push_str(if value.and_then(Value::as_bool) == Some(true) {
            "true"
        } else {
            "false"
        }),
        Ty::Int => match value {
            Some(Value::Number(n)) => out.push_str(&n.to_string()),
            _ => out.push('0'),
        },
        Ty::Str => string(value.and_then(Value::as_str).unwrap_or_default(), out),
        Ty::Quantity => string(&quantity_text(value), out),
        Ty::Time => match value.and_then(Value::as_str) {
            Some(text) => string(&gotime::rfc3339_utc(text).unwrap_or_else(|| text.to_owned()), out),
            None => out.push_str("null"),
        },
        Ty::IntOrString => match value {
            Some(Value::Number(n)) => out.push_str(&n.to_string()),
            Some(Value::String(s)) => string(s, out),
            _ => out.push('0'),
        },
        Ty::Raw => match value {
            Some(v) => raw(v, out),
            None => out.push_str("null"),
        },
        Ty::Ptr(elem) => match value {
            Some(v) => write(*elem, Some(v), out),
            None => out.push_str("null"),
        },
        Ty::Slice(elem) => match value {
            Some(Value::Array(items)) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(*elem, Some(item), out);
                }
                out.push(']');
            }
            _ => out.push_str("null"),
        },
        Ty::Map(elem) => match value {
            Some(Value::Object(map)) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(key, out);
                    out.push(':');
                    write(*elem, map.get(key), out);
                }
                out.push('}');
            }
            _ => out.push_str("null"),
        },
        Ty::Struct(fields) => object(fields, value, out),
    }
}

fn object(fields: &[Field], value: Option<&Value>, out: &mut String) {
    let members = value.and_then(Value::as_object);
    out.push('{');
    let mut first = true;
    for field in fields {
        let member = members.and_then(|m| m.get(field.name)).filter(|v| !v.is_null());
        if (field.omit_empty && is_empty(field.ty, member)) || (field.omit_zero && is_zero(field.ty, member))
        {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        string(field.name, out);
        out.push(':');
        write(field.ty, member, out);
    }
    out.push('}');
}

fn quantity_text(value: Option<&Value>) -> String {
    let text = match value {
        None => return "0".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    quantity::canonical(&text).unwrap_or(text)
}

/// `omitempty`: false, 0, "", a nil pointer, an empty slice or map. Structs are never empty.
fn is_empty(index: usize, value: Option<&Value>) -> bool {
    match (ty(index), value) {
        (_, None) => !matches!(
            ty(index),
            Ty::Struct(_) | Ty::Quantity | Ty::Time | Ty::IntOrString | Ty::Raw
        ),
        (Ty::Bool, Some(v)) => v.as_bool() != Some(true),
        (Ty::Int, Some(v)) => v.as_f64() == Some(0.0),
        (Ty::Str, Some(v)) => v.as_str().is_none_or(str::is_empty),
        (Ty::Slice(_), Some(v)) => v.as_array().is_none_or(Vec::is_empty),
        (Ty::Map(_), Some(v)) => v.as_object().is_none_or(serde_json::Map::is_empty),
        _ => false,
    }
}

/// `omitzero`: the Go zero value (or what the type's `IsZero` says). An empty slice or map is not zero.
fn is_zero(index: usize, value: Option<&Value>) -> bool {
    let Some(value) = value else {
        return true;
    };
    match ty(index) {
        Ty::Bool | Ty::Int | Ty::Str => is_empty(index, Some(value)),
        Ty::Quantity => quantity_text(Some(value)) == "0",
        Ty::IntOrString => value.as_f64() == Some(0.0),
        Ty::Struct(fields) => fields
            .iter()
            .all(|f| is_zero(f.ty, value.get(f.name).filter(|v| !v.is_null()))),
        _ => false,
    }
}

/// A raw JSON value compacted as Go compacts a `MarshalJSON` result.
fn raw(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                raw(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(key, out);
                out.push(':');
                raw(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON string as Go's encoder writes it, HTML-safe.
pub fn string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strings_are_escaped_like_go() {
        let mut out = String::new();
        string("a<b>&\"\\\n\t\u{1}\u{2028}é", &mut out);
        assert_eq!(out, r#""a\u003cb\u003e\u0026\"\\\n\t\u0001\u2028é""#);
    }

    #[test]
    fn go_order_zero_values_and_omitempty() {
        let spec = json!({
            "rayVersion": "2.9.0",
            "headGroupSpec": {"rayStartParams": {"b": "2", "a": "1"}, "template": {}, "unknown": 1},
            "workerGroupSpecs": [{"groupName": "w", "template": {"spec": {"containers": []}}}]
        });
        let text = encode(super::super::go_types::RAY_CLUSTER_SPEC, &spec);
        assert!(
            text.starts_with(r#"{"headGroupSpec":{"template":{"metadata":{},"spec":{"containers":null}},"rayStartParams":{"a":"1","b":"2"}},"rayVersion":"2.9.0","workerGroupSpecs":[{"groupName":"w","minReplicas":null,"maxReplicas":null,"rayStartParams":null,"template":{"metadata":{},"spec":{"containers":[]}},"scaleStrategy":{}}]}"#),
            "{text}"
        );
    }
}
