//! GCS fault tolerance with Redis: the Pods' settings, the finalizer that goes on first, and the clean-up
//! Job run by `Plugin::cleanup` when the cluster is deleted.

mod common;

use std::time::{Duration, UNIX_EPOCH};

use common::*;
use kuberay_plugin_sdk::{
    Kind,
    serde_json::{Value, json},
    testing::{FakeHost, Write},
};

const FINALIZER: &str = "ray.io/gcs-ft-redis-cleanup-finalizer";

fn job_kind() -> Kind {
    Kind::new("batch", "v1", "Job")
}

fn with_options() -> Value {
    let mut cluster = sample(1);
    cluster["spec"]["gcsFaultToleranceOptions"] = json!({
        "redisAddress": "redis:6379",
        "redisPassword": {"valueFrom": {"secretKeyRef": {"name": "redis", "key": "password"}}},
        "redisUsername": {"value": "ray"}
    });
    cluster
}

fn finalizers(host: &FakeHost) -> Value {
    host.primary()["metadata"]["finalizers"].clone()
}

#[test]
fn the_finalizer_goes_on_before_anything_else() {
    let host = host(with_options());
    let outcome = reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), [Write::AddFinalizer(FINALIZER.into())]);
    assert_eq!(outcome.requeue_after, secs(2));
    assert_eq!(finalizers(&host), json!([FINALIZER]));
    settle(&host, 3);
    assert_eq!(pods(&host).len(), 2);
}

#[test]
fn pods_get_redis_settings() {
    let host = host(with_options());
    settle(&host, 4);
    let head = &heads(&host)[0];
    let annotations = &head["metadata"]["annotations"];
    assert_eq!(annotations["ray.io/ft-enabled"], "true");
    assert_eq!(annotations["ray.io/external-storage-namespace"], "cluster-uid");
    let ray = &head["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_external_storage_namespace").map(|e| e["value"].clone()),
        Some(json!("cluster-uid"))
    );
    assert_eq!(
        env_value(ray, "RAY_REDIS_ADDRESS").map(|e| e["value"].clone()),
        Some(json!("redis:6379"))
    );
    assert_eq!(
        env_value(ray, "REDIS_USERNAME").map(|e| e["value"].clone()),
        Some(json!("ray"))
    );
    assert_eq!(
        env_value(ray, "REDIS_PASSWORD").map(|e| e["valueFrom"].clone()),
        Some(json!({"secretKeyRef": {"name": "redis", "key": "password"}}))
    );
    let args = ray["args"][0].as_str().unwrap_or_default();
    assert!(
        args.contains(" --redis-password=$REDIS_PASSWORD  --redis-username=$REDIS_USERNAME "),
        "{args}"
    );
    let worker = &workers(&host)[0]["spec"]["containers"][0];
    assert_eq!(
        env_value(worker, "RAY_gcs_rpc_server_reconnect_timeout_s").map(|e| e["value"].clone()),
        Some(json!("600"))
    );
    assert!(env_value(worker, "RAY_REDIS_ADDRESS").is_none());
}

#[test]
fn the_legacy_annotation_enables_fault_tolerance_too() {
    let mut cluster = sample(0);
    cluster["metadata"]["annotations"] =
        json!({"ray.io/ft-enabled": "true", "ray.io/external-storage-namespace": "my-ns"});
    cluster["spec"]["headGroupSpec"]["rayStartParams"] = json!({"redis-password": "secret"});
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}]);
    let host = host(cluster);
    settle(&host, 4);
    assert_eq!(finalizers(&host), json!([FINALIZER]));
    let head = &heads(&host)[0];
    assert_eq!(
        head["metadata"]["annotations"]["ray.io/external-storage-namespace"],
        "my-ns"
    );
    let ray = &head["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_external_storage_namespace").map(|e| e["value"].clone()),
        Some(json!("my-ns"))
    );
    assert_eq!(
        env_value(ray, "REDIS_PASSWORD").map(|e| e["value"].clone()),
        Some(json!("secret"))
    );
}

fn deleting(host: &FakeHost, at_secs: i64) {
    let mut object = host.primary();
    object["metadata"]["deletionTimestamp"] = json!(
        k8s_openapi::jiff::Timestamp::from_second(at_secs)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default()
    );
    host.set_primary(object);
}

#[test]
fn deletion_runs_the_redis_cleanup_job_then_releases_the_cluster() {
    let host = host(with_options());
    settle(&host, 4);
    let t0: i64 = 1_800_000_000;
    deleting(&host, t0);
    host.set_now(UNIX_EPOCH + Duration::from_secs(1_800_000_001));

    // A reconcile of a deleting cluster does nothing; the host calls cleanup instead.
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), []);

    // Round 1: every Pod is deleted; look again later.
    host.clear_writes();
    let outcome = cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 2);
    assert!(pods(&host).is_empty());
    assert_eq!(outcome.requeue_after, secs(10));
    assert!(host.objects(&job_kind()).is_empty());

    // Round 2: the head looks gone, but its grace period (30 s) is not over: it may still write to Redis.
    host.set_now(UNIX_EPOCH + Duration::from_secs(1_800_000_011));
    host.clear_writes();
    let outcome = cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), []);
    assert_eq!(outcome.requeue_after, secs(24));

    // Round 3: the Job.
    host.set_now(UNIX_EPOCH + Duration::from_secs(1_800_000_035));
    host.clear_writes();
    let outcome = cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    let jobs = host.objects(&job_kind());
    assert_eq!(jobs.len(), 1);
    assert_eq!(outcome.requeue_after, secs(2));
    assert!(event_reasons(&host).contains(&"CreatedRedisCleanupJob".to_string()));
    let job = &jobs[0];
    assert_eq!(name(job), "raycluster-sample-redis-cleanup");
    assert_eq!(label(job, "ray.io/node-type"), Some("redis-cleanup"));
    assert_eq!(job["spec"]["backoffLimit"], 0);
    assert_eq!(job["spec"]["activeDeadlineSeconds"], 300);
    let pod = &job["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"]["ray.io/node-type"], "redis-cleanup");
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    let containers = pod["spec"]["containers"].as_array().cloned().unwrap_or_default();
    assert_eq!(containers.len(), 1);
    let ray = &containers[0];
    assert_eq!(ray["command"], json!(["/bin/bash", "-c", "--"]));
    assert!(
        ray["args"][0]
            .as_str()
            .is_some_and(|a| a.contains("username=os.getenv('REDIS_USERNAME'"))
    );
    assert!(ray.get("livenessProbe").is_none() && ray.get("readinessProbe").is_none());
    assert_eq!(
        ray["resources"]["requests"],
        json!({"cpu": "200m", "memory": "256Mi"})
    );
    assert_eq!(
        env_value(ray, "RAY_redis_db_connect_retries").map(|e| e["value"].clone()),
        Some(json!("120"))
    );
    assert_eq!(
        env_value(ray, "RAY_external_storage_namespace").map(|e| e["value"].clone()),
        Some(json!("cluster-uid"))
    );

    // Round 2: the Job is running; wait.
    host.clear_writes();
    let outcome = cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), []);
    assert_eq!(outcome.requeue_after, secs(2));

    // Round 3: the Job finished; the finalizer goes.
    host.update(&job_kind(), "raycluster-sample-redis-cleanup", |j| {
        j["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
    });
    host.clear_writes();
    let outcome = cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), [Write::RemoveFinalizer(FINALIZER.into())]);
    assert_eq!(outcome.requeue_after, None);
    assert_eq!(finalizers(&host), json!([]));
}

#[test]
fn cleanup_waits_for_a_terminating_head() {
    let host = host(with_options());
    settle(&host, 4);
    let head = name(&heads(&host)[0]);
    host.update(&pod_kind(), &head, |p| {
        p["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z")
    });
    deleting(&host, 1_800_000_000);
    host.clear_writes();
    let outcome = cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.requeue_after, secs(10));
    assert!(host.objects(&job_kind()).is_empty());
    assert!(
        !deletes(&host).contains(&head),
        "a terminating Pod is not deleted again"
    );
}

#[test]
fn a_stuck_cleanup_is_abandoned_after_the_timeout() {
    let mut cluster = with_options();
    cluster["metadata"]["annotations"] = json!({"ray.io/gcs-ft-deletion-timeout": "60"});
    let host = host(cluster);
    settle(&host, 4);
    deleting(&host, 1_800_000_000);
    host.set_now(UNIX_EPOCH + Duration::from_secs(1_800_000_001));
    cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    host.set_now(UNIX_EPOCH + Duration::from_secs(1_800_000_040));
    cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.objects(&job_kind()).len(), 1);

    host.set_now(UNIX_EPOCH + Duration::from_secs(1_800_000_061));
    host.clear_writes();
    let outcome = cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), [Write::RemoveFinalizer(FINALIZER.into())]);
    assert_eq!(outcome.requeue_after, None);
    let event = host
        .events()
        .into_iter()
        .find(|e| e.reason == "ForceDeletedStuckCluster");
    assert!(event.is_some_and(|e| e.action == "Cleanup"));
}

#[test]
fn a_finalizer_without_redis_is_simply_removed() {
    let mut cluster = sample(0);
    cluster["metadata"]["finalizers"] = json!([FINALIZER]);
    let host = host(cluster);
    deleting(&host, 1_800_000_000);
    cleanup(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), [Write::RemoveFinalizer(FINALIZER.into())]);
}
