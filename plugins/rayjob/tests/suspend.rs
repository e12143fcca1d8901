//! `suspend`: a suspended RayJob holds no cluster and no submitter; suspension, once started, completes even
//! if the flag is cleared meanwhile; resuming starts over with a new cluster.

mod common;

use common::*;
use kuberay_plugin_sdk::{serde_json::json, testing::FakeHost};

fn suspendable() -> FakeHost {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["shutdownAfterJobFinishes"] = json!(true);
    host(job)
}

fn set_suspend(host: &FakeHost, suspend: bool) {
    let mut job = host.primary();
    job["spec"]["suspend"] = json!(suspend);
    job["metadata"]["generation"] = json!(job["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
    host.set_primary(job);
}

#[test]
fn a_rayjob_created_suspended_creates_nothing() {
    let host = suspendable();
    set_suspend(&host, true);
    step(&host); // New -> Initializing: the names are recorded anyway
    step(&host); // Initializing -> Suspending
    assert_eq!(deployment(&host), "Suspending");
    step(&host);
    assert_eq!(deployment(&host), "Suspended");
    assert!(host.objects(&ray_cluster_kind()).is_empty());
    host.clear_writes();
    let outcome = step(&host);
    assert_eq!((host.writes(), outcome.requeue_after), (vec![], None));
}

#[test]
fn suspend_releases_everything_and_resume_starts_over() {
    let host = suspendable();
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let (cluster, id) = (cluster_name(&host), job_id(&host));
    ray.add_job(&id, "RUNNING");
    step(&host);

    set_suspend(&host, true);
    step(&host);
    assert_eq!(deployment(&host), "Suspending");
    host.clear_writes();
    step(&host);
    assert!(get(&host, &ray_cluster_kind(), &cluster).is_none());
    assert!(get(&host, &job_kind(), "rayjob-sample").is_none());
    assert_eq!(
        event(&host, "DeletedRayCluster").map(|e| e.note),
        Some(format!("Deleted cluster default/{cluster}"))
    );
    assert_eq!(
        event(&host, "DeletedRayJobSubmitter").map(|e| e.note),
        Some("Deleted submitter K8s Job default/rayjob-sample".to_string())
    );
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Suspended");
    for gone in ["rayClusterName", "jobId", "dashboardURL", "jobStatus", "message"] {
        assert!(s.get(gone).is_none(), "{gone} should be reset: {s}");
    }
    // Reset to Go's empty structs, which KubeRay writes as such.
    assert_eq!(s["rayJobInfo"], json!({}));
    assert_eq!(
        s["rayClusterStatus"],
        json!({"desiredCPU": "0", "desiredMemory": "0", "desiredGPU": "0", "desiredTPU": "0", "head": {}})
    );
    assert_eq!(s["startTime"], rfc3339(0));

    set_suspend(&host, false);
    at(&host, 100);
    step(&host);
    assert_eq!(status(&host)["jobDeploymentStatus"], json!(null));
    run_to_running(&host);
    assert_ne!(cluster_name(&host), cluster);
    assert_ne!(job_id(&host), id);
    assert_eq!(status(&host)["startTime"], rfc3339(100));
}

#[test]
fn suspension_is_atomic() {
    let host = suspendable();
    FakeRay::install(&host);
    run_to_running(&host);
    let cluster = cluster_name(&host);
    set_suspend(&host, true);
    step(&host);
    assert_eq!(deployment(&host), "Suspending");
    // Kueue (or the user) changes its mind: the suspension completes all the same.
    set_suspend(&host, false);
    step(&host);
    step(&host);
    assert_eq!(deployment(&host), "Suspended");
    assert!(get(&host, &ray_cluster_kind(), &cluster).is_none());
    step(&host);
    assert_eq!(status(&host)["jobDeploymentStatus"], json!(null));
}

#[test]
fn suspend_requires_shutdown_after_job_finishes() {
    let host = host(sample("ray-job.sample.yaml"));
    set_suspend(&host, true);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "ValidationFailed");
    assert_eq!(
        s["message"],
        "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be \
         suspended"
    );
}
