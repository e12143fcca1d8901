//! The submitter script against the vectors of KubeRay's own unit tests (`common/job_test.go`), word for
//! word: the health-check loop, the status check that makes K8sJobMode retries safe, and the quoting.

use kuberay_crds::{JobSubmissionMode, RayJob};
use kuberay_plugin_rayjob::submitter::command;
use kuberay_plugin_sdk::serde_json::{self, Value, json};

/// KubeRay's `rayJobTemplate()`.
fn template(extra_cluster: Value) -> RayJob {
    let mut cluster = json!({"rayVersion": "2.6.0", "headGroupSpec": {"template": {}}});
    for (k, v) in extra_cluster.as_object().into_iter().flatten() {
        cluster[k] = v.clone();
    }
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "test"},
        "spec": {
            "runtimeEnvYAML": "test: test",
            "metadata": {"testKey": "testValue"},
            "rayClusterSpec": cluster,
            "entrypoint": "echo no quote 'single quote' \"double quote\"",
            "entrypointNumCpus": 1,
            "entrypointNumGpus": 0.5,
            "entrypointResources": r#"{"Custom_1": 1, "Custom_2": 5.5}"#,
        },
        "status": {"dashboardURL": "http://127.0.0.1:8265", "jobId": "testJobId"},
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn build(job: &RayJob, mode: JobSubmissionMode) -> Result<Vec<String>, String> {
    command::build(
        job,
        job.status.as_ref().unwrap_or(&Default::default()),
        &mode,
        false,
    )
}

fn health(url: &str) -> String {
    format!(
        "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout=10); exit(0 if b'success' \
         in r.read() else 1)\""
    )
}

fn words(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// KubeRay's script for a submitter that may run again (K8sJobMode, or SidecarMode with
/// `SidecarSubmitterRestart`), with the health check `health`: check `ray job status`, submit `--no-wait`,
/// follow the logs.
fn status_checked_script(health: &str) -> Vec<String> {
    words(&[
        "until",
        health,
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        "\"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ...\"",
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
        "if",
        "!",
        "ray",
        "job",
        "status",
        "--address",
        "http://127.0.0.1:8265",
        "testJobId",
        ">/dev/null",
        "2>&1",
        ";",
        "then",
        "ray",
        "job",
        "submit",
        "--address",
        "http://127.0.0.1:8265",
        "--no-wait",
        "--runtime-env-json",
        r#""{\"test\":\"test\"}""#,
        "--metadata-json",
        r#""{\"testKey\":\"testValue\"}""#,
        "--submission-id",
        "testJobId",
        "--entrypoint-num-cpus",
        "1.000000",
        "--entrypoint-num-gpus",
        "0.500000",
        "--entrypoint-resources",
        r#""{\"Custom_1\": 1, \"Custom_2\": 5.5}""#,
        "--",
        "echo no quote 'single quote' \"double quote\"",
        ";",
        "fi",
        ";",
        "ray",
        "job",
        "logs",
        "--address",
        "http://127.0.0.1:8265",
        "--follow",
        "testJobId",
    ])
}

#[test]
fn k8s_job_mode_matches_kuberay() {
    let job = template(json!({}));
    let expected = status_checked_script(&health("http://127.0.0.1:8265/api/gcs_healthz"));
    assert_eq!(build(&job, JobSubmissionMode::K8sJobMode), Ok(expected));
}

#[test]
fn sidecar_mode_matches_kuberay() {
    let job = template(json!({"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "ray-head", "ports": [{"name": "dashboard", "containerPort": 8265}]}
    ]}}}}));
    let health = health("http://localhost:8265/api/gcs_healthz");
    let expected = words(&[
        "until",
        &health,
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        "\"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ...\"",
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
        "ray",
        "job",
        "submit",
        "--address",
        "http://127.0.0.1:8265",
        "--runtime-env-json",
        r#""{\"test\":\"test\"}""#,
        "--metadata-json",
        r#""{\"testKey\":\"testValue\"}""#,
        "--submission-id",
        "testJobId",
        "--entrypoint-num-cpus",
        "1.000000",
        "--entrypoint-num-gpus",
        "0.500000",
        "--entrypoint-resources",
        r#""{\"Custom_1\": 1, \"Custom_2\": 5.5}""#,
        "--",
        "echo no quote 'single quote' \"double quote\"",
        ";",
    ]);
    assert_eq!(build(&job, JobSubmissionMode::SidecarMode), Ok(expected));
}

/// KubeRay's `TestBuildJobSubmitCommandWithSidecarModeAndFeatureGate`: with `SidecarSubmitterRestart`, a
/// restarted sidecar submitter checks for its earlier submission and follows its logs, as K8sJobMode does.
#[test]
fn a_restarting_sidecar_checks_for_its_earlier_submission_as_kuberay_does() {
    let job = template(json!({"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "ray-head", "ports": [{"name": "dashboard", "containerPort": 8265}]}
    ]}}}}));
    let expected = status_checked_script(&health("http://localhost:8265/api/gcs_healthz"));
    let status = job.status.clone().unwrap_or_default();
    let restarting = command::build(&job, &status, &JobSubmissionMode::SidecarMode, true);
    assert_eq!(restarting, Ok(expected));
    // The gate is about the sidecar: K8sJobMode's script is the same either way.
    assert_eq!(
        command::build(&job, &status, &JobSubmissionMode::K8sJobMode, true),
        build(&job, JobSubmissionMode::K8sJobMode)
    );
}

#[test]
fn sidecar_mode_uses_a_custom_dashboard_port() {
    let job = template(json!({"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "ray-head", "ports": [{"name": "dashboard", "containerPort": 9000}]}
    ]}}}}));
    let cmd = build(&job, JobSubmissionMode::SidecarMode).unwrap_or_default();
    assert!(cmd[1].contains("localhost:9000/api/gcs_healthz"), "{}", cmd[1]);
    assert!(cmd.contains(&"http://127.0.0.1:9000".to_string()));
}

#[test]
fn metadata_needs_ray_2_6() {
    let job = template(json!({"rayVersion": "2.5.0"}));
    assert_eq!(
        build(&job, JobSubmissionMode::K8sJobMode),
        Err("the Ray version must be at least 2.6.0 to use the metadata field".into())
    );
    let job = template(json!({"rayVersion": "not-a-version"}));
    assert!(build(&job, JobSubmissionMode::K8sJobMode).is_err());
    let job = template(json!({"rayVersion": ""}));
    assert!(build(&job, JobSubmissionMode::K8sJobMode).is_ok());
}

#[test]
fn dashboard_urls_get_a_scheme() {
    let mut job = template(json!({}));
    if let Some(status) = job.status.as_mut() {
        status.dashboard_url = Some("c-head-svc.ns.svc.cluster.local:8265".into());
    }
    let cmd = build(&job, JobSubmissionMode::K8sJobMode).unwrap_or_default();
    assert!(cmd.contains(&"http://c-head-svc.ns.svc.cluster.local:8265".to_string()));
}

#[test]
fn only_submitters_have_a_script() {
    let job = template(json!({}));
    assert_eq!(
        build(&job, JobSubmissionMode::HttpMode),
        Err("unsupported submission mode for job submit command: HTTPMode".into())
    );
}
