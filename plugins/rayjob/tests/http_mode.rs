//! `HTTPMode`: the plugin submits through the host's Ray head interface. The request must be KubeRay's,
//! byte for byte; the job must be looked up before it is submitted, on every reconcile and across restarts;
//! "already submitted" is success; and a head that keeps failing ends the RayJob after the status-check
//! timeout.

mod common;

use common::*;
use kuberay_plugin_sdk::{PortRole, RayTarget, serde_json::json};

fn http_job() -> kuberay_plugin_sdk::testing::FakeHost {
    let mut job = sample_in("HTTPMode");
    job["spec"]["metadata"] = json!({"owner": "team-a"});
    job["spec"]["entrypointNumCpus"] = json!(1);
    job["spec"]["entrypointNumGpus"] = json!(0.5);
    job["spec"]["entrypointResources"] = json!(r#"{"Custom_1": 1, "Custom_2": 5.5}"#);
    host(job)
}

#[test]
fn submits_kuberays_request_after_looking_the_job_up() {
    let host = http_job();
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    // No submitter Job in HTTPMode, and Ray has not been asked anything before Running.
    assert!(get(&host, &job_kind(), "rayjob-sample").is_none());
    assert!(ray.calls().is_empty());
    let cluster = cluster_name(&host);
    let id = job_id(&host);

    host.clear_writes();
    step(&host);
    assert_eq!(
        ray.calls(),
        vec![format!("GET /api/jobs/{id}"), "POST /api/jobs/".to_string()]
    );
    let post = &ray.requests()[1];
    assert_eq!(post.cluster, cluster);
    assert_eq!(
        (post.role, post.target),
        (PortRole::Dashboard, RayTarget::Cluster)
    );
    assert_eq!(
        post.headers,
        vec![("Content-Type".to_string(), "application/json".to_string())]
    );
    assert_eq!(
        String::from_utf8_lossy(&post.body),
        format!(
            r#"{{"runtime_env":{{"env_vars":{{"counter_name":"test_counter"}},"pip":["requests==2.26.0","pendulum==2.1.2"]}},"metadata":{{"owner":"team-a"}},"entrypoint_resources":{{"Custom_1":1,"Custom_2":5.5}},"entrypoint":"python /home/ray/samples/sample_code.py","submission_id":"{id}","entrypoint_num_cpus":1,"entrypoint_num_gpus":0.5}}"#
        )
    );
    // Submitting changes nothing in the status; Ray's answer on the next look does.
    assert!(!wrote_status(&host));
    ray.clear();
    step(&host);
    assert_eq!(ray.calls(), vec![format!("GET /api/jobs/{id}")]);
    assert_eq!(status(&host)["jobStatus"], "PENDING");
}

#[test]
fn a_job_submitted_before_a_restart_is_found_not_resubmitted() {
    // The operator submitted, then died before it could record anything: the next instance only has the
    // status, which already names the job.
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let id = job_id(&host);
    ray.add_job(&id, "RUNNING");
    ray.clear();
    step(&host);
    assert_eq!(ray.calls(), vec![format!("GET /api/jobs/{id}")]);
    assert_eq!(status(&host)["jobStatus"], "RUNNING");
    assert!(
        ray.job(&id).is_some_and(|j| j.submitted.is_null()),
        "not submitted again"
    );
}

#[test]
fn already_submitted_is_success() {
    // Ray's job list lags: the lookup says 404, the submission says the id is taken.
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.fail_submissions(
        500,
        "Traceback (most recent call last):\nValueError: Job with submission_id x already exists. Please use a \
         different submission_id.",
    );
    host.clear_writes();
    step(&host);
    assert_eq!(ray.calls().last().map(String::as_str), Some("POST /api/jobs/"));
    assert!(!wrote_status(&host));
    assert!(status(&host).get("jobStatusCheckFailureStartTime").is_none());
    assert_eq!(deployment(&host), "Running");
}

#[test]
fn failing_submissions_start_the_status_check_clock_and_time_out() {
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.fail_submissions(500, "No available agent to submit job, please try again later.");
    at(&host, 10);
    step(&host);
    assert_eq!(status(&host)["jobStatusCheckFailureStartTime"], rfc3339(10));
    // Still failing: the clock is not restarted, nothing is written.
    at(&host, 100);
    host.clear_writes();
    step(&host);
    assert!(!wrote_status(&host));
    at(&host, 310);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "JobStatusCheckTimeoutExceeded");
    assert_eq!(
        s["message"],
        "Job status checks have been failing since 2027-01-15 08:00:10; exceeded timeout of 300s"
    );
}

#[test]
fn an_unreachable_head_is_a_status_check_failure_that_clears_when_it_answers() {
    let host = host(sample_in("HTTPMode"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.add_job(&job_id(&host), "RUNNING");
    ray.set_unreachable(true);
    at(&host, 5);
    step(&host);
    assert_eq!(status(&host)["jobStatusCheckFailureStartTime"], rfc3339(5));
    ray.set_unreachable(false);
    at(&host, 8);
    step(&host);
    let s = status(&host);
    assert!(s.get("jobStatusCheckFailureStartTime").is_none(), "{s}");
    assert_eq!(s["jobStatus"], "RUNNING");
}

#[test]
fn ray_verdicts_end_the_rayjob() {
    for (ray_status, deployment_status, reason) in [
        ("SUCCEEDED", "Complete", None),
        ("STOPPED", "Complete", None),
        ("FAILED", "Failed", Some("AppFailed")),
    ] {
        let host = host(sample_in("HTTPMode"));
        let ray = FakeRay::install(&host);
        run_to_running(&host);
        let id = job_id(&host);
        step(&host); // submits
        ray.set_status(&id, ray_status, Some((T0 + 20) * 1000));
        at(&host, 21);
        step(&host);
        let s = status(&host);
        assert_eq!(s["jobStatus"], ray_status);
        assert_eq!(s["jobDeploymentStatus"], deployment_status);
        assert_eq!(s["reason"].as_str(), reason);
        assert_eq!(s["endTime"], rfc3339(21));
        assert_eq!(s["rayJobInfo"]["endTime"], rfc3339(20));
    }
}

#[test]
fn terminal_job_stuck_in_running_ends_after_the_grace_period() {
    // A status written by an older operator: Ray's job ended, the RayJob never followed.
    let host = host(sample_in("HTTPMode"));
    FakeRay::install(&host);
    run_to_running(&host);
    let mut job = host.primary();
    job["status"]["jobStatus"] = json!("FAILED");
    job["status"]["rayJobInfo"] = json!({"endTime": rfc3339(10)});
    host.set_primary(job);
    at(&host, 309);
    step(&host);
    assert_eq!(deployment(&host), "Running");
    at(&host, 310);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "JobDeploymentStatusTransitionGracePeriodExceeded");
}

#[test]
fn kuberays_status_check_timeout_toggle_shortens_the_timeout() {
    let host = host(sample_in("HTTPMode"))
        .with_config(json!({"kuberayEnv": {"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "60"}}));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.fail_submissions(500, "No available agent to submit job, please try again later.");
    at(&host, 10);
    step(&host);
    at(&host, 69);
    step(&host);
    assert_eq!(deployment(&host), "Running", "59 s of 60");
    at(&host, 70);
    step(&host);
    let s = status(&host);
    assert_eq!(s["reason"], "JobStatusCheckTimeoutExceeded");
    assert_eq!(
        s["message"],
        "Job status checks have been failing since 2027-01-15 08:00:10; exceeded timeout of 60s"
    );
}
