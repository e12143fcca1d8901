//! The RayJob's status has the shape Go's `json.Marshal` of KubeRay's `RayJobStatus` gives it: `rayJobInfo`
//! and `rayClusterStatus` are Go structs, so they are written from the first status write on, empty or not.

mod common;

use common::*;
use kuberay_plugin_sdk::serde_json::{Value, json};

/// KubeRay's `RayClusterStatus{}`: the quantities are structs too, and so is `head`.
fn zero_cluster_status() -> Value {
    json!({"desiredCPU": "0", "desiredMemory": "0", "desiredGPU": "0", "desiredTPU": "0", "head": {}})
}

#[test]
fn the_first_status_write_has_the_empty_job_info_and_cluster_status() {
    let host = host(sample_in("K8sJobMode"));
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Initializing");
    assert_eq!(s["rayJobInfo"], json!({}));
    assert_eq!(s["rayClusterStatus"], zero_cluster_status());
}

#[test]
fn a_copied_cluster_status_gets_the_fields_go_always_writes() {
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.add_job(&job_id(&host), "RUNNING");
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobStatus"], "RUNNING");
    // `cluster_ready` gives the cluster a status without quantities; the copy made with Ray's answer has
    // them.
    assert_eq!(s["rayClusterStatus"]["state"], "ready");
    assert_eq!(s["rayClusterStatus"]["readyWorkerReplicas"], 1);
    for quantity in ["desiredCPU", "desiredMemory", "desiredGPU", "desiredTPU"] {
        assert_eq!(s["rayClusterStatus"][quantity], "0", "{s}");
    }
    assert_eq!(
        s["rayClusterStatus"]["head"]["serviceName"],
        format!("{}-head-svc", cluster_name(&host))
    );
    assert!(s["rayJobInfo"]["startTime"].is_string(), "{s}");
}

#[test]
fn a_validation_failure_is_written_with_them_too() {
    let mut job = sample_in("K8sJobMode");
    job["spec"]["activeDeadlineSeconds"] = json!(-1);
    let host = host(job);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "ValidationFailed");
    assert_eq!(s["rayJobInfo"], json!({}));
    assert_eq!(s["rayClusterStatus"], zero_cluster_status());
}

#[test]
fn a_status_without_them_is_completed_once_then_left_alone() {
    let host = host(sample_in("K8sJobMode"));
    step(&host);
    step(&host);
    let mut primary = host.primary();
    let Some(s) = primary["status"].as_object_mut() else {
        panic!("no status: {primary}");
    };
    s.remove("rayJobInfo");
    s.remove("rayClusterStatus");
    host.set_primary(primary);
    host.clear_writes();
    step(&host);
    assert!(wrote_status(&host));
    assert_eq!(status(&host)["rayJobInfo"], json!({}));
    assert_eq!(status(&host)["rayClusterStatus"], zero_cluster_status());
    host.clear_writes();
    step(&host);
    assert!(!wrote_status(&host));
}

#[test]
fn emptying_what_was_filled_takes_two_status_writes() {
    // Server-side apply would store `{}` written over an object it had filled as `null`, which the CRD
    // refuses: the reset after a suspension first drops the two objects, then writes them empty.
    let mut job = sample_in("HTTPMode");
    job["spec"]["shutdownAfterJobFinishes"] = json!(true);
    let host = host(job);
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.add_job(&job_id(&host), "RUNNING");
    step(&host);
    let running = status(&host);
    assert!(running["rayJobInfo"]["startTime"].is_string(), "{running}");
    assert!(
        running["rayClusterStatus"]["head"]["serviceName"].is_string(),
        "{running}"
    );
    let mut primary = host.primary();
    primary["spec"]["suspend"] = json!(true);
    host.set_primary(primary);
    step(&host);
    assert_eq!(deployment(&host), "Suspending");
    host.clear_writes();
    // The cluster is deleted, then the status is reset.
    step(&host);
    step(&host);
    let statuses = host.applied_statuses();
    let [without, with] = statuses.as_slice() else {
        panic!("expected two status writes: {statuses:?}");
    };
    assert_eq!(without["jobDeploymentStatus"], "Suspended");
    assert!(without.get("rayJobInfo").is_none(), "{without}");
    assert!(without["rayClusterStatus"].get("head").is_none(), "{without}");
    assert_eq!(with["rayJobInfo"], json!({}));
    assert_eq!(with["rayClusterStatus"], zero_cluster_status());
    assert_eq!(status(&host), *with);
}
