//! Where `k8s-openapi`'s schemas of Kubernetes types differ from what the API server publishes for them
//! (and what controller-gen, which made KubeRay's CRDs, puts into a CRD), corrected by definition name
//! before the `$ref`s are inlined.
//!
//! k8s-openapi's schemas leave out the list and map semantics (`x-kubernetes-list-type`, `-list-map-keys`,
//! `-map-type`) and the defaults. Both change what users observe: a list of type `map` refuses two
//! containers with the same name and is merged entry by entry under server-side apply, and defaults are
//! filled in on write. They are kept in `kubernetes.json`, facts taken from the OpenAPI v3 documents of the
//! test API server (Kubernetes 1.36, KubeRay's version) by [`facts_from_openapi`]; the end-to-end tests
//! compare the file with the API server, and refresh it with `KUBERAY_CRDS_BLESS=1`.

use serde_json::{Map, Value, json};

/// `{definition: {"required": [...], "x-kubernetes-map-type"?: ..., "properties": {property: {...}}}}`.
const FACTS: &str = include_str!("kubernetes.json");

/// The regular expression Kubernetes validates quantities with in CRDs.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

const EMBEDDING_LOCAL_OBJECT_REFERENCE: &[&str] = &[
    "io.k8s.api.core.v1.ConfigMapEnvSource",
    "io.k8s.api.core.v1.ConfigMapProjection",
    "io.k8s.api.core.v1.ConfigMapVolumeSource",
    "io.k8s.api.core.v1.SecretEnvSource",
    "io.k8s.api.core.v1.SecretProjection",
];

/// Keywords of a property that [`facts_from_openapi`] keeps.
const PROPERTY_FACTS: &[&str] = &[
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "default",
];

/// Corrects the definitions schemars collected.
pub(super) fn correct(definitions: &mut Map<String, Value>) -> Result<(), String> {
    let facts: Map<String, Value> =
        serde_json::from_str(FACTS).map_err(|e| format!("kubernetes.json: {e}"))?;
    for (name, facts) in &facts {
        let Some(Value::Object(definition)) = definitions.get_mut(name) else {
            continue;
        };
        apply(definition, facts);
    }

    // These types embed `LocalObjectReference` in Go, and controller-gen carries its atomic map type over to
    // them; the published OpenAPI does not. Atomic means server-side apply replaces such a reference as a
    // whole, which is what a reference (a name and whether it is optional) wants.
    for name in EMBEDDING_LOCAL_OBJECT_REFERENCE {
        if let Some(Value::Object(definition)) = definitions.get_mut(*name) {
            definition.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }

    // k8s-openapi marks both as int-or-string without saying which types; an explicit anyOf is what
    // controller-gen writes, and the pattern makes the API server refuse a malformed quantity at once
    // instead of the operator failing on it later.
    replace(
        definitions,
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": true,
        }),
    );
    replace(
        definitions,
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true,
        }),
    );
    // The metadata of embedded objects (Pod templates, Service templates, volume claim templates): only
    // what makes sense before the object exists, as with controller-gen's `generateEmbeddedObjectMeta`.
    // Anything else (uid, ownerReferences, ...) is pruned by the API server.
    replace(
        definitions,
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        json!({
            "type": "object",
            "properties": {
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "name": {"type": "string"},
                "namespace": {"type": "string"},
            },
        }),
    );
    // What the Go type's validation markers require of a condition and the published OpenAPI leaves out;
    // CRDs enforce it (KubeRay's included), so a bad condition from the operator is refused on write.
    if let Some(Value::Object(properties)) = definitions
        .get_mut("io.k8s.apimachinery.pkg.apis.meta.v1.Condition")
        .and_then(|d| d.get_mut("properties"))
    {
        let constraints = [
            (
                "type",
                json!({"maxLength": 316, "pattern": QUALIFIED_NAME_PATTERN}),
            ),
            ("status", json!({"enum": ["True", "False", "Unknown"]})),
            (
                "reason",
                json!({"minLength": 1, "maxLength": 1024, "pattern": REASON_PATTERN}),
            ),
            ("message", json!({"maxLength": 32768})),
            ("observedGeneration", json!({"minimum": 0})),
        ];
        for (property, constraint) in constraints {
            if let (Some(Value::Object(schema)), Value::Object(constraint)) =
                (properties.get_mut(property), constraint)
            {
                schema.extend(constraint);
            }
        }
    }
    Ok(())
}

/// A condition `type`: an optional DNS-subdomain prefix and a name.
const QUALIFIED_NAME_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
/// A condition `reason`: CamelCase words.
const REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

fn apply(definition: &mut Map<String, Value>, facts: &Value) {
    if let Some(map_type) = facts.get("x-kubernetes-map-type") {
        definition.insert("x-kubernetes-map-type".into(), map_type.clone());
    }
    match facts.get("required") {
        Some(Value::Array(required)) if !required.is_empty() => {
            definition.insert("required".into(), Value::Array(required.clone()));
        }
        _ => {
            definition.remove("required");
        }
    }
    let (Some(Value::Object(properties)), Some(Value::Object(facts))) =
        (definition.get_mut("properties"), facts.get("properties"))
    else {
        return;
    };
    for (name, facts) in facts {
        if let (Some(Value::Object(property)), Value::Object(facts)) = (properties.get_mut(name), facts) {
            property.extend(facts.clone());
        }
    }
}

fn replace(definitions: &mut Map<String, Value>, name: &str, schema: Value) {
    if let Some(definition) = definitions.get_mut(name) {
        *definition = schema;
    }
}

/// The facts `kubernetes.json` holds, for the Kubernetes `definitions` the schemas use, from the OpenAPI
/// v3 documents of an API server (`/openapi/v3/api/v1` and the other group-versions).
///
/// Per definition: its `x-kubernetes-map-type`, its `required` properties, and per property the list and
/// map semantics and the default. Like controller-gen, which only writes defaults that the Go types
/// declare, a default is kept only for a property that is not required (the API server also publishes
/// zero values of required fields as defaults), and only if it is a plain value. Only properties the
/// k8s-openapi types have are kept: the API server may be newer than `k8s-openapi`'s version feature.
pub(super) fn facts_from_openapi(
    definitions: &Map<String, Value>,
    openapi_documents: &[Value],
) -> Result<Value, String> {
    let mut published = Map::new();
    for document in openapi_documents {
        if let Some(Value::Object(schemas)) = document.pointer("/components/schemas") {
            published.extend(schemas.clone());
        }
    }
    let mut facts = Map::new();
    for (name, ours) in definitions.iter().filter(|(name, _)| name.starts_with("io.k8s.")) {
        let Some(theirs) = published.get(name) else {
            return Err(format!("the API server does not publish {name}"));
        };
        let our_properties = ours.get("properties").and_then(Value::as_object);
        let has = |property: &str| our_properties.is_some_and(|p| p.contains_key(property));
        let required: Vec<Value> = theirs
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|p| p.as_str().is_some_and(has))
            .cloned()
            .collect();
        let mut properties = Map::new();
        for (property, schema) in theirs
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !has(property) {
                continue;
            }
            let mut kept = Map::new();
            for keyword in PROPERTY_FACTS {
                let Some(value) = schema.get(*keyword) else {
                    continue;
                };
                let plain = !(value.is_object() || value.is_array() || value.is_null());
                if *keyword == "default" && (required.iter().any(|r| r == property) || !plain) {
                    continue;
                }
                kept.insert((*keyword).to_owned(), value.clone());
            }
            if !kept.is_empty() {
                properties.insert(property.clone(), Value::Object(kept));
            }
        }
        let mut entry = Map::new();
        entry.insert("required".into(), Value::Array(required));
        if let Some(map_type) = theirs.get("x-kubernetes-map-type") {
            entry.insert("x-kubernetes-map-type".into(), map_type.clone());
        }
        entry.insert("properties".into(), Value::Object(properties));
        facts.insert(name.clone(), Value::Object(entry));
    }
    Ok(Value::Object(facts))
}
