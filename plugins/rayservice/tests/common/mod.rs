//! A RayService on the SDK's FakeHost, a scripted Ray head per cluster, and helpers to move clusters along.

#![allow(dead_code, reason = "each test file uses part of the helpers")]

use std::sync::{Arc, Mutex};

use kuberay_plugin_rayservice::RayServicePlugin;
use kuberay_plugin_sdk::{
    Kind, Outcome, Plugin, PortRole, RayResponse,
    testing::{FakeHost, Write},
};
use serde_json::{Value, json};

pub const SERVE_CONFIG: &str = "applications:\n  - name: app1\n    import_path: m:app\n    route_prefix: /\n    deployments:\n      - name: D\n        num_replicas: 1\n";

pub fn rayservice(extra: Value) -> Value {
    let mut object = json!({
        "apiVersion": "ray.io/v1", "kind": "RayService",
        "metadata": {"name": "svc", "namespace": "ns", "uid": "svc-uid", "generation": 1,
                     "finalizers": ["ray.io/rayservice-finalizer"]},
        "spec": {
            "serveConfigV2": SERVE_CONFIG,
            "rayClusterConfig": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                    {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
                "workerGroupSpecs": [{"groupName": "small", "replicas": 1, "minReplicas": 1, "maxReplicas": 5,
                    "rayStartParams": {}, "template": {"spec": {"containers": [
                        {"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}],
            },
        },
    });
    if let (Some(spec), Some(extra)) = (object["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    object
}

/// What the scripted heads hold: the config deployed per cluster, and what was asked of them.
#[derive(Default)]
pub struct Heads {
    pub configs: std::collections::BTreeMap<String, Value>,
    pub puts: Vec<String>,
    pub healthz: Vec<String>,
    /// Clusters whose Serve proxy is unhealthy.
    pub unhealthy: Vec<String>,
}

pub fn cluster_kind() -> Kind {
    Kind::new("ray.io", "v1", "RayCluster")
}

pub fn service_kind() -> Kind {
    Kind::new("", "v1", "Service")
}

pub fn pod_kind() -> Kind {
    Kind::new("", "v1", "Pod")
}

/// A host reconciling `object`, with scripted Ray heads.
pub fn host(object: Value) -> (FakeHost, Arc<Mutex<Heads>>) {
    let host = FakeHost::for_plugin::<RayServicePlugin>(object).with_grandchild_labels(&["ray.io/serve"]);
    let heads = Arc::new(Mutex::new(Heads::default()));
    let state = heads.clone();
    host.on_ray(move |request| {
        let mut heads = state.lock().unwrap();
        let answer = |status: u16, body: Value| RayResponse {
            status,
            headers: vec![],
            body: body.to_string().into_bytes(),
        };
        if request.role == PortRole::Serve {
            heads.healthz.push(request.cluster.clone());
            let up =
                heads.configs.contains_key(&request.cluster) && !heads.unhealthy.contains(&request.cluster);
            return Ok(answer(if up { 200 } else { 503 }, json!("")));
        }
        match request.method.as_str() {
            "PUT" => {
                let config: Value = serde_json::from_slice(&request.body).unwrap();
                heads.puts.push(request.cluster.clone());
                heads.configs.insert(request.cluster.clone(), config);
                Ok(answer(200, json!({})))
            }
            _ => Ok(answer(200, details(heads.configs.get(&request.cluster)))),
        }
    });
    (host, heads)
}

/// Serve details for a deployed config: RUNNING, or DEPLOY_FAILED for import paths with `fail`.
fn details(config: Option<&Value>) -> Value {
    let mut applications = serde_json::Map::new();
    for app in config
        .and_then(|c| c["applications"].as_array())
        .into_iter()
        .flatten()
    {
        let failed = app["import_path"].as_str().unwrap_or_default().contains("fail");
        applications.insert(app["name"].as_str().unwrap().into(), json!({
            "name": app["name"], "status": if failed {"DEPLOY_FAILED"} else {"RUNNING"},
            "message": if failed {"Failed to import"} else {""},
            "deployments": {"D": {"name": "D", "status": if failed {"UNHEALTHY"} else {"HEALTHY"}, "message": ""}},
            "deployed_app_config": app,
        }));
    }
    json!({"applications": applications})
}

pub fn reconcile(host: &FakeHost) -> Outcome {
    RayServicePlugin::reconcile(host, host.request()).unwrap()
}

pub fn status(host: &FakeHost) -> Value {
    host.primary()["status"].clone()
}

pub fn condition(host: &FakeHost, type_: &str) -> Value {
    status(host)["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_).cloned())
        .unwrap_or(Value::Null)
}

pub fn pending_name(host: &FakeHost) -> Option<String> {
    status(host)["pendingServiceStatus"]["rayClusterName"]
        .as_str()
        .map(str::to_string)
}

pub fn active_name(host: &FakeHost) -> Option<String> {
    status(host)["activeServiceStatus"]["rayClusterName"]
        .as_str()
        .map(str::to_string)
}

pub fn creates(host: &FakeHost, kind: &Kind) -> Vec<String> {
    host.writes()
        .into_iter()
        .filter_map(|w| match w {
            Write::Create(k, name) if k == *kind => Some(name),
            _ => None,
        })
        .collect()
}

pub fn applies(host: &FakeHost, kind: &Kind) -> Vec<String> {
    host.writes()
        .into_iter()
        .filter_map(|w| match w {
            Write::Apply(k, name) if k == *kind => Some(name),
            _ => None,
        })
        .collect()
}

/// The cluster's head Pod is Ready: the cluster says `HeadPodReady` and the Pod exists.
pub fn head_ready(host: &FakeHost, cluster: &str) {
    host.update(&cluster_kind(), cluster, |c| {
        c["status"] = json!({"state": "ready", "conditions": [
            {"type": "HeadPodReady", "status": "True", "reason": "HeadPodRunningAndReady", "message": "",
             "lastTransitionTime": "2027-01-15T08:00:00Z"}]});
    });
    head_pod(host, cluster, "false");
}

/// The cluster's head Pod, controlled by the cluster as the RayCluster plugin makes it.
pub fn head_pod(host: &FakeHost, cluster: &str, serve: &str) {
    let uid = host
        .objects(&cluster_kind())
        .into_iter()
        .find(|c| c["metadata"]["name"] == cluster)
        .map(|c| c["metadata"]["uid"].clone())
        .unwrap();
    host.insert(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": format!("{cluster}-head-abcde"), "namespace": "ns",
        "labels": {"ray.io/cluster": cluster, "ray.io/node-type": "head", "ray.io/serve": serve},
        "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": cluster, "uid": uid,
                             "controller": true}]},
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}));
}

/// `n` ready Pods behind the serve Service.
pub fn serve_endpoints(host: &FakeHost, service: &str, n: usize) {
    let endpoints: Vec<Value> = (0..n)
        .map(|i| json!({"addresses": [format!("10.0.0.{i}")], "conditions": {"ready": true},
                         "targetRef": {"kind": "Pod", "name": format!("p{i}"), "uid": format!("pod-uid-{i}")}}))
        .collect();
    host.insert(
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{service}-x"), "namespace": "ns",
                     "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4", "endpoints": endpoints}),
    );
}

/// Edits the RayService's spec as a user would (the generation moves on).
pub fn edit_spec(host: &FakeHost, edit: impl FnOnce(&mut Value)) {
    let mut object = host.primary();
    edit(&mut object["spec"]);
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
    object["metadata"]["generation"] = json!(generation);
    host.set_primary(object);
}

/// Moves the host's clock on.
pub fn advance(host: &FakeHost, seconds: u64) {
    use kuberay_plugin_sdk::Host;
    host.set_now(host.now() + std::time::Duration::from_secs(seconds));
}

/// Runs a RayService from scratch to Ready on one cluster; returns the cluster's name.
pub fn bring_up(host: &FakeHost) -> String {
    reconcile(host);
    let name = pending_name(host).unwrap();
    reconcile(host);
    head_ready(host, &name);
    reconcile(host);
    serve_endpoints(host, "svc-serve-svc", 2);
    reconcile(host);
    assert_eq!(active_name(host).as_deref(), Some(name.as_str()));
    name
}
