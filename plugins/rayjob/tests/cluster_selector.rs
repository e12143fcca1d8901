//! `clusterSelector` (`ray.io/cluster: <name>`): the RayJob runs on a cluster someone else owns. It never
//! creates, exposes, suspends or deletes that cluster, and says so clearly when it does not exist.

mod common;

use common::*;
use kuberay_plugin_sdk::{EventType, serde_json::json, testing::FakeHost};

fn selector_job(mode: &str) -> FakeHost {
    let mut job = sample("ray-job.use-existing-raycluster.yaml");
    job["spec"]["submissionMode"] = json!(mode);
    host(job)
}

#[test]
fn runs_on_the_selected_cluster_and_leaves_it_alone() {
    let host = selector_job("K8sJobMode");
    host.insert(foreign_cluster("ray-cluster-kuberay"));
    host.insert(head_service("ray-cluster-kuberay"));
    let ray = FakeRay::install(&host);
    step(&host);
    assert_eq!(cluster_name(&host), "ray-cluster-kuberay");
    step(&host);
    assert_eq!(deployment(&host), "Running");
    assert_eq!(
        status(&host)["dashboardURL"],
        "ray-cluster-kuberay-head-svc.default.svc.cluster.local:8265"
    );
    assert_eq!(
        host.objects(&ray_cluster_kind()).len(),
        1,
        "no cluster of its own"
    );
    // The submitter uses the selected cluster's image.
    let submitter = get(&host, &job_kind(), "rayjob-use-existing-raycluster").expect("submitter Job");
    assert_eq!(
        submitter["spec"]["template"]["spec"]["containers"][0]["image"],
        "rayproject/ray:2.46.0"
    );

    let id = job_id(&host);
    ray.add_job(&id, "SUCCEEDED");
    ray.set_status(&id, "SUCCEEDED", Some(T0 * 1000 + 5000));
    submitter_finished(&host, "rayjob-use-existing-raycluster", "Complete", 5);
    at(&host, 6);
    step(&host);
    assert_eq!(deployment(&host), "Complete");
    assert!(get(&host, &service_kind(), "rayjob-use-existing-raycluster-head-svc").is_none());
    assert_eq!(ray.requests()[0].cluster, "ray-cluster-kuberay");

    at(&host, 10_000);
    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![]);
    assert!(get(&host, &ray_cluster_kind(), "ray-cluster-kuberay").is_some());
}

#[test]
fn a_missing_cluster_is_reported_and_retried() {
    let host = selector_job("HTTPMode");
    step(&host);
    let err = reconcile(&host).expect_err("the cluster does not exist");
    assert!(
        err.to_string().contains(
            "clusterSelector mode is enabled, but RayCluster default/ray-cluster-kuberay is not found"
        ),
        "{err}"
    );
    let warning = event(&host, "RayClusterNotFound").expect("event");
    assert_eq!(warning.event_type, EventType::Warning);
    assert_eq!(
        warning.note,
        "RayCluster default/ray-cluster-kuberay set in the clusterSelector is not found. It must be created \
         manually"
    );
    assert!(host.objects(&ray_cluster_kind()).is_empty(), "never created");
}

#[test]
fn selector_rules() {
    let cases = [
        (
            json!({"clusterSelector": {"other": "x"}}),
            "cluster name in ClusterSelector should not be empty",
        ),
        (
            json!({"submissionMode": "SidecarMode"}),
            "ClusterSelector is not supported in SidecarMode",
        ),
        (
            json!({"backoffLimit": 2}),
            "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode",
        ),
        (
            json!({"shutdownAfterJobFinishes": true, "suspend": true}),
            "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation",
        ),
    ];
    for (extra, message) in cases {
        let mut job = sample("ray-job.use-existing-raycluster.yaml");
        for (k, v) in extra.as_object().into_iter().flatten() {
            job["spec"][k] = v.clone();
        }
        let host = host(job);
        step(&host);
        assert_eq!(status(&host)["message"], message);
    }
}
