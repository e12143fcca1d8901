//! The head Pod's serve label from its Serve proxy, suspend and resume, deletion with the finalizer,
//! validation and the initializing timeout.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::*;
use kuberay_plugin_rayservice::RayServicePlugin;
use kuberay_plugin_sdk::{Plugin, testing::Write};
use serde_json::{Value, json};

/// The head Pod of `cluster` as the fake cluster holds it.
fn head(host: &kuberay_plugin_sdk::testing::FakeHost, cluster: &str) -> Value {
    host.objects(&pod_kind())
        .into_iter()
        .find(|p| p["metadata"]["name"] == format!("{cluster}-head-abcde"))
        .expect("the head Pod")
}

#[test]
fn a_healthy_serve_proxy_labels_the_head_pod_with_a_label_only_apply() {
    let (host, heads) = host(rayservice(json!({})));
    let name = bring_up(&host);
    assert!(heads.lock().unwrap().healthz.contains(&name));
    let pod = head(&host, &name);
    assert_eq!(pod["metadata"]["labels"]["ray.io/serve"], "true");
    assert_eq!(pod["metadata"]["labels"]["ray.io/cluster"], json!(name));
    assert_eq!(
        pod["metadata"]["ownerReferences"][0]["kind"], "RayCluster",
        "the Pod was taken over"
    );
    assert!(pod["spec"]["containers"].is_array(), "the apply replaced the Pod");
    assert!(applies(&host, &pod_kind()).contains(&format!("{name}-head-abcde")));
}

#[test]
fn excluded_head_pods_are_not_probed_and_stay_out() {
    let (host, heads) = host(rayservice(json!({"excludeHeadPodFromServeSvc": true})));
    bring_up(&host);
    assert!(heads.lock().unwrap().healthz.is_empty());
    assert!(
        applies(&host, &pod_kind()).is_empty(),
        "the label was already false"
    );
}

#[test]
fn an_unhealthy_proxy_sets_the_label_false() {
    let (host, heads) = host(rayservice(json!({})));
    let name = bring_up(&host);
    // The head Pod is back with serve=true and its proxy fails.
    head_pod(&host, &name, "true");
    heads.lock().unwrap().unhealthy.push(name.clone());
    host.clear_writes();
    reconcile(&host);
    assert_eq!(head(&host, &name)["metadata"]["labels"]["ray.io/serve"], "false");
    assert!(applies(&host, &pod_kind()).contains(&format!("{name}-head-abcde")));
}

#[test]
fn suspend_deletes_everything_then_resume_starts_again() {
    let (host, _) = host(rayservice(json!({})));
    let name = bring_up(&host);
    edit_spec(&host, |spec| spec["suspend"] = json!(true));
    reconcile(&host);
    assert_eq!(condition(&host, "Suspending")["status"], "True");
    assert_eq!(active_name(&host), None);
    assert!(
        host.objects(&cluster_kind()).len() == 1,
        "deleted before Suspending was written"
    );
    reconcile(&host);
    assert!(
        host.writes()
            .contains(&Write::Delete(cluster_kind(), name.clone()))
    );
    assert!(
        host.writes()
            .contains(&Write::Delete(service_kind(), "svc-serve-svc".into()))
    );
    reconcile(&host);
    assert_eq!(condition(&host, "Suspended")["status"], "True");
    assert_eq!(condition(&host, "Ready")["reason"], "SuspendComplete");
    host.clear_writes();
    reconcile(&host);
    assert!(
        creates(&host, &cluster_kind()).is_empty(),
        "a suspended RayService made a cluster"
    );

    edit_spec(&host, |spec| spec["suspend"] = json!(false));
    reconcile(&host);
    assert_eq!(condition(&host, "Suspended")["status"], "False");
    assert_eq!(condition(&host, "Suspended")["reason"], "RayServiceResumed");
    assert!(pending_name(&host).is_some(), "no new cluster after resume");
}

#[test]
fn deletion_waits_for_the_clusters_then_removes_the_finalizer() {
    let (host, _) = host(rayservice(json!({})));
    let name = bring_up(&host);
    let mut object = host.primary();
    object["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
    host.set_primary(object);
    let request = || host.request();
    RayServicePlugin::cleanup(&host, request()).unwrap();
    assert!(host.writes().contains(&Write::Delete(cluster_kind(), name)));
    assert!(
        !host
            .writes()
            .iter()
            .any(|w| matches!(w, Write::RemoveFinalizer(_)))
    );
    RayServicePlugin::cleanup(&host, request()).unwrap();
    assert!(
        host.writes()
            .contains(&Write::RemoveFinalizer("ray.io/rayservice-finalizer".into()))
    );
}

#[test]
fn invalid_rayservices_fail_validation_with_kuberays_reasons() {
    let long = "a".repeat(48);
    for (object, event, needle) in [
        (
            {
                let mut o = rayservice(json!({}));
                o["metadata"]["name"] = json!(long);
                o
            },
            "InvalidRayServiceMetadata",
            "no more than 47 characters",
        ),
        (
            {
                let mut o = rayservice(json!({}));
                o["metadata"]["annotations"] = json!({"ray.io/initializing-timeout": "soon"});
                o
            },
            "InvalidRayServiceMetadata",
            "has invalid format",
        ),
        (
            rayservice(json!({"upgradeStrategy": {"type": "Sideways"}})),
            "InvalidRayServiceSpec",
            "Sideways is invalid",
        ),
        (
            {
                let mut o = rayservice(json!({}));
                o["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["maxReplicas"] = json!(0);
                o
            },
            "InvalidRayServiceSpec",
            "The RayService spec is invalid: worker group small has minReplicas 1 greater than maxReplicas 0",
        ),
        (
            {
                let mut o = rayservice(json!({}));
                o["spec"]["rayClusterConfig"]["authOptions"] =
                    json!({"mode": "token", "enableK8sTokenAuth": true});
                o
            },
            "InvalidRayServiceSpec",
            "K8s token auth mode is currently not supported for RayService",
        ),
        (
            rayservice(json!({"rayClusterDeletionDelaySeconds": -1})),
            "InvalidRayServiceSpec",
            "non-negative",
        ),
        (
            rayservice(json!({"upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade"}})),
            "InvalidRayServiceSpec",
            "Autoscaler is required",
        ),
        (
            {
                let mut o = rayservice(
                    json!({"upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade",
                    "clusterUpgradeOptions": {"maxSurgePercent": 5, "stepSizePercent": 10, "intervalSeconds": 5,
                                              "gatewayClassName": "g"}}}),
                );
                o["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = json!(true);
                o
            },
            "InvalidRayServiceSpec",
            "less than or equal to maxSurgePercent",
        ),
    ] {
        let (host, _) = host(object);
        reconcile(&host);
        let ready = condition(&host, "Ready");
        assert_eq!(ready["reason"], "ValidationFailed");
        assert!(ready["message"].as_str().unwrap().contains(needle), "{ready}");
        assert_eq!(
            host.events()
                .iter()
                .map(|e| e.reason.as_str())
                .collect::<Vec<_>>(),
            vec![event]
        );
        assert!(creates(&host, &cluster_kind()).is_empty());
        assert_eq!(pending_name(&host), None);
    }
}

#[test]
fn the_initializing_timeout_fails_the_rayservice_for_good() {
    let mut object = rayservice(json!({}));
    object["metadata"]["annotations"] = json!({"ray.io/initializing-timeout": "1m"});
    let (host, _) = host(object);
    reconcile(&host);
    reconcile(&host);
    let cluster = pending_name(&host).unwrap();
    advance(&host, 61);
    reconcile(&host);
    let ready = condition(&host, "Ready");
    assert_eq!(ready["reason"], "InitializingTimeout");
    assert!(
        ready["message"].as_str().unwrap().contains("timeout of 1m0s"),
        "{ready}"
    );
    assert_eq!(pending_name(&host), None);
    assert!(
        host.events()
            .iter()
            .any(|e| e.reason == "RayServiceInitializingTimeout")
    );
    // Its cluster goes after the deletion delay; nothing new is made.
    advance(&host, 61);
    host.clear_writes();
    reconcile(&host);
    assert!(host.writes().contains(&Write::Delete(cluster_kind(), cluster)));
    assert!(creates(&host, &cluster_kind()).is_empty());
}
