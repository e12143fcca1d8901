//! From schemars' JSON Schema to the structural OpenAPI v3 schema a CRD needs.
//!
//! The API server accepts a CRD schema only if it is structural: no `$ref`, a `type` on every node, and
//! `anyOf`/`oneOf`/`allOf` only as pure value constraints. schemars produces `$ref`s to shared definitions,
//! `null` in the types of `Option` fields and `anyOf` around referenced optional types; these functions
//! remove all three, and [`check_structural`] proves the result.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value};

use super::kubernetes;

/// Nesting deeper than this is a recursive type, which a CRD schema cannot express.
const MAX_DEPTH: usize = 64;

/// Keywords whose value is one schema.
const SCHEMA_KEYWORDS: &[&str] = &["items", "additionalProperties", "not"];
/// Keywords whose value is a list of schemas.
const SCHEMA_LIST_KEYWORDS: &[&str] = &["anyOf", "oneOf", "allOf"];
/// Documentation and JSON Schema bookkeeping, which the CRD does not carry (see the module docs of `crd`).
const DROPPED_KEYWORDS: &[&str] = &[
    "description",
    "title",
    "$schema",
    "$id",
    "$comment",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
];

/// schemars as the schemas are generated here: definitions kept apart (they are corrected by name before
/// they are inlined), and no transforms (normalization is ours).
pub(super) fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = false;
        s.meta_schema = None;
        s.transforms.clear();
    })
}

/// The inlined, normalized schemas of `spec` and `status`.
pub(super) fn spec_and_status<Spec: JsonSchema, Status: JsonSchema>() -> Result<(Value, Value), String> {
    let settings = settings();
    let prefix = format!("#{}/", settings.definitions_path);
    let mut generator = settings.into_generator();
    let spec = generator.subschema_for::<Spec>().to_value();
    let status = generator.subschema_for::<Status>().to_value();
    let mut definitions = generator.take_definitions(false);
    kubernetes::correct(&mut definitions)?;
    let resolve = |schema: &Value| -> Result<Value, String> {
        let inlined = inline(schema, &definitions, &prefix, 0)?;
        Ok(normalize(inlined))
    };
    Ok((resolve(&spec)?, resolve(&status)?))
}

/// `schema` with every `$ref` replaced by the definition it names. Keywords next to a `$ref` (a field's
/// default or validation rules) win over the definition's.
fn inline(
    schema: &Value,
    definitions: &Map<String, Value>,
    prefix: &str,
    depth: usize,
) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nesting deeper than {MAX_DEPTH}: is a type recursive?"));
    }
    let Value::Object(map) = schema else {
        return Ok(schema.clone());
    };
    let mut out = Map::new();
    if let Some(reference) = map.get("$ref") {
        let name = reference
            .as_str()
            .and_then(|r| r.strip_prefix(prefix))
            .map(|n| n.replace("~1", "/").replace("~0", "~"))
            .ok_or_else(|| format!("unexpected $ref {reference}"))?;
        let definition = definitions
            .get(&name)
            .ok_or_else(|| format!("$ref to unknown definition {name}"))?;
        if let Value::Object(definition) = inline(definition, definitions, prefix, depth + 1)? {
            out = definition;
        }
    }
    for (key, value) in map {
        let value = match key.as_str() {
            "$ref" => continue,
            "properties" => match value {
                Value::Object(properties) => Value::Object(
                    properties
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), inline(v, definitions, prefix, depth + 1)?)))
                        .collect::<Result<_, String>>()?,
                ),
                other => other.clone(),
            },
            k if SCHEMA_KEYWORDS.contains(&k) => inline(value, definitions, prefix, depth + 1)?,
            k if SCHEMA_LIST_KEYWORDS.contains(&k) => match value {
                Value::Array(items) => Value::Array(
                    items
                        .iter()
                        .map(|v| inline(v, definitions, prefix, depth + 1))
                        .collect::<Result<_, _>>()?,
                ),
                other => other.clone(),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Ok(Value::Object(out))
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// Removes what the CRD does not carry and what `Option` added: `null` from `type` and `enum`, the
/// `{"type": "null"}` branch of an `anyOf`/`oneOf` (the branch that remains is merged into its parent),
/// `"default": null`, and the float formats controller-gen does not emit either.
fn normalize(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    for keyword in DROPPED_KEYWORDS {
        map.remove(*keyword);
    }
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            map.insert("type".into(), single);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| f == "float" || f == "double")
    {
        map.remove("format");
    }
    // schemars writes bounds as floats; an integer's bounds are integers.
    if map.get("type").is_some_and(|t| t == "integer") {
        for keyword in ["minimum", "maximum"] {
            if let Some(bound) = map
                .get(keyword)
                .and_then(Value::as_f64)
                .filter(|b| b.fract() == 0.0)
            {
                #[expect(clippy::cast_possible_truncation, reason = "a whole number within i64")]
                map.insert(keyword.into(), Value::from(bound as i64));
            }
        }
    }
    // Like controller-gen, in name order: the order means nothing to the API server.
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    // schemars writes an enum whose variants have doc comments as a `oneOf` of `const`s, to keep each
    // variant's description; without descriptions that is just an `enum`.
    if let Some(values) = map
        .get("oneOf")
        .and_then(Value::as_array)
        .and_then(|b| constants(b))
    {
        map.remove("oneOf");
        map.insert("type".into(), Value::String("string".into()));
        map.insert("enum".into(), Value::Array(values));
    }
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = map.get_mut(keyword) else {
            continue;
        };
        branches.retain(|b| !is_null_schema(b));
        if branches.len() == 1 {
            let Some(Value::Object(branch)) = branches.pop() else {
                continue;
            };
            map.remove(keyword);
            for (key, value) in branch {
                map.entry(key).or_insert(value);
            }
            // The merged branch may itself have been an `Option`.
            return normalize(Value::Object(map));
        }
    }
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Value::Object(properties) = value {
                    for property in properties.values_mut() {
                        *property = normalize(property.take());
                    }
                }
            }
            k if SCHEMA_KEYWORDS.contains(&k) => *value = normalize(value.take()),
            k if SCHEMA_LIST_KEYWORDS.contains(&k) => {
                if let Value::Array(items) = value {
                    for item in items.iter_mut() {
                        *item = normalize(item.take());
                    }
                }
            }
            _ => {}
        }
    }
    Value::Object(map)
}

/// The values of a `oneOf` whose branches are all string constants (`const` or `enum`), or `None`.
fn constants(branches: &[Value]) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    for branch in branches {
        let branch = branch.as_object()?;
        for (key, value) in branch {
            match (key.as_str(), value) {
                ("const", Value::String(_)) => values.push(value.clone()),
                ("enum", Value::Array(items)) if items.iter().all(Value::is_string) => {
                    values.extend(items.iter().cloned());
                }
                ("type", Value::String(t)) if t == "string" => {}
                (k, _) if DROPPED_KEYWORDS.contains(&k) => {}
                _ => return None,
            }
        }
    }
    Some(values)
}

/// Fails unless `schema` is structural in the API server's sense, naming the first offending path: every
/// node has a `type` (or is int-or-string, or keeps unknown fields), logical combinators only constrain
/// values, nothing is left unresolved, and the list-map keys exist and are required or defaulted.
pub(super) fn check_structural(schema: &Value, path: &str) -> Result<(), String> {
    let map = schema
        .as_object()
        .ok_or_else(|| format!("{path}: a schema must be an object"))?;
    let here = if path.is_empty() { "." } else { path };
    for keyword in ["$ref", "$defs", "definitions"] {
        if map.contains_key(keyword) {
            return Err(format!("{here}: unexpected {keyword}"));
        }
    }
    let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    let preserves = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if !map.contains_key("type") && !int_or_string && !preserves {
        return Err(format!("{here}: no type"));
    }
    for keyword in SCHEMA_LIST_KEYWORDS {
        if let Some(branches) = map.get(*keyword) {
            let ok = int_or_string
                && *keyword == "anyOf"
                && branches.as_array().is_some_and(|b| {
                    b.iter().all(|b| {
                        b.as_object()
                            .is_some_and(|b| b.len() == 1 && b.contains_key("type"))
                    })
                });
            if !ok {
                return Err(format!("{here}: {keyword} that is not int-or-string: {branches}"));
            }
        }
    }
    if map.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map") {
        let keys = map.get("x-kubernetes-list-map-keys").and_then(Value::as_array);
        let items = map.get("items");
        let required = items.and_then(|i| i.get("required")).and_then(Value::as_array);
        for key in keys.into_iter().flatten() {
            let property = items
                .and_then(|i| i.get("properties"))
                .and_then(|p| p.get(key.as_str()?));
            let Some(property) = property else {
                return Err(format!(
                    "{here}: list-map key {key} is not a property of the items"
                ));
            };
            let is_required = required.is_some_and(|r| r.contains(key));
            if !is_required && property.get("default").is_none() {
                return Err(format!(
                    "{here}: list-map key {key} is neither required nor defaulted"
                ));
            }
        }
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, property) in properties {
            check_structural(property, &format!("{path}.{name}"))?;
        }
    }
    if let Some(items) = map.get("items") {
        check_structural(items, &format!("{path}[]"))?;
    }
    if let Some(additional @ Value::Object(_)) = map.get("additionalProperties") {
        check_structural(additional, &format!("{path}{{}}"))?;
    }
    Ok(())
}

/// `value` with the keys of every object in sorted order, whatever map serde_json was built with.
pub(super) fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
