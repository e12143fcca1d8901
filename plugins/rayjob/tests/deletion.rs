//! After the job: `shutdownAfterJobFinishes` with its TTL, `deletionRules` (one action per reconcile, the
//! most destructive overdue rule first, each at its TTL), and the legacy `onSuccess`/`onFailure` pair. Each
//! RayJob is driven to its end in HTTPMode, where the plugin's fake Ray head decides the outcome.

mod common;

use std::time::Duration;

use common::*;
use kuberay_plugin_sdk::{
    Kind,
    serde_json::{Value, json},
    testing::{FakeHost, Write},
};

/// Runs `job` until Ray reports `ray_status`; the RayJob ends at `T0 + 10`.
fn finished(job: Value, ray_status: &str) -> FakeHost {
    let host = host(job);
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    step(&host);
    ray.set_status(&job_id(&host), ray_status, Some((T0 + 9) * 1000));
    at(&host, 10);
    step(&host);
    assert_eq!(status(&host)["endTime"], rfc3339(10));
    host
}

fn http_with(extra: Value) -> Value {
    let mut job = sample_in("HTTPMode");
    for (k, v) in extra.as_object().into_iter().flatten() {
        job["spec"][k] = v.clone();
    }
    job
}

#[test]
fn shutdown_deletes_the_cluster_after_the_ttl_and_keeps_the_submitter() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["shutdownAfterJobFinishes"] = json!(true);
    job["spec"]["ttlSecondsAfterFinished"] = json!(60);
    let host = host(job);
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let cluster = cluster_name(&host);
    ray.add_job(&job_id(&host), "SUCCEEDED");
    ray.set_status(&job_id(&host), "SUCCEEDED", Some((T0 + 9) * 1000));
    submitter_finished(&host, "rayjob-sample", "Complete", 9);
    at(&host, 10);
    step(&host);
    assert_eq!(deployment(&host), "Complete");

    at(&host, 30);
    host.clear_writes();
    let outcome = step(&host);
    assert_eq!(host.writes(), vec![]);
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(40 + 2)));

    at(&host, 70);
    let outcome = step(&host);
    assert_eq!(
        host.writes(),
        vec![Write::Delete(ray_cluster_kind(), cluster.clone())]
    );
    assert_eq!(outcome.requeue_after, None);
    assert!(
        get(&host, &job_kind(), "rayjob-sample").is_some(),
        "the submitter keeps the logs"
    );
    // Done for good: later looks write nothing.
    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![]);
}

#[test]
fn deletion_rules_run_one_at_a_time_most_destructive_first() {
    let job = http_with(json!({"deletionStrategy": {"deletionRules": [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 10}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 30}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 0}},
    ]}}));
    let host = finished(job, "SUCCEEDED");
    let cluster = cluster_name(&host);

    host.clear_writes();
    let outcome = step(&host);
    assert_eq!(host.writes(), vec![]);
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(10 + 2)));

    // DeleteWorkers is due: every worker group is suspended, the head stays. Only the worker groups are
    // applied, so nothing else of the cluster changes hands.
    at(&host, 20);
    let before = get(&host, &ray_cluster_kind(), &cluster).expect("cluster");
    let outcome = step(&host);
    assert_eq!(
        host.writes(),
        vec![Write::Apply(ray_cluster_kind(), cluster.clone())]
    );
    let applied = host
        .last_applied(&ray_cluster_kind(), &cluster)
        .expect("an apply");
    let mut groups = before["spec"]["workerGroupSpecs"].clone();
    groups[0]["suspend"] = json!(true);
    assert_eq!(applied["spec"], json!({"workerGroupSpecs": groups}));
    // Merged into the cluster, as the API server merges a server-side apply.
    let merged = get(&host, &ray_cluster_kind(), &cluster).expect("cluster");
    assert_eq!(merged["spec"]["headGroupSpec"], before["spec"]["headGroupSpec"]);
    assert_eq!(merged["spec"]["workerGroupSpecs"], groups);
    assert_eq!(
        event(&host, "UpdatedRayCluster").map(|e| e.note),
        Some(format!(
            "Set the `suspend` field to true for all worker groups in cluster default/{cluster}"
        ))
    );
    // Next: DeleteCluster at `endTime + 30`.
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(20 + 2)));
    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![], "DeleteWorkers is done and not repeated");

    at(&host, 40);
    step(&host);
    assert_eq!(host.writes(), vec![Write::Delete(ray_cluster_kind(), cluster)]);
}

#[test]
fn overdue_rules_pick_the_most_destructive() {
    // The operator was away: both rules are overdue; the cluster goes, the workers step is skipped.
    let job = http_with(json!({"deletionStrategy": {"deletionRules": [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "FAILED", "ttlSeconds": 5}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 10}},
    ]}}));
    let host = finished(job, "FAILED");
    let cluster = cluster_name(&host);
    at(&host, 500);
    host.clear_writes();
    let outcome = step(&host);
    assert_eq!(host.writes(), vec![Write::Delete(ray_cluster_kind(), cluster)]);
    assert_eq!(outcome.requeue_after, None);
}

#[test]
fn deployment_status_rules_match_failures_ray_never_saw() {
    let job = http_with(json!({
        "activeDeadlineSeconds": 5,
        "deletionStrategy": {"deletionRules": [
            {"policy": "DeleteCluster", "condition": {"jobDeploymentStatus": "Failed"}},
        ]},
    }));
    let host = host(job);
    FakeRay::install(&host);
    run_to_running(&host);
    at(&host, 5);
    step(&host);
    assert_eq!(status(&host)["reason"], "DeadlineExceeded");
    let cluster = cluster_name(&host);
    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![Write::Delete(ray_cluster_kind(), cluster)]);
}

#[test]
fn legacy_policies_follow_how_ray_ended_the_job() {
    let strategy = json!({
        "ttlSecondsAfterFinished": 0,
        "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteNone"}},
    });
    let host = finished(http_with(strategy.clone()), "SUCCEEDED");
    let cluster = cluster_name(&host);
    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![Write::Delete(ray_cluster_kind(), cluster)]);

    let host = finished(http_with(strategy), "FAILED");
    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![], "DeleteNone on failure");
}

#[test]
fn delete_self_deletes_the_rayjob_itself() {
    let job = http_with(json!({"deletionStrategy": {"deletionRules": [
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}},
    ]}}));
    let host = finished(job, "SUCCEEDED");
    host.clear_writes();
    step(&host);
    let rayjob = Kind::new("ray.io", "v1", "RayJob");
    assert_eq!(host.writes(), vec![Write::Delete(rayjob, "rayjob-sample".into())]);
    assert!(
        host.primary().pointer("/metadata/deletionTimestamp").is_some(),
        "the RayJob is being deleted"
    );
}

#[test]
fn invalid_strategies_are_rejected_with_kuberays_messages() {
    let cases = [
        (
            json!({"shutdownAfterJobFinishes": true, "deletionStrategy": {"deletionRules": [
                {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED"}}]}}),
            "The RayJob spec is invalid: spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules \
             are mutually exclusive",
        ),
        (
            json!({"deletionStrategy": {"deletionRules": [
                {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 10}},
                {"policy": "DeleteWorkers", "condition": {"jobStatus": "FAILED", "ttlSeconds": 20}},
                {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 30}}]}}),
            "deletionRules[2]: duplicate rule for DeletionPolicyType 'DeleteCluster' and JobStatus 'FAILED'\n\
             for JobStatus 'FAILED': DeleteCluster TTL (10) must be >= DeleteWorkers TTL (20)",
        ),
        (
            json!({"ttlSecondsAfterFinished": 10}),
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have \
             TTLSecondsAfterFinished",
        ),
        (
            json!({"shutdownAfterJobFinishes": true, "deletionStrategy": {
                "onSuccess": {"policy": "DeleteNone"}, "onFailure": {"policy": "DeleteCluster"}}}),
            "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion policy is \
             'DeleteNone'",
        ),
    ];
    for (extra, message) in cases {
        let host = host(http_with(extra));
        step(&host);
        let s = status(&host);
        assert_eq!(s["jobDeploymentStatus"], "ValidationFailed");
        assert_eq!(s["reason"], "ValidationFailed");
        assert_eq!(s["message"], message);
    }
}
