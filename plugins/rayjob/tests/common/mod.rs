//! Shared fixtures of the scenario tests: KubeRay's sample RayJobs (as the API server would store them, CRD
//! defaults applied), a FakeHost around one, a fake Ray head, and helpers that play the other controllers:
//! the RayCluster controller (a cluster becomes ready, with its head Service), the Job controller (the
//! submitter finishes) and the clock.

#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod fake_ray;

use std::time::{Duration, UNIX_EPOCH};

#[allow(unused_imports, reason = "not every test binary talks to Ray")]
pub use fake_ray::FakeRay;
use kuberay_plugin_rayjob::RayJobPlugin;
use kuberay_plugin_sdk::{
    Event, Kind, Outcome, Plugin, ReconcileError,
    k8s_openapi::jiff::Timestamp,
    serde_json::{Value, json},
    testing::{FakeHost, Write},
};

pub const NS: &str = "default";
/// The FakeHost's clock starts here.
pub const T0: u64 = 1_800_000_000;

/// A sample from `tests/fixtures/kuberay-samples`, as stored: namespace, uid, generation and the CRD's
/// defaults (`submissionMode: K8sJobMode`, `backoffLimit: 0`, `ttlSecondsAfterFinished: 0`).
pub fn sample(file: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/kuberay-samples/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let first = text
        .split("\n---")
        .map(|doc| doc.trim_start_matches("---"))
        .find(|doc| doc.contains("kind: RayJob"))
        .unwrap_or_else(|| panic!("{path} has no RayJob"));
    let mut job: Value = serde_yaml::from_str(first).unwrap_or_else(|e| panic!("{path}: {e}"));
    job["metadata"]["namespace"] = json!(NS);
    job["metadata"]["uid"] = json!("rayjob-uid");
    job["metadata"]["generation"] = json!(1);
    let spec = &mut job["spec"];
    for (key, default) in [
        ("submissionMode", json!("K8sJobMode")),
        ("backoffLimit", json!(0)),
        ("ttlSecondsAfterFinished", json!(0)),
    ] {
        if spec.get(key).is_none() {
            spec[key] = default;
        }
    }
    // The CRD's defaults of each worker group, which the API server fills in.
    if let Some(groups) = spec
        .pointer_mut("/rayClusterSpec/workerGroupSpecs")
        .and_then(Value::as_array_mut)
    {
        for group in groups {
            for (key, default) in [
                ("minReplicas", json!(0)),
                ("maxReplicas", json!(i32::MAX)),
                ("numOfHosts", json!(1)),
            ] {
                if group.get(key).is_none() {
                    group[key] = default;
                }
            }
        }
    }
    job
}

/// KubeRay's `ray-job.sample.yaml` (K8sJobMode) with `mode`.
pub fn sample_in(mode: &str) -> Value {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["submissionMode"] = json!(mode);
    job
}

pub fn host(job: Value) -> FakeHost {
    let host = FakeHost::for_plugin::<RayJobPlugin>(job);
    at(&host, 0);
    host
}

/// Sets the clock to `T0 + seconds`.
pub fn at(host: &FakeHost, seconds: u64) {
    host.set_now(UNIX_EPOCH + Duration::from_secs(T0 + seconds));
}

pub fn reconcile(host: &FakeHost) -> Result<Outcome, ReconcileError> {
    RayJobPlugin::reconcile(host, host.request())
}

/// One reconcile that must succeed.
pub fn step(host: &FakeHost) -> Outcome {
    reconcile(host).unwrap_or_else(|e| panic!("reconcile failed: {e}"))
}

pub fn cleanup(host: &FakeHost) -> Result<Outcome, ReconcileError> {
    RayJobPlugin::cleanup(host, host.request())
}

/// Reconciles until a reconcile writes nothing (at most `rounds` times).
pub fn settle(host: &FakeHost, rounds: usize) {
    for _ in 0..rounds {
        host.clear_writes();
        step(host);
        if host.writes().is_empty() {
            return;
        }
    }
}

pub fn status(host: &FakeHost) -> Value {
    host.primary()["status"].clone()
}

pub fn deployment(host: &FakeHost) -> String {
    status(host)["jobDeploymentStatus"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn cluster_name(host: &FakeHost) -> String {
    status(host)["rayClusterName"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn job_id(host: &FakeHost) -> String {
    status(host)["jobId"].as_str().unwrap_or_default().to_string()
}

pub fn ray_cluster_kind() -> Kind {
    Kind::new("ray.io", "v1", "RayCluster")
}

pub fn job_kind() -> Kind {
    Kind::new("batch", "v1", "Job")
}

pub fn service_kind() -> Kind {
    Kind::new("", "v1", "Service")
}

pub fn pod_kind() -> Kind {
    Kind::new("", "v1", "Pod")
}

pub fn get(host: &FakeHost, kind: &Kind, name: &str) -> Option<Value> {
    host.objects(kind)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
}

pub fn event_reasons(host: &FakeHost) -> Vec<String> {
    host.events().iter().map(|e| e.reason.clone()).collect()
}

pub fn event(host: &FakeHost, reason: &str) -> Option<Event> {
    host.events().into_iter().find(|e| e.reason == reason)
}

pub fn wrote_status(host: &FakeHost) -> bool {
    host.writes().contains(&Write::ApplyStatus)
}

/// Plays the RayCluster controller: the cluster is `ready` and has its head Service.
pub fn cluster_ready(host: &FakeHost, name: &str) {
    host.update(&ray_cluster_kind(), name, |c| {
        c["status"] = json!({
            "state": "ready",
            "readyWorkerReplicas": 1,
            "desiredWorkerReplicas": 1,
            "head": {"podName": format!("{name}-head-x"), "serviceName": format!("{name}-head-svc")},
            "lastUpdateTime": "2027-01-15T08:00:00Z",
        });
    });
    if get(host, &service_kind(), &format!("{name}-head-svc")).is_none() {
        host.insert(head_service(name));
    }
}

/// The head Service as the RayCluster controller builds it.
pub fn head_service(cluster: &str) -> Value {
    let selector = json!({
        "ray.io/cluster": cluster,
        "ray.io/node-type": "head",
        "ray.io/identifier": format!("{cluster}-head"),
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    });
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("{cluster}-head-svc"), "namespace": NS, "labels": selector},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": selector,
            "ports": [
                {"name": "client", "port": 10001, "appProtocol": "tcp"},
                {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
                {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
            ],
        },
    })
}

/// An existing RayCluster nobody's RayJob owns (for `clusterSelector`).
pub fn foreign_cluster(name: &str) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.46.0"}
        ]}}}},
        "status": {"state": "ready"},
    })
}

/// `T0 + seconds` as Kubernetes writes times.
pub fn rfc3339(seconds: u64) -> String {
    let second = i64::try_from(T0 + seconds).unwrap_or_default();
    Timestamp::from_second(second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Plays the Job controller: the submitter Job ends with condition `kind` (`Complete` or `Failed`).
pub fn submitter_finished(host: &FakeHost, name: &str, kind: &str, seconds: u64) {
    let failed = kind == "Failed";
    host.update(&job_kind(), name, |job| {
        job["status"] = json!({"conditions": [{
            "type": kind,
            "status": "True",
            "reason": if failed { "BackoffLimitExceeded" } else { "" },
            "message": if failed { "Job has reached the specified backoff limit" } else { "" },
            "lastTransitionTime": rfc3339(seconds),
        }]});
    });
}

/// Runs a fresh RayJob up to `Running`: claimed, cluster created and ready, submission under way.
pub fn run_to_running(host: &FakeHost) {
    step(host); // New -> Initializing
    step(host); // creates the cluster, which is not ready yet
    cluster_ready(host, &cluster_name(host));
    step(host); // -> Running
    assert_eq!(deployment(host), "Running", "status: {}", status(host));
}
