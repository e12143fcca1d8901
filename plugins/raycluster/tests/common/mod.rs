//! Shared fixtures of the scenario tests: KubeRay's `raycluster-sample`-like cluster as JSON, a FakeHost
//! around it, and helpers to play the kubelet (mark Pods running, ready or failed) and the API server
//! (feed the stored object back, as the host's cache would).

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::time::Duration;

use kuberay_plugin_raycluster::RayClusterPlugin;
use kuberay_plugin_sdk::{
    Kind, Outcome, Plugin, ReconcileError,
    k8s_openapi::api::core::v1::Pod,
    serde_json::{self, Value, json},
    testing::{FakeHost, Write},
};

pub const NS: &str = "default";
pub const NAME: &str = "raycluster-sample";

/// A head with one container and a worker group `small-group` of `replicas` (min 0, max 10000).
pub fn sample(replicas: i32) -> Value {
    json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": NAME, "namespace": NS, "uid": "cluster-uid", "generation": 1},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{
                    "name": "ray-head",
                    "image": "rayproject/ray:2.46.0",
                    "env": [{"name": "TEST_ENV_NAME", "value": "TEST_ENV_VALUE"}],
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"cpu": "1", "memory": "1Gi"}
                    }
                }]}}
            },
            "workerGroupSpecs": [{
                "groupName": "small-group",
                "replicas": replicas,
                "minReplicas": 0,
                "maxReplicas": 10000,
                "numOfHosts": 1,
                "rayStartParams": {"port": "6379"},
                "template": {"spec": {"containers": [{
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.46.0",
                    "env": [{"name": "TEST_ENV_NAME", "value": "TEST_ENV_VALUE"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "3"}}
                }]}}
            }]
        }
    })
}

pub fn host(cluster: Value) -> FakeHost {
    FakeHost::for_plugin::<RayClusterPlugin>(cluster)
}

/// One reconcile of the object as the host currently stores it.
pub fn reconcile(host: &FakeHost) -> Result<Outcome, ReconcileError> {
    RayClusterPlugin::reconcile(host, host.request())
}

pub fn cleanup(host: &FakeHost) -> Result<Outcome, ReconcileError> {
    RayClusterPlugin::cleanup(host, host.request())
}

/// Reconciles until nothing is written any more (at most `rounds` times) and returns the last outcome.
pub fn settle(host: &FakeHost, rounds: usize) -> Outcome {
    let mut outcome = Outcome::done();
    for _ in 0..rounds {
        host.clear_writes();
        outcome = reconcile(host).unwrap_or_else(|e| panic!("reconcile failed: {e}"));
        if host.writes().is_empty() {
            break;
        }
    }
    outcome
}

/// `cluster` brought up with every Pod running and Ready, and reconciled until nothing changes.
pub fn running(cluster: Value) -> FakeHost {
    let host = host(cluster);
    settle(&host, 3);
    run_all(&host);
    settle(&host, 3);
    host
}

pub fn pod_kind() -> Kind {
    Kind::new("", "v1", "Pod")
}

pub fn pods(host: &FakeHost) -> Vec<Value> {
    host.objects(&pod_kind())
}

pub fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.pointer("/metadata/labels")?.get(key)?.as_str()
}

pub fn heads(host: &FakeHost) -> Vec<Value> {
    pods(host)
        .into_iter()
        .filter(|p| label(p, "ray.io/node-type") == Some("head"))
        .collect()
}

pub fn workers(host: &FakeHost) -> Vec<Value> {
    pods(host)
        .into_iter()
        .filter(|p| label(p, "ray.io/node-type") == Some("worker"))
        .collect()
}

pub fn name(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

pub fn typed_pod(object: &Value) -> Pod {
    serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("not a Pod: {e}"))
}

/// Plays the kubelet: the Pod runs and is Ready, with an address.
pub fn run(host: &FakeHost, pod: &str, ip: &str) {
    host.update(&pod_kind(), pod, |p| {
        p["status"] = json!({
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True"}]
        });
    });
}

pub fn run_all(host: &FakeHost) {
    for (i, pod) in pods(host).iter().enumerate() {
        run(host, &name(pod), &format!("10.0.0.{}", i + 1));
    }
}

pub fn fail(host: &FakeHost, pod: &str) {
    host.update(&pod_kind(), pod, |p| {
        p["status"] = json!({"phase": "Failed"});
    });
}

/// Edits the stored cluster, bumping its generation as the API server would for a spec change.
pub fn edit(host: &FakeHost, f: impl FnOnce(&mut Value)) {
    let mut object = host.primary();
    f(&mut object);
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    object["metadata"]["generation"] = json!(generation + 1);
    host.set_primary(object);
}

pub fn status(host: &FakeHost) -> Value {
    host.primary().get("status").cloned().unwrap_or(Value::Null)
}

pub fn condition(host: &FakeHost, type_: &str) -> Option<Value> {
    status(host)
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

pub fn creates(host: &FakeHost) -> usize {
    host.writes()
        .iter()
        .filter(|w| matches!(w, Write::Create(..)))
        .count()
}

pub fn deletes(host: &FakeHost) -> Vec<String> {
    host.writes()
        .into_iter()
        .filter_map(|w| match w {
            Write::Delete(_, name) => Some(name),
            _ => None,
        })
        .collect()
}

pub fn event_reasons(host: &FakeHost) -> Vec<String> {
    host.events().into_iter().map(|e| e.reason).collect()
}

pub fn env_value(container: &Value, name: &str) -> Option<Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .cloned()
}

pub fn secs(s: u64) -> Option<Duration> {
    Some(Duration::from_secs(s))
}
