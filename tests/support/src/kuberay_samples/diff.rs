//! Comparing an operator's graph with the golden one, field by field, in words a reader can act on.

use std::{collections::BTreeMap, fmt};

use serde_json::Value;

use super::graph::{Entry, Graph, canonical};

/// One difference between the golden graph (KubeRay's) and ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// `applied` (the sample's own objects) or `created`.
    pub section: &'static str,
    pub kind: String,
    /// The normalized name.
    pub name: String,
    /// The field (`labels[ray.io/cluster]`, `spec.ports`, `status.conditions[Ready]`, `count`), or `None` when
    /// the whole object is on one side only.
    pub field: Option<String>,
    /// KubeRay's value (compact JSON), `None` when it has none.
    pub kuberay: Option<String>,
    /// Ours, `None` when we have none.
    pub ours: Option<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        match &self.field {
            None => write!(
                f,
                "{} {} {}: KubeRay {}, ours {}",
                self.section,
                self.kind,
                self.name,
                side(&self.kuberay),
                side(&self.ours)
            ),
            Some(field) => write!(
                f,
                "{} {} {}: {field}: KubeRay {}, ours {}",
                self.section,
                self.kind,
                self.name,
                side(&self.kuberay),
                side(&self.ours)
            ),
        }
    }
}

/// Every difference between `kuberay` (the golden graph) and `ours`.
pub fn diff(kuberay: &Graph, ours: &Graph) -> Vec<Mismatch> {
    let mut out = Vec::new();
    section("applied", &kuberay.applied, &ours.applied, &mut out);
    section("created", &kuberay.created, &ours.created, &mut out);
    out
}

fn group(entries: &[Entry]) -> BTreeMap<(String, String), Vec<&Entry>> {
    let mut map: BTreeMap<(String, String), Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        map.entry((e.kind.clone(), e.name.clone())).or_default().push(e);
    }
    map
}

fn whole(entry: &Entry) -> String {
    canonical(&serde_json::to_value(entry).unwrap_or(Value::Null))
}

fn section(name: &'static str, kuberay: &[Entry], ours: &[Entry], out: &mut Vec<Mismatch>) {
    let (k, o) = (group(kuberay), group(ours));
    let keys: std::collections::BTreeSet<&(String, String)> = k.keys().chain(o.keys()).collect();
    for key in keys {
        let mismatch = |field: Option<String>, kuberay: Option<String>, ours: Option<String>| Mismatch {
            section: name,
            kind: key.0.clone(),
            name: key.1.clone(),
            field,
            kuberay,
            ours,
        };
        match (k.get(key).map(Vec::as_slice), o.get(key).map(Vec::as_slice)) {
            (Some([a]), Some([b])) => {
                let (fa, fb) = (flatten(a), flatten(b));
                let fields: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
                for field in fields {
                    let (va, vb) = (fa.get(field), fb.get(field));
                    if va != vb {
                        out.push(mismatch(Some(field.clone()), va.cloned(), vb.cloned()));
                    }
                }
            }
            (a, b) => {
                let mut a: Vec<String> = a.unwrap_or_default().iter().map(|e| whole(e)).collect();
                let mut b: Vec<String> = b.unwrap_or_default().iter().map(|e| whole(e)).collect();
                a.sort();
                b.sort();
                if a != b {
                    let join = |v: Vec<String>| (!v.is_empty()).then(|| v.join(" | "));
                    out.push(mismatch(None, join(a), join(b)));
                }
            }
        }
    }
}

/// An entry as `field → compact JSON` (leaves are scalars and lists of scalars; `count` is a field).
fn flatten(entry: &Entry) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let value = serde_json::to_value(entry).unwrap_or(Value::Null);
    if let Value::Object(map) = value {
        for (key, v) in map {
            if key == "kind" || key == "name" {
                continue;
            }
            walk(&key, &v, &mut out);
        }
    }
    out.entry("count".into()).or_insert_with(|| "1".into());
    out
}

fn walk(path: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let simple = k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                let child = if simple && !path.starts_with("labels") && !path.starts_with("annotations") {
                    format!("{path}.{k}")
                } else {
                    format!("{path}[{k}]")
                };
                walk(&child, v, out);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
            for (i, v) in items.iter().enumerate() {
                walk(&format!("{path}[{i}]"), v, out);
            }
        }
        other => {
            out.insert(path.to_string(), canonical(other));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(kind: &str, name: &str, labels: &[(&str, &str)], status: Value) -> Entry {
        Entry {
            kind: kind.into(),
            name: name.into(),
            count: 1,
            owner: Some("RayCluster/c".into()),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: Default::default(),
            finalizers: vec![],
            terminating: false,
            spec: Default::default(),
            status: serde_json::from_value(status).unwrap(),
        }
    }

    #[test]
    fn field_differences_name_the_field_and_both_values() {
        let golden = Graph {
            sample: "s".into(),
            applied: vec![entry(
                "RayCluster",
                "c",
                &[],
                json!({"state": "ready", "conditions": {"HeadPodReady": "True"}}),
            )],
            created: vec![entry("Pod", "c-head-*", &[("ray.io/cluster", "c")], json!({}))],
        };
        let mut ours = golden.clone();
        ours.applied[0].status.insert(
            "conditions".into(),
            json!({"HeadPodReady": "True", "Reconciled": "False"}),
        );
        ours.created[0].labels.insert("ray.io/cluster".into(), "d".into());
        ours.created.push(entry("ConfigMap", "extra", &[], json!({})));
        let lines: Vec<String> = diff(&golden, &ours).iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "applied RayCluster c: status.conditions.Reconciled: KubeRay (none), ours \"False\"",
                "created ConfigMap extra: KubeRay (none), ours {\"kind\":\"ConfigMap\",\"name\":\"extra\",\"owner\":\"RayCluster/c\"}",
                "created Pod c-head-*: labels[ray.io/cluster]: KubeRay \"c\", ours \"d\"",
            ]
        );
        assert!(diff(&golden, &golden).is_empty());
    }
}
