//! The finalizer `ray.io/rayjob-finalizer`: deleting a RayJob whose Ray job may still run stops that job
//! first; the finalizer goes in every case, so a RayJob is never stuck behind an unreachable head.

mod common;

use common::*;
use kuberay_plugin_sdk::{serde_json::json, testing::Write};

fn delete(host: &kuberay_plugin_sdk::testing::FakeHost) {
    let mut job = host.primary();
    job["metadata"]["deletionTimestamp"] = json!(rfc3339(50));
    host.set_primary(job);
}

#[test]
fn deleting_a_running_rayjob_stops_its_ray_job() {
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let (cluster, id) = (cluster_name(&host), job_id(&host));
    step(&host); // submitted
    step(&host); // PENDING
    delete(&host);
    // A reconcile of a deleted RayJob leaves the job to the cleanup.
    host.clear_writes();
    ray.clear();
    step(&host);
    assert_eq!((host.writes(), ray.calls()), (vec![], vec![]));

    cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ray.calls(), vec![format!("POST /api/jobs/{id}/stop")]);
    assert_eq!(ray.requests()[0].cluster, cluster);
    assert_eq!(ray.job(&id).map(|j| j.status), Some("STOPPED".to_string()));
    assert_eq!(
        host.writes(),
        vec![Write::RemoveFinalizer("ray.io/rayjob-finalizer".into())]
    );
}

#[test]
fn a_finished_job_is_not_stopped() {
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let id = job_id(&host);
    step(&host);
    ray.set_status(&id, "SUCCEEDED", Some(T0 * 1000));
    step(&host);
    assert_eq!(deployment(&host), "Complete");
    delete(&host);
    ray.clear();
    host.clear_writes();
    cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(ray.calls().is_empty());
    assert_eq!(
        host.writes(),
        vec![Write::RemoveFinalizer("ray.io/rayjob-finalizer".into())]
    );
}

#[test]
fn an_unreachable_head_does_not_keep_the_rayjob() {
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    step(&host);
    ray.set_unreachable(true);
    delete(&host);
    host.clear_writes();
    cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ray.calls().len(),
        3,
        "one stop attempt after the submission and its lookup"
    );
    assert_eq!(
        host.writes(),
        vec![Write::RemoveFinalizer("ray.io/rayjob-finalizer".into())]
    );
    assert!(
        host.logs()
            .iter()
            .any(|(_, m)| m.starts_with("failed to stop the Ray job; removing the finalizer anyway"))
    );
}

#[test]
fn a_rayjob_deleted_before_it_named_anything_just_goes() {
    let host = host(sample("ray-job.sample.yaml"));
    let ray = FakeRay::install(&host);
    step(&host);
    let mut job = host.primary();
    job["status"] = json!({"jobDeploymentStatus": "Initializing"});
    host.set_primary(job);
    delete(&host);
    host.clear_writes();
    cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(ray.calls().is_empty());
    assert_eq!(host.writes().len(), 1);
}
