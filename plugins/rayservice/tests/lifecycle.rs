//! From a new RayService to Ready: the finalizer, the cluster name recorded before the cluster is made,
//! Serve deployed once the head is ready, the Services, the endpoints and the conditions.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::*;
use kuberay_plugin_sdk::testing::Write;
use serde_json::json;

#[test]
fn the_finalizer_comes_first() {
    let mut object = rayservice(json!({}));
    object["metadata"]["finalizers"] = json!([]);
    let (host, _) = host(object);
    reconcile(&host);
    assert_eq!(
        host.writes(),
        vec![Write::AddFinalizer("ray.io/rayservice-finalizer".into())]
    );
}

#[test]
fn the_cluster_name_is_recorded_before_the_cluster_is_created() {
    let (host, _) = host(rayservice(json!({})));
    reconcile(&host);
    let name = pending_name(&host).expect("a pending cluster name");
    assert!(
        name.starts_with("svc-") && name.len() == "svc-".len() + 5,
        "{name}"
    );
    assert!(
        creates(&host, &cluster_kind()).is_empty(),
        "created before the name was recorded"
    );
    assert_eq!(condition(&host, "Ready")["reason"], "Initializing");

    // The next reconcile (or one after a restart) creates exactly that cluster, once.
    reconcile(&host);
    reconcile(&host);
    assert_eq!(creates(&host, &cluster_kind()), vec![name.clone()]);
    let cluster = host.objects(&cluster_kind()).pop().unwrap();
    let labels = &cluster["metadata"]["labels"];
    assert_eq!(labels["ray.io/originated-from-crd"], "RayService");
    assert_eq!(labels["ray.io/originated-from-cr-name"], "svc");
    let annotations = &cluster["metadata"]["annotations"];
    assert_eq!(annotations["ray.io/num-worker-groups"], "1");
    assert_eq!(annotations["ray.io/kuberay-version"], "v1.7.0");
    assert!(annotations["ray.io/hash-without-replicas-and-workers-to-delete"].is_string());
    let events: Vec<String> = host.events().iter().map(|e| e.reason.clone()).collect();
    assert!(events.contains(&"CreatedRayCluster".to_string()), "{events:?}");
}

#[test]
fn serve_waits_for_the_head_then_deploys_once_and_the_services_follow_the_ready_cluster() {
    let (host, heads) = host(rayservice(json!({})));
    reconcile(&host);
    let name = pending_name(&host).unwrap();
    reconcile(&host);
    reconcile(&host);
    assert!(
        heads.lock().unwrap().puts.is_empty(),
        "deployed before the head was ready"
    );

    head_ready(&host, &name);
    reconcile(&host);
    assert_eq!(heads.lock().unwrap().puts, vec![name.clone()]);
    let deployed = heads.lock().unwrap().configs[&name].clone();
    assert_eq!(
        deployed["applications"][0]["import_path"], "m:app",
        "the YAML is sent as JSON"
    );
    assert!(
        applies(&host, &service_kind()).is_empty(),
        "Services before the applications run"
    );

    serve_endpoints(&host, "svc-serve-svc", 2);
    reconcile(&host);
    assert_eq!(
        heads.lock().unwrap().puts.len(),
        1,
        "the running config was sent again"
    );
    assert_eq!(active_name(&host).as_deref(), Some(name.as_str()));
    assert_eq!(pending_name(&host), None);
    let status = status(&host);
    assert_eq!(status["numServeEndpoints"], 2);
    assert_eq!(status["serviceStatus"], "Running");
    assert_eq!(
        status["activeServiceStatus"]["applicationStatuses"]["app1"]["status"],
        "RUNNING"
    );
    assert_eq!(
        status["activeServiceStatus"]["applicationStatuses"]["app1"]["serveDeploymentStatuses"]["D"]["status"],
        "HEALTHY"
    );
    assert_eq!(condition(&host, "Ready")["status"], "True");
    assert_eq!(condition(&host, "Ready")["reason"], "NonZeroServeEndpoints");
    assert_eq!(
        condition(&host, "UpgradeInProgress")["reason"],
        "NoPendingCluster"
    );

    let services = host.objects(&service_kind());
    let head = services
        .iter()
        .find(|s| s["metadata"]["name"] == "svc-head-svc")
        .unwrap();
    assert_eq!(head["spec"]["selector"]["ray.io/cluster"], name.as_str());
    assert_eq!(head["spec"]["selector"]["ray.io/node-type"], "head");
    assert_eq!(head["spec"]["clusterIP"], "None");
    let serve = services
        .iter()
        .find(|s| s["metadata"]["name"] == "svc-serve-svc")
        .unwrap();
    assert_eq!(
        serve["spec"]["selector"],
        json!({"ray.io/cluster": name, "ray.io/serve": "true"})
    );
    assert_eq!(serve["spec"]["ports"], json!([{"name": "serve", "port": 8000}]));
    assert_eq!(serve["metadata"]["labels"]["ray.io/serve"], "svc-serve");

    // Steady state: nothing written again.
    host.clear_writes();
    reconcile(&host);
    assert!(host.writes().is_empty(), "{:?}", host.writes());
}

#[test]
fn a_head_without_applications_gets_the_config_again() {
    let (host, heads) = host(rayservice(json!({})));
    let name = bring_up(&host);
    heads.lock().unwrap().configs.clear();
    reconcile(&host);
    assert_eq!(heads.lock().unwrap().puts, vec![name.clone(), name]);
}

#[test]
fn zero_endpoints_after_ready_is_reported() {
    let (host, _) = host(rayservice(json!({})));
    bring_up(&host);
    host.update(
        &kuberay_plugin_sdk::Kind::new("discovery.k8s.io", "v1", "EndpointSlice"),
        "svc-serve-svc-x",
        |s| {
            s["endpoints"][0]["conditions"]["ready"] = json!(false);
            s["endpoints"][1]["conditions"]["ready"] = json!(false);
        },
    );
    reconcile(&host);
    assert_eq!(condition(&host, "Ready")["status"], "False");
    assert_eq!(condition(&host, "Ready")["reason"], "ZeroServeEndpoints");
    // KubeRay's `NotRunning` is the empty string, which its JSON leaves out.
    assert_eq!(status(&host).get("serviceStatus"), None);
}

#[test]
fn a_custom_serve_service_keeps_its_name_and_gets_our_selector() {
    let custom = json!({"metadata": {"name": "my-serve", "labels": {"team": "a"}},
                        "spec": {"selector": {"app": "x"}, "ports": [{"name": "serve", "port": 8000, "appProtocol": "http"}]}});
    let (host, _) = host(rayservice(json!({"serveService": custom})));
    reconcile(&host);
    let name = pending_name(&host).unwrap();
    reconcile(&host);
    head_ready(&host, &name);
    reconcile(&host);
    reconcile(&host);
    let services = host.objects(&service_kind());
    let serve = services
        .iter()
        .find(|s| s["metadata"]["name"] == "my-serve")
        .expect("the custom Service");
    assert_eq!(
        serve["spec"]["selector"],
        json!({"ray.io/cluster": name, "ray.io/serve": "true"})
    );
    assert_eq!(serve["spec"]["ports"][0]["appProtocol"], "http");
    assert_eq!(serve["metadata"]["labels"]["team"], "a");
    assert!(services.iter().all(|s| s["metadata"]["name"] != "svc-serve-svc"));
}
