//! `activeDeadlineSeconds`, `preRunningDeadlineSeconds` and `backoffLimit`: deadlines fail the RayJob for
//! good; other failures are retried from scratch, each attempt on a new cluster with a new submission id,
//! until the limit.

mod common;

use common::*;
use kuberay_plugin_sdk::serde_json::json;

#[test]
fn active_deadline_fails_even_a_running_job_and_is_not_retried() {
    let mut job = sample_in("HTTPMode");
    job["spec"]["activeDeadlineSeconds"] = json!(60);
    job["spec"]["backoffLimit"] = json!(3);
    let host = host(job);
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.add_job(&job_id(&host), "RUNNING");
    at(&host, 59);
    step(&host);
    assert_eq!(deployment(&host), "Running");
    at(&host, 60);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "DeadlineExceeded");
    assert_eq!(
        s["message"],
        "The RayJob has passed the activeDeadlineSeconds. StartTime: 2027-01-15 08:00:00 +0000 UTC. \
         ActiveDeadlineSeconds: 60"
    );
    assert_eq!(s["failed"], 1);
    assert_eq!(s["endTime"], rfc3339(60));
}

#[test]
fn pre_running_deadline_fails_a_cluster_that_never_gets_ready() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["preRunningDeadlineSeconds"] = json!(30);
    let host = host(job);
    step(&host);
    step(&host);
    at(&host, 29);
    step(&host);
    assert_eq!(deployment(&host), "Initializing");
    at(&host, 30);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "PreRunningDeadlineExceeded");
    assert_eq!(
        s["message"],
        "The RayJob has passed the preRunningDeadlineSeconds. StartTime: 2027-01-15 08:00:00 +0000 UTC. \
         PreRunningDeadlineSeconds: 30"
    );
}

#[test]
fn failures_are_retried_on_a_new_cluster_until_the_backoff_limit() {
    let mut job = sample_in("HTTPMode");
    job["spec"]["backoffLimit"] = json!(1);
    let host = host(job);
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let (first_cluster, first_id) = (cluster_name(&host), job_id(&host));
    step(&host); // submitted
    ray.set_status(&first_id, "FAILED", Some((T0 + 10) * 1000));
    at(&host, 10);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Retrying");
    assert_eq!(s["failed"], 1);
    assert_eq!(s["reason"], "AppFailed");

    // Retrying deletes the cluster and waits until it is gone before starting over.
    host.clear_writes();
    step(&host);
    assert!(get(&host, &ray_cluster_kind(), &first_cluster).is_none());
    assert!(event_reasons(&host).contains(&"DeletedRayCluster".to_string()));
    assert!(
        !wrote_status(&host),
        "the status moves on only once the cluster is gone"
    );
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], json!(null));
    assert_eq!(s["failed"], 1);
    assert!(
        s.get("rayClusterName").is_none() && s.get("jobId").is_none(),
        "{s}"
    );

    // The second attempt: a new cluster, a new submission.
    at(&host, 20);
    run_to_running(&host);
    let (second_cluster, second_id) = (cluster_name(&host), job_id(&host));
    assert_ne!(second_cluster, first_cluster);
    assert_ne!(second_id, first_id);
    assert!(get(&host, &ray_cluster_kind(), &second_cluster).is_some());
    assert_eq!(status(&host)["startTime"], rfc3339(20));
    step(&host);
    ray.set_status(&second_id, "FAILED", Some((T0 + 30) * 1000));
    at(&host, 30);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed", "the limit is reached: {s}");
    assert_eq!(s["failed"], 2);
}

#[test]
fn retrying_k8s_job_mode_replaces_the_submitter_job() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["backoffLimit"] = json!(2);
    let host = host(job);
    FakeRay::install(&host);
    run_to_running(&host);
    submitter_finished(&host, "rayjob-sample", "Failed", 5);
    at(&host, 6);
    step(&host);
    assert_eq!(deployment(&host), "Retrying");
    step(&host);
    assert!(get(&host, &job_kind(), "rayjob-sample").is_none());
    assert!(event_reasons(&host).contains(&"DeletedRayJobSubmitter".to_string()));
    step(&host);
    run_to_running(&host);
    let submitter = get(&host, &job_kind(), "rayjob-sample").expect("a new submitter");
    assert_eq!(
        submitter["spec"]["template"]["spec"]["containers"][0]["env"][2]["value"],
        job_id(&host).as_str()
    );
}
