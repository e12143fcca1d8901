//! Provenance: what the user asked for, against which a plugin's write is judged.
//!
//! The object a plugin reconciles was written either by a user (whose rights come from Kubernetes' RBAC)
//! or by a plugin for a user (a RayService's RayCluster, a RayJob's RayCluster, a RayCronJob's RayJob):
//! then its controller owner reference names an object of a kind a plugin reconciles. Following those
//! references up (by uid, at most [`MAX_DEPTH`] steps) leads to the **root**, the object a user wrote.
//!
//! - The root's spec, labels and annotations are the user's request: every fact below may come from it.
//! - The specs on the way down (the reconciled object's included) were each admitted when a plugin wrote
//!   them, by the very rules that read references and Pod Security settings (`scan`), so those two kinds of
//!   facts are inherited from them too: a RayCluster a RayService wrote keeps the Secrets and settings it
//!   was admitted with while the RayService's spec moves on (an old cluster serving during an upgrade).
//! - Everything else (hosts, annotations, selectors, Service types) comes from the root alone: no rule
//!   looks at those when a plugin writes a custom resource, so a plugin-written object cannot vouch for them.
//!
//! An object whose plugin-kind controller is gone (or another object by now) has no root: nothing is the
//! user's request, and only what the reconciled object owns may be referred to.

use std::collections::{BTreeMap, BTreeSet};

use kuberay_core::{HostError, Kind};
use serde_json::{Map, Value};

use super::{
    Cluster, Primary, controller,
    scan::{Target, scan},
    str_at,
};

/// How many controllers up the root is looked for (RayCronJob → RayJob → RayCluster is two).
pub const MAX_DEPTH: usize = 4;

/// The user's request behind one reconcile.
#[derive(Debug, Default)]
pub struct Request {
    /// The root, as `Kind name` for messages; `None` when there is none.
    pub root: Option<String>,
    /// Whether the reconciled object is the root (a user wrote it).
    pub user_wrote_primary: bool,
    /// Names referred to by the root or any spec on the way down, by target.
    names: BTreeMap<Target, BTreeSet<String>>,
    /// Signatures of the Pod Security settings there.
    settings: BTreeSet<String>,
    /// The root's string values (spec, labels and annotations).
    strings: BTreeSet<String>,
    /// Every `annotations` entry of the root (its own and its templates'), and of its `...Annotations` maps.
    annotations: BTreeSet<(String, String)>,
    /// Every label selector of the root's spec (`selector` and `matchLabels` maps).
    selectors: Vec<BTreeMap<String, String>>,
}

impl Request {
    /// Whether the request names `name` as a `target`.
    pub fn names(&self, target: Target, name: &str) -> bool {
        self.names.get(&target).is_some_and(|n| n.contains(name))
    }

    /// Whether the request asks for the Pod Security setting `signature`.
    pub fn asks_for(&self, signature: &str) -> bool {
        self.settings.contains(signature)
    }

    /// Whether the root holds the string `value` anywhere.
    pub fn says(&self, value: &str) -> bool {
        self.strings.contains(value)
    }

    /// Whether the root carries the annotation `key: value` (on itself or one of its templates).
    pub fn annotates(&self, key: &str, value: &str) -> bool {
        self.annotations.contains(&(key.to_string(), value.to_string()))
    }

    /// Whether the root's spec holds exactly this label selector.
    pub fn selects(&self, selector: &BTreeMap<String, String>) -> bool {
        self.selectors.iter().any(|s| s == selector)
    }

    /// The root for messages: `RayService x`, or why there is none.
    pub fn describe(&self) -> &str {
        self.root
            .as_deref()
            .unwrap_or("no user's object (its controller is gone)")
    }

    fn inherit(&mut self, doc: &Value) {
        let found = scan(doc, "");
        for (target, names) in found.names() {
            self.names.entry(target).or_default().extend(names);
        }
        self.settings
            .extend(found.findings.into_iter().map(|f| f.signature));
    }

    fn root_facts(&mut self, root: &Value) {
        let doc = user_doc(root);
        self.inherit(&doc);
        collect(&doc, None, self);
    }
}

/// The parts of an object that are its writer's request: spec, labels and annotations.
fn user_doc(object: &Value) -> Value {
    let mut doc = Map::new();
    if let Some(spec) = object.get("spec") {
        doc.insert("spec".into(), spec.clone());
    }
    for part in ["labels", "annotations"] {
        if let Some(value) = object.pointer(&format!("/metadata/{part}")) {
            doc.insert(part.into(), value.clone());
        }
    }
    Value::Object(doc)
}

/// Strings, annotations and selectors of the root, walked once.
fn collect(value: &Value, key: Option<&str>, into: &mut Request) {
    match value {
        Value::String(s) => {
            into.strings.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, None, into)),
        Value::Object(map) => {
            // `annotations`, and maps of annotations the spec asks to be put on what the plugin writes
            // (KubeRay's `headServiceAnnotations`).
            if key.is_some_and(|k| k == "annotations" || k.ends_with("Annotations")) {
                into.annotations.extend(
                    map.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))),
                );
            }
            if matches!(key, Some("selector" | "matchLabels"))
                && let Some(selector) = string_map(map)
            {
                into.selectors.push(selector);
            }
            for (k, v) in map {
                collect(v, Some(k), into);
            }
        }
        _ => {}
    }
}

/// A map whose values are all strings.
pub fn string_map(map: &Map<String, Value>) -> Option<BTreeMap<String, String>> {
    map.iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// The request behind a reconcile of `primary`. `reconciled` is every kind a plugin reconciles.
pub async fn request(
    cluster: &impl Cluster,
    primary: &Primary,
    reconciled: &BTreeSet<Kind>,
) -> Result<Request, HostError> {
    let mut request = Request::default();
    let Some(mut current) = cluster
        .read(&primary.kind, &primary.namespace, &primary.name)
        .await?
    else {
        return Err(HostError::NotFound(format!(
            "{} {} is gone",
            primary.kind, primary.name
        )));
    };
    let mut kind = primary.kind.clone();
    for depth in 0..=MAX_DEPTH {
        let Some(owner) = controller(&current).filter(|o| {
            let owner_kind = Kind::from_api_version(
                str_at(o, "/apiVersion").unwrap_or_default(),
                str_at(o, "/kind").unwrap_or_default(),
            );
            reconciled.contains(&owner_kind)
        }) else {
            // Written by a user: the root.
            request.user_wrote_primary = depth == 0;
            request.root = Some(format!(
                "{} {}",
                kind.kind,
                str_at(&current, "/metadata/name").unwrap_or_default()
            ));
            request.root_facts(&current);
            return Ok(request);
        };
        if let Some(spec) = current.get("spec") {
            request.inherit(spec);
        }
        let owner_kind = Kind::from_api_version(
            str_at(owner, "/apiVersion").unwrap_or_default(),
            str_at(owner, "/kind").unwrap_or_default(),
        );
        let (name, uid) = (str_at(owner, "/name"), str_at(owner, "/uid"));
        let found = match name {
            Some(name) => cluster.read(&owner_kind, &primary.namespace, name).await?,
            None => None,
        };
        match found {
            Some(next) if uid.is_some() && str_at(&next, "/metadata/uid") == uid => {
                current = next;
                kind = owner_kind;
            }
            // The controller is gone or was replaced: nothing is the user's request.
            _ => return Ok(request),
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_root_gives_every_fact_and_specs_on_the_way_down_references_and_settings() {
        let mut request = Request::default();
        let root = json!({
            "metadata": {"name": "svc", "annotations": {"example.com/snippet": "x"}, "labels": {"team": "a"}},
            "spec": {"rayClusterConfig": {"headGroupSpec": {"template": {
                "metadata": {"annotations": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "env": [{"name": "T", "valueFrom": {
                    "secretKeyRef": {"name": "hf-token", "key": "t"}}}],
                    "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]}}},
                "headServiceAnnotations": {"x": "y"}},
                "serveService": {"spec": {"type": "LoadBalancer", "selector": {"app": "mine"}}}},
        });
        request.root_facts(&root);
        assert!(request.names(Target::Secret, "hf-token"));
        assert!(!request.names(Target::Secret, "other"));
        assert!(request.asks_for("seccomp:Unconfined"));
        assert!(request.says("LoadBalancer"));
        assert!(request.annotates("example.com/snippet", "x"));
        assert!(request.annotates("a", "b"));
        assert!(
            request.annotates("x", "y"),
            "headServiceAnnotations are annotations too"
        );
        assert!(!request.annotates("x", "z"));
        assert!(request.selects(&[("app".to_string(), "mine".to_string())].into()));

        let mut inherited = Request::default();
        inherited.inherit(
            &json!({"authOptions": {"secretName": "tok"}, "ingressOptions": {"host": "evil.example"}}),
        );
        assert!(inherited.names(Target::Secret, "tok"));
        assert!(!inherited.says("evil.example"), "strings are the root's alone");
    }
}
