//! The plugin host's writes against a mocked API server (`kubernetes::mock_api`): what goes out for an
//! admitted write (a create, or server-side apply of what the plugin made, with the plugin's field manager
//! and the reconciled object as controller), and that a refused write or a write of a replica that lost the
//! Lease sends nothing.

use std::time::{Duration, Instant};

use kuberay_plugin_raycluster::RayClusterPlugin;
use kuberay_plugin_sdk::{HostError, Plugin};
use serde_json::json;

use super::*;
use crate::{
    OperatorArgs,
    kubernetes::{
        WatchScope,
        mock_api::{self, Answer, MockApi, Received},
    },
    leadership::Fence,
    metrics::Metrics,
    policy::{Policy, native::grant_for_plugin},
};

const SERVICES: &str = "/api/v1/namespaces/ns/services";
const SERVICE: &str = "/api/v1/namespaces/ns/services/c-head-svc";
const FIELD_MANAGER: &str = "fieldManager=kuberay-wasm%2Fraycluster";

/// The API server: core v1 and ray.io/v1 discovery, the RayCluster `ns/c`, its head Service if it
/// `exists` (made by the plugin earlier), every create and patch echoed back.
fn api_server(exists: bool) -> impl Fn(&Received) -> Answer + Send + Sync {
    move |request| match (request.method.as_str(), request.path()) {
        ("GET", "/api/v1") => (
            200,
            mock_api::resource_list("v1", &[("services", "Service"), ("pods", "Pod")]),
        ),
        ("GET", "/apis/ray.io/v1") => (
            200,
            mock_api::resource_list("ray.io/v1", &[("rayclusters", "RayCluster")]),
        ),
        ("GET", "/apis/ray.io/v1/namespaces/ns/rayclusters/c") => (
            200,
            json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "generation": 1}, "spec": {}}),
        ),
        ("GET", SERVICE) if exists => {
            let mut service = head_service(Some("ns"));
            service["metadata"]["uid"] = json!("svc-uid");
            service["metadata"]["ownerReferences"] = json!([{"apiVersion": "ray.io/v1", "kind": "RayCluster",
                "name": "c", "uid": "u-1", "controller": true, "blockOwnerDeletion": true}]);
            service["metadata"]["managedFields"] = json!([{"manager": "kuberay-wasm/raycluster",
                "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]);
            (200, service)
        }
        ("POST" | "PATCH", _) => {
            let mut object = request.body.clone();
            object["metadata"]["uid"] = json!("svc-uid");
            object["metadata"]["resourceVersion"] = json!("7");
            (if request.method == "POST" { 201 } else { 200 }, object)
        }
        _ => mock_api::status(404, "NotFound", "not found"),
    }
}

/// The RayCluster plugin's host while it reconciles the RayCluster `ns/c`.
fn raycluster_host(client: kube::Client, fence: Fence) -> PluginHost {
    let metrics = Metrics::new();
    let grant = grant_for_plugin(&Policy::builtin(), &RayClusterPlugin::metadata())
        .expect("the built-in policy grants the RayCluster plugin")
        .grant;
    let primary = Primary {
        kind: Kind::new("ray.io", "v1", "RayCluster"),
        namespace: "ns".into(),
        name: "c".into(),
        uid: "u-1".into(),
    };
    let bridge = KubeBridge::new(client.clone(), WatchScope::All, None, metrics, fence);
    let entry = grant.entry.clone();
    let finalizer = grant.finalizer.clone();
    let admission = Admission::new(bridge, primary, Arc::new(grant), &entry, finalizer);
    PluginHost::new(
        admission,
        RayBridge::new(OperatorArgs::defaults().routing.heads(), client),
    )
}

fn head_service(namespace: Option<&str>) -> Value {
    let mut service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "c-head-svc", "labels": {"ray.io/cluster": "c"}},
        "spec": {"selector": {"ray.io/cluster": "c", "ray.io/node-type": "head"},
            "ports": [{"name": "dashboard", "port": 8265}]},
    });
    if let Some(namespace) = namespace {
        service["metadata"]["namespace"] = json!(namespace);
    }
    service
}

fn writes(api: &MockApi) -> Vec<Received> {
    api.received().into_iter().filter(|r| r.method != "GET").collect()
}

/// The one write sent: `method` to `path`, by the RayCluster plugin's field manager, owned by the cluster.
fn written_once(api: &MockApi, method: &str, path: &str) -> Received {
    let sent = writes(api);
    assert_eq!(sent.len(), 1, "{sent:?}");
    let write = sent[0].clone();
    assert_eq!((write.method.as_str(), write.path()), (method, path), "{write:?}");
    assert!(write.uri.contains(FIELD_MANAGER), "{}", write.uri);
    let owners = &write.body["metadata"]["ownerReferences"];
    assert_eq!(owners.as_array().map(Vec::len), Some(1), "{owners}");
    assert_eq!(owners[0]["uid"], "u-1");
    assert_eq!(owners[0]["kind"], "RayCluster");
    assert_eq!(owners[0]["controller"], true);
    write
}

#[tokio::test]
async fn a_new_object_is_created_by_the_plugin_and_owned_by_the_reconciled_object() {
    let api = MockApi::default();
    let host = raycluster_host(api.client(api_server(false)), Fence::open());
    let written = host
        .apply(Kind::new("", "v1", "Service"), head_service(None))
        .await
        .unwrap_or_else(|e| panic!("the head Service is not admitted: {e}\n{:?}", api.received()));
    assert_eq!(written["metadata"]["uid"], "svc-uid");
    let create = written_once(&api, "POST", SERVICES);
    assert_eq!(create.body["metadata"]["namespace"], "ns");
}

#[tokio::test]
async fn an_object_the_plugin_made_is_updated_by_server_side_apply() {
    let api = MockApi::default();
    let host = raycluster_host(api.client(api_server(true)), Fence::open());
    let mut changed = head_service(None);
    changed["spec"]["ports"][0]["port"] = json!(8266);
    host.apply(Kind::new("", "v1", "Service"), changed)
        .await
        .unwrap_or_else(|e| panic!("the head Service is not admitted: {e}\n{:?}", api.received()));
    let apply = written_once(&api, "PATCH", SERVICE);
    assert!(apply.uri.contains("force=true"), "{}", apply.uri);
    assert_eq!(apply.body["spec"]["ports"][0]["port"], 8266);
}

#[tokio::test]
async fn a_write_into_another_namespace_is_refused_before_anything_is_sent() {
    let api = MockApi::default();
    let host = raycluster_host(api.client(api_server(false)), Fence::open());
    let refused = host
        .apply(Kind::new("", "v1", "Service"), head_service(Some("kube-system")))
        .await;
    assert!(matches!(refused, Err(HostError::Forbidden(_))), "{refused:?}");
    assert!(writes(&api).is_empty(), "{:?}", api.received());
}

#[tokio::test]
async fn a_replica_that_lost_the_lease_sends_no_write() {
    let api = MockApi::default();
    let fence = Fence::term(Duration::from_secs(10));
    fence.renewed(Instant::now());
    let host = raycluster_host(api.client(api_server(false)), fence.clone());
    fence.close();
    let refused = host
        .apply(Kind::new("", "v1", "Service"), head_service(None))
        .await;
    assert!(
        matches!(&refused, Err(e) if e.to_string().contains("not the leader")),
        "{refused:?}"
    );
    assert!(writes(&api).is_empty(), "{:?}", api.received());
}
