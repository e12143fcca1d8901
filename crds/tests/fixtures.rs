//! Every `ray.io` object of KubeRay's samples reads into our types and writes back without losing anything,
//! which is how we know the types have every field KubeRay's users use.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

use std::path::{Path, PathBuf};

use kuberay_crds::{RayCluster, RayCronJob, RayJob, RayService};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kuberay-samples")
}

/// `(file, document)` for every YAML document of the samples, in a stable order.
fn documents() -> Vec<(String, Value)> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    let root = samples_dir();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    let mut docs = Vec::new();
    for file in files {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value: Value = serde::Deserialize::deserialize(doc).unwrap();
            if !value.is_null() {
                docs.push((name.clone(), value));
            }
        }
    }
    docs
}

/// What we compare: explicit nulls mean "unset" to the API server (and to `Option`), so they go.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Differences between `before` and `after`, as `path: what`. Tolerated, because the API server treats
/// them the same: numbers equal as floats (`1` and `1.0` for a float field), and a number that became the
/// same string (k8s-openapi keeps quantities as strings, `cpu: 1` becomes `"1"`).
fn differences(path: &str, before: &Value, after: &Value, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (key, value) in b {
                match a.get(key) {
                    Some(other) => differences(&format!("{path}.{key}"), value, other, out),
                    None => out.push(format!("{path}.{key}: lost")),
                }
            }
            for key in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{path}.{key}: added"));
            }
        }
        (Value::Array(b), Value::Array(a)) if b.len() == a.len() => {
            for (i, (b, a)) in b.iter().zip(a).enumerate() {
                differences(&format!("{path}[{i}]"), b, a, out);
            }
        }
        (Value::Number(b), Value::Number(a)) if b.as_f64() == a.as_f64() => {}
        (Value::Number(b), Value::String(a)) if b.to_string() == *a => {}
        (b, a) if b == a => {}
        (b, a) => out.push(format!("{path}: {b} became {a}")),
    }
}

/// Additions we accept: k8s-openapi always writes `apiVersion` and `kind` of an embedded `Service`.
fn tolerated(difference: &str) -> bool {
    ["headService", "serveService"].iter().any(|field| {
        difference.ends_with(&format!("{field}.apiVersion: added"))
            || difference.ends_with(&format!("{field}.kind: added"))
    })
}

fn round_trip<K: DeserializeOwned + Serialize>(file: &str, doc: &Value) -> Vec<String> {
    let object: K = match serde_json::from_value(doc.clone()) {
        Ok(object) => object,
        Err(e) => return vec![format!("{file}: does not deserialize: {e}")],
    };
    let after = serde_json::to_value(&object).unwrap();
    let mut out = Vec::new();
    differences("", &without_nulls(doc), &without_nulls(&after), &mut out);
    out.retain(|d| !tolerated(d));
    out.into_iter().map(|d| format!("{file}: {d}")).collect()
}

#[test]
fn every_ray_object_of_the_samples_round_trips_without_loss() {
    let mut problems = Vec::new();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for (file, doc) in documents() {
        if doc["apiVersion"] != "ray.io/v1" {
            continue;
        }
        let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
        problems.extend(match kind.as_str() {
            "RayCluster" => round_trip::<RayCluster>(&file, &doc),
            "RayJob" => round_trip::<RayJob>(&file, &doc),
            "RayService" => round_trip::<RayService>(&file, &doc),
            "RayCronJob" => round_trip::<RayCronJob>(&file, &doc),
            other => vec![format!("{file}: unexpected kind {other}")],
        });
        *counts.entry(kind).or_default() += 1;
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The samples cover every kind; a rename of the fixtures folder must not make this test vacuous.
    for kind in ["RayCluster", "RayJob", "RayService", "RayCronJob"] {
        assert!(
            counts.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} in the samples: {counts:?}"
        );
    }
}

#[test]
fn objects_of_another_kind_or_version_are_refused() {
    let cluster = serde_json::json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "x"},
        "spec": {"headGroupSpec": {"template": {}}},
    });
    let err = serde_json::from_value::<RayCluster>(cluster).unwrap_err();
    assert!(err.to_string().contains("RayJob"), "{err}");
    let old = serde_json::json!({"apiVersion": "ray.io/v1alpha1", "kind": "RayJob", "spec": {}});
    assert!(serde_json::from_value::<RayJob>(old).is_err());
    // Without apiVersion and kind (as in some client code) the object is still read.
    let bare =
        serde_json::json!({"metadata": {"name": "x"}, "spec": {"schedule": "* * * * *", "jobTemplate": {}}});
    let cron: RayCronJob = serde_json::from_value(bare).unwrap();
    assert_eq!(cron.spec.schedule, "* * * * *");
}

#[test]
fn serialization_writes_api_version_and_kind() {
    let value = serde_json::to_value(RayService::default()).unwrap();
    assert_eq!(value["apiVersion"], "ray.io/v1");
    assert_eq!(value["kind"], "RayService");
    assert!(value.get("status").is_none());
}

#[test]
fn open_enums_keep_unknown_values() {
    use kuberay_crds::{JobDeploymentStatus, JobStatus, JobSubmissionMode};
    let status: JobDeploymentStatus = serde_json::from_value("Running".into()).unwrap();
    assert_eq!(status, JobDeploymentStatus::Running);
    let status: JobDeploymentStatus = serde_json::from_value("Exploded".into()).unwrap();
    assert_eq!(status, JobDeploymentStatus::Other("Exploded".into()));
    assert_eq!(serde_json::to_value(&status).unwrap(), "Exploded");
    assert_eq!(JobDeploymentStatus::from(""), JobDeploymentStatus::New);
    assert_eq!(JobSubmissionMode::HttpMode.as_str(), "HTTPMode");
    assert!(JobStatus::from("STOPPED").is_terminal());
    assert!(!JobStatus::from("RUNNING").is_terminal());
}

#[test]
fn list_responses_read_with_k8s_openapi_list() {
    let list = serde_json::json!({
        "apiVersion": "ray.io/v1", "kind": "RayClusterList", "metadata": {"resourceVersion": "7"},
        "items": [{
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "a"},
            "spec": {"headGroupSpec": {"template": {}}},
            "status": {"state": "ready", "desiredCPU": "2", "head": {"podIP": "10.0.0.1"}},
        }],
    });
    let list: k8s_openapi::List<RayCluster> = serde_json::from_value(list).unwrap();
    let status = list.items[0].status.as_ref().unwrap();
    assert_eq!(status.state, Some(kuberay_crds::ClusterState::Ready));
    assert_eq!(status.head.as_ref().unwrap().pod_ip.as_deref(), Some("10.0.0.1"));
}
