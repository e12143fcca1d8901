//! `InteractiveMode`: the plugin brings up the cluster and waits; the user submits and then names the
//! submission in `spec.jobId`, which the RayJob follows from then on.

mod common;

use common::*;
use kuberay_plugin_sdk::serde_json::json;

#[test]
fn waits_for_the_user_then_follows_their_job() {
    let host = host(sample("ray-job.interactive-mode.yaml"));
    let ray = FakeRay::install(&host);
    step(&host);
    assert_eq!(job_id(&host), "", "no submission id of its own");
    step(&host);
    cluster_ready(&host, &cluster_name(&host));
    step(&host);
    assert_eq!(deployment(&host), "Waiting");
    assert!(get(&host, &job_kind(), "rayjob-interactive-mode").is_none());

    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![], "nothing to do until spec.jobId is set");
    assert!(ray.calls().is_empty());

    let mut job = host.primary();
    job["spec"]["jobId"] = json!("raysubmit_user123");
    host.set_primary(job);
    step(&host);
    assert_eq!(deployment(&host), "Running");
    assert_eq!(job_id(&host), "raysubmit_user123");

    ray.add_job("raysubmit_user123", "RUNNING");
    step(&host);
    assert_eq!(ray.calls(), vec!["GET /api/jobs/raysubmit_user123"]);
    assert_eq!(status(&host)["jobStatus"], "RUNNING");
}

#[test]
fn a_user_who_never_submits_hits_the_pre_running_deadline() {
    let mut job = sample("ray-job.interactive-mode.yaml");
    job["spec"]["preRunningDeadlineSeconds"] = json!(600);
    let host = host(job);
    step(&host);
    step(&host);
    cluster_ready(&host, &cluster_name(&host));
    step(&host);
    assert_eq!(deployment(&host), "Waiting");
    at(&host, 600);
    step(&host);
    assert_eq!(status(&host)["reason"], "PreRunningDeadlineExceeded");
}

#[test]
fn interactive_mode_cannot_retry() {
    let mut job = sample("ray-job.interactive-mode.yaml");
    job["spec"]["backoffLimit"] = json!(1);
    let host = host(job);
    step(&host);
    assert_eq!(
        status(&host)["message"],
        "The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode"
    );
}
