//! `spec.historyServerOptions` under the `RayClusterHistoryServer` gate, on the judged FakeHost: the Pods
//! carry the collector sidecar, the shared log volume and Ray's event export exactly as KubeRay v1.7's
//! `BuildCollectorContainer` / `BuildPod` make them (`common/pod.go` and its tests); with the gate off the
//! spec is refused, as KubeRay's validation does.

#![allow(clippy::unwrap_used, reason = "a test fails loudly on any unexpected error")]

mod common;

use common::*;
use kuberay_plugin_sdk::{
    ReconcileError,
    serde_json::{Value, json},
    testing::FakeHost,
};

const FQDN: &str = "raycluster-sample-head-svc.default.svc.cluster.local";
const EVENT_TYPES: &str = "TASK_DEFINITION_EVENT,TASK_LIFECYCLE_EVENT,ACTOR_TASK_DEFINITION_EVENT,\
TASK_PROFILE_EVENT,DRIVER_JOB_DEFINITION_EVENT,DRIVER_JOB_LIFECYCLE_EVENT,ACTOR_DEFINITION_EVENT,\
ACTOR_LIFECYCLE_EVENT,NODE_DEFINITION_EVENT,NODE_LIFECYCLE_EVENT";

fn gated(cluster: Value, on: bool) -> FakeHost {
    let host = host(cluster);
    let mut config = kuberay_plugin_sdk::Host::config(&host);
    config.insert("featureGates".into(), json!({"RayClusterHistoryServer": on}));
    host.with_config(Value::Object(config))
}

fn storage_env() -> Value {
    json!([
        {"name": "STORAGE_BACKEND", "value": "GCS"},
        {"name": "GCS_BUCKET", "value": "my-gcs-bucket"}
    ])
}

/// The sample cluster with KubeRay's history server sample's options (image, storage; default resources).
fn with_collector() -> Value {
    let mut c = sample(1);
    c["spec"]["historyServerOptions"] = json!({"collectorOptions": {
        "image": "quay.io/kuberay/collector:nightly",
        "env": storage_env()
    }});
    c
}

fn container<'a>(pod: &'a Value, name: &str) -> &'a Value {
    pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name} in {pod}"))
}

fn env_names(container: &Value) -> Vec<String> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

fn ray_logs_mount() -> Value {
    json!([{"name": "ray-logs", "mountPath": "/tmp/ray"}])
}

fn expected_collector(role: &str) -> Value {
    let mut env = vec![
        json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}),
        json!({"name": "RAY_CLUSTER_NAME", "value": NAME}),
        json!({"name": "RAY_CLUSTER_NAMESPACE", "value": NS}),
        json!({"name": "RAY_ROLE", "value": role}),
        json!({"name": "EVENTS_PORT", "value": "8084"}),
        json!({"name": "FQ_RAY_IP", "value": FQDN}),
    ];
    if role == "Head" {
        env.push(json!({"name": "RAY_DASHBOARD_ADDRESS", "value": "http://localhost:8265"}));
    }
    env.extend(storage_env().as_array().unwrap().iter().cloned());
    json!({
        "name": "ray-history-collector",
        "image": "quay.io/kuberay/collector:nightly",
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "200m", "memory": "256Mi"},
            "requests": {"cpu": "50m", "memory": "64Mi"}
        },
        "env": env,
        "volumeMounts": ray_logs_mount()
    })
}

fn ray_event_env() -> Vec<Value> {
    vec![
        json!({"name": "RAY_enable_ray_event", "value": "true"}),
        json!({"name": "RAY_enable_core_worker_ray_event_to_aggregator", "value": "true"}),
        json!({"name": "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", "value": "http://localhost:8084/v1/events"}),
        json!({"name": "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", "value": EVENT_TYPES}),
        json!({
            "name": "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES",
            "value": EVENT_TYPES
        }),
    ]
}

#[test]
fn every_ray_pod_gets_kuberays_collector_sidecar() {
    let host = gated(with_collector(), true);
    reconcile(&host).unwrap();
    for (pod, role, ray) in [
        (&heads(&host)[0], "Head", "ray-head"),
        (&workers(&host)[0], "Worker", "ray-worker"),
    ] {
        let names: Vec<&str> = pod["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, [ray, "ray-history-collector"]);
        assert_eq!(*container(pod, "ray-history-collector"), expected_collector(role));
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        let logs: Vec<&Value> = volumes.iter().filter(|v| v["name"] == "ray-logs").collect();
        assert_eq!(logs, [&json!({"name": "ray-logs", "emptyDir": {}})]);
        let ray_container = container(pod, ray);
        let mounts = ray_container["volumeMounts"].as_array().unwrap();
        assert!(mounts.contains(&ray_logs_mount()[0]), "{mounts:?}");
        // Ray's event export comes last, after KubeRay's other variables.
        let env = ray_container["env"].as_array().unwrap();
        assert_eq!(env[env.len() - 5..], ray_event_env()[..]);
    }
}

#[test]
fn options_and_the_users_own_settings_win() {
    let mut c = with_collector();
    c["metadata"]["labels"] = json!({
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/originated-from-cr-name": "my-job"
    });
    let options = &mut c["spec"]["historyServerOptions"]["collectorOptions"];
    options["imagePullPolicy"] = json!("Always");
    options["resources"] = json!({"limits": {"cpu": "1"}});
    options["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "RAY_DASHBOARD_ADDRESS", "value": "http://elsewhere:8265"}));
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "RAY_enable_ray_event", "value": "false"}));
    let host = gated(c, true);
    reconcile(&host).unwrap();
    let head = &heads(&host)[0];
    let collector = container(head, "ray-history-collector");
    assert_eq!(collector["imagePullPolicy"], "Always");
    assert_eq!(collector["resources"], json!({"limits": {"cpu": "1"}}));
    assert_eq!(
        env_names(collector),
        [
            "POD_IP",
            "RAY_CLUSTER_NAME",
            "RAY_CLUSTER_NAMESPACE",
            "RAY_ROLE",
            "EVENTS_PORT",
            "FQ_RAY_IP",
            "OWNER_KIND",
            "OWNER_NAME",
            "STORAGE_BACKEND",
            "GCS_BUCKET",
            "RAY_DASHBOARD_ADDRESS"
        ]
    );
    assert_eq!(env_value(collector, "OWNER_KIND").unwrap()["value"], "RayJob");
    assert_eq!(env_value(collector, "OWNER_NAME").unwrap()["value"], "my-job");
    let ray = container(head, "ray-head");
    assert_eq!(env_value(ray, "RAY_enable_ray_event").unwrap()["value"], "false");
    assert_eq!(
        env_names(ray)
            .iter()
            .filter(|n| *n == "RAY_enable_ray_event")
            .count(),
        1
    );
}

#[test]
fn the_collector_carries_the_clusters_token() {
    let mut c = with_collector();
    c["spec"]["rayVersion"] = json!("2.52.0");
    c["spec"]["authOptions"] = json!({"mode": "token"});
    let host = gated(c, true);
    reconcile(&host).unwrap();
    let head = &heads(&host)[0];
    let collector = container(head, "ray-history-collector");
    let names = env_names(collector);
    assert_eq!(names[names.len() - 2..], ["RAY_AUTH_MODE", "RAY_AUTH_TOKEN"]);
    assert_eq!(
        collector["env"][names.len() - 1]["valueFrom"]["secretKeyRef"]["name"],
        NAME
    );
}

#[test]
fn with_the_gate_off_the_options_are_refused() {
    let host = gated(with_collector(), false);
    let result = reconcile(&host);
    let Err(ReconcileError::InvalidObject(message)) = result else {
        panic!("expected InvalidObject, got {result:?}");
    };
    assert!(
        message.ends_with("RayClusterHistoryServer feature gate is not enabled"),
        "{message}"
    );
    assert!(pods(&host).is_empty());
}

#[test]
fn with_the_gate_on_and_no_options_pods_are_unchanged() {
    let host = gated(sample(1), true);
    reconcile(&host).unwrap();
    let head = &heads(&host)[0];
    assert_eq!(head["spec"]["containers"].as_array().unwrap().len(), 1);
    assert!(env_value(container(head, "ray-head"), "RAY_enable_ray_event").is_none());
}

fn refused(cluster: Value, expected: &str) {
    let host = gated(cluster, true);
    let result = reconcile(&host);
    let Err(ReconcileError::InvalidObject(message)) = result else {
        panic!("expected InvalidObject, got {result:?}");
    };
    assert!(
        message.ends_with(expected),
        "{message:?} should end with {expected:?}"
    );
    assert!(pods(&host).is_empty());
}

fn with_env(env: Value) -> Value {
    let mut c = with_collector();
    c["spec"]["historyServerOptions"]["collectorOptions"]["env"] = env;
    c
}

#[test]
fn kuberays_validation_of_the_collector_options() {
    let mut c = sample(1);
    c["spec"]["historyServerOptions"] = json!({});
    refused(c, "historyServerOptions.collectorOptions must be set");
    let mut c = with_collector();
    c["spec"]["historyServerOptions"]["collectorOptions"]["image"] = json!("");
    refused(c, "historyServerOptions.collectorOptions.image must be set");
    refused(
        with_env(json!([{"name": "RAY_ROLE", "value": "x"}])),
        "historyServerOptions.collectorOptions.env must not contain RAY_ROLE: it is managed by KubeRay and \
         injected automatically into the collector container",
    );
    refused(
        with_env(json!([])),
        "STORAGE_BACKEND environment variable must be set with a literal string value in \
         historyServerOptions.collectorOptions.env",
    );
    refused(
        with_env(json!([{"name": "STORAGE_BACKEND", "value": "gcs"}])),
        "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS",
    );
    refused(
        with_env(json!([{"name": "STORAGE_BACKEND", "value": "S3"}, {"name": "S3_REGION", "value": ""}])),
        "S3_REGION environment variable must be set when STORAGE_BACKEND is S3",
    );
    refused(
        with_env(json!([{"name": "STORAGE_BACKEND", "value": "AzureBlob"}])),
        "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL environment variable must be set \
         when STORAGE_BACKEND is AZUREBLOB",
    );
    refused(
        with_env(json!([
            {"name": "STORAGE_BACKEND", "value": "AZUREBLOB"},
            {"name": "AZURE_STORAGE_AUTH_MODE", "value": " Workload_Identity "}
        ])),
        "AZURE_STORAGE_ACCOUNT_URL environment variable must be set when STORAGE_BACKEND is AZUREBLOB and \
         AZURE_STORAGE_AUTH_MODE is workload_identity",
    );
    refused(
        with_env(json!([
            {"name": "STORAGE_BACKEND", "value": "AZUREBLOB"},
            {"name": "AZURE_STORAGE_AUTH_MODE", "value": "connection_string"},
            {"name": "AZURE_STORAGE_ACCOUNT_URL", "value": "https://x"}
        ])),
        "AZURE_STORAGE_CONNECTION_STRING environment variable must be set when STORAGE_BACKEND is AZUREBLOB and \
         AZURE_STORAGE_AUTH_MODE is connection_string",
    );
    refused(
        with_env(json!([
            {"name": "STORAGE_BACKEND", "value": "AliyunOSS"},
            {"name": "OSS_BUCKET", "value": "b"}
        ])),
        "OSS_ENDPOINT environment variable must be set when STORAGE_BACKEND is ALIYUNOSS",
    );
    let mut c = with_collector();
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"] = json!("ray-history-collector");
    refused(
        c,
        "head pod template must not define a container with name 'ray-history-collector' when history server \
         collector options are enabled",
    );
    let mut c = with_collector();
    c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["name"] =
        json!("ray-history-collector");
    refused(
        c,
        "worker group small-group pod template must not define a container with name 'ray-history-collector' \
         when history server collector options are enabled",
    );
    // A secret reference counts as a value; an unknown backend is not checked.
    let host = gated(
        with_env(json!([
            {"name": "STORAGE_BACKEND", "value": "S3"},
            {"name": "S3_REGION", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ])),
        true,
    );
    reconcile(&host).unwrap();
    let host = gated(
        with_env(json!([{"name": "STORAGE_BACKEND", "value": "local"}])),
        true,
    );
    reconcile(&host).unwrap();
}
