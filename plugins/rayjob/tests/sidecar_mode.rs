//! `SidecarMode`: the submitter is a container of the head Pod, which must never restart; its exit code and
//! the head Pod's existence decide failures.

mod common;

use common::*;
use kuberay_plugin_sdk::{
    serde_json::{Value, json},
    testing::FakeHost,
};

fn head_pod(host: &FakeHost, cluster: &str, submitter_state: Value) {
    host.insert(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{cluster}-head-abcde"), "namespace": NS,
            "labels": {"ray.io/cluster": cluster, "ray.io/node-type": "head"}},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "ray-head", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
             "state": {"running": {}}},
            {"name": "ray-job-submitter", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
             "state": submitter_state},
        ]},
    }));
}

#[test]
fn the_head_pod_carries_the_submitter() {
    let host = host(sample("ray-job.sidecar-mode.yaml"));
    step(&host);
    step(&host);
    let name = cluster_name(&host);
    let id = job_id(&host);
    let cluster = get(&host, &ray_cluster_kind(), &name).expect("cluster");
    assert_eq!(
        cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"],
        "true"
    );
    assert_eq!(
        cluster["metadata"]["labels"]["ray.io/job-submission-mode"],
        "SidecarMode"
    );
    let pod = &cluster["spec"]["headGroupSpec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 2);
    let sidecar = &containers[1];
    assert_eq!(sidecar["name"], "ray-job-submitter");
    assert_eq!(sidecar["image"], "rayproject/ray:2.52.0");
    assert_eq!(sidecar["command"], json!(["/bin/bash", "-ce", "--"]));
    let expected = format!(
        "until python -c \"import urllib.request; r=urllib.request.urlopen('http://localhost:8265/api/gcs_healthz', \
         timeout=10); exit(0 if b'success' in r.read() else 1)\" >/dev/null 2>&1 ; do echo \"Waiting for Ray \
         Dashboard GCS to become healthy at http://127.0.0.1:8265 ...\" ; sleep 2 ; done ; ray job submit \
         --address http://127.0.0.1:8265 --runtime-env-json \"{{\\\"env_vars\\\":{{\\\"counter_name\\\":\
         \\\"test_counter\\\"}},\\\"pip\\\":[\\\"requests==2.26.0\\\",\\\"pendulum==2.1.2\\\"]}}\" \
         --submission-id {id} -- python /home/ray/samples/sample_code.py ;"
    );
    assert_eq!(sidecar["args"], json!([expected]));
    // The cluster is built before the dashboard is known, as in KubeRay.
    assert_eq!(
        sidecar["env"][1],
        json!({"name": "RAY_DASHBOARD_ADDRESS", "value": ""})
    );
    assert_eq!(
        sidecar["env"][2],
        json!({"name": "RAY_JOB_SUBMISSION_ID", "value": id})
    );
}

#[test]
fn a_failed_submitter_container_fails_the_rayjob() {
    let host = host(sample("ray-job.sidecar-mode.yaml"));
    FakeRay::install(&host);
    run_to_running(&host);
    assert!(
        get(&host, &job_kind(), "rayjob-sidecar-mode").is_none(),
        "no submitter Job"
    );
    let cluster = cluster_name(&host);
    head_pod(&host, &cluster, json!({"running": {}}));
    step(&host);
    assert_eq!(deployment(&host), "Running");

    host.update(&pod_kind(), &format!("{cluster}-head-abcde"), |p| {
        p["status"]["containerStatuses"][1]["state"] =
            json!({"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": rfc3339(5)}});
    });
    at(&host, 6);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "SubmissionFailed");
    assert_eq!(
        s["message"],
        "Ray head pod container ray-job-submitter terminated with exit code 1: Error"
    );
}

#[test]
fn a_lost_head_pod_fails_the_rayjob() {
    let host = host(sample("ray-job.sidecar-mode.yaml"));
    FakeRay::install(&host);
    run_to_running(&host);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "AppFailed");
    assert_eq!(s["message"], "Ray head pod not found.");
}

#[test]
fn the_job_completes_once_the_submitter_exits() {
    let host = host(sample("ray-job.sidecar-mode.yaml"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let (cluster, id) = (cluster_name(&host), job_id(&host));
    head_pod(&host, &cluster, json!({"running": {}}));
    ray.add_job(&id, "SUCCEEDED");
    ray.set_status(&id, "SUCCEEDED", Some((T0 + 4) * 1000));
    step(&host);
    assert_eq!(deployment(&host), "Running", "the submitter is still running");
    host.update(&pod_kind(), &format!("{cluster}-head-abcde"), |p| {
        p["status"]["containerStatuses"][1]["state"] =
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": rfc3339(5)}});
    });
    at(&host, 6);
    step(&host);
    assert_eq!(deployment(&host), "Complete");
}

#[test]
fn sidecar_rules() {
    let cases = [
        (
            json!({"submitterConfig": {"backoffLimit": 1}}),
            "Currently, SidecarMode doesn't support SubmitterConfig",
        ),
        (
            json!({"submitterPodTemplate": {"spec": {"containers": []}}}),
            "Currently, SidecarMode doesn't support SubmitterPodTemplate",
        ),
    ];
    for (extra, message) in cases {
        let mut job = sample("ray-job.sidecar-mode.yaml");
        for (k, v) in extra.as_object().into_iter().flatten() {
            job["spec"][k] = v.clone();
        }
        let host = host(job);
        step(&host);
        assert_eq!(status(&host)["message"], message);
    }
    let mut job = sample("ray-job.sidecar-mode.yaml");
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let host = host(job);
    step(&host);
    assert_eq!(
        status(&host)["message"],
        "restartPolicy for head Pod should be Never or unset when using SidecarMode"
    );
}

/// The sidecar sample's RayJob with KubeRay's `SidecarSubmitterRestart` gate on.
fn restarting_host() -> FakeHost {
    let host = host(sample("ray-job.sidecar-mode.yaml"));
    let mut config = kuberay_plugin_sdk::Host::config(&host);
    config.insert("featureGates".into(), json!({"SidecarSubmitterRestart": true}));
    host.with_config(Value::Object(config))
}

/// With `SidecarSubmitterRestart`, the submitter container restarts on its own on failure and its script
/// checks for the earlier submission (KubeRay v1.7's `getSubmitterContainer`); the head Pod still never
/// restarts.
#[test]
fn with_the_gate_the_submitter_restarts_on_failure_and_checks_before_submitting() {
    let host = restarting_host();
    step(&host);
    step(&host);
    let cluster = get(&host, &ray_cluster_kind(), &cluster_name(&host)).expect("cluster");
    let pod = &cluster["spec"]["headGroupSpec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let sidecar = &pod["containers"][1];
    assert_eq!(sidecar["name"], "ray-job-submitter");
    assert_eq!(sidecar["restartPolicy"], "OnFailure");
    let script = sidecar["args"][0].as_str().expect("script");
    let id = job_id(&host);
    assert!(
        script.contains(&format!(
            "if ! ray job status --address http://127.0.0.1:8265 {id} >/dev/null 2>&1 ; then ray job submit"
        )),
        "{script}"
    );
    assert!(
        script.ends_with(&format!(
            "; fi ; ray job logs --address http://127.0.0.1:8265 --follow {id}"
        )),
        "{script}"
    );
    // Without the gate the container has no restart policy of its own.
    let plain = common::host(sample("ray-job.sidecar-mode.yaml"));
    step(&plain);
    step(&plain);
    let cluster = get(&plain, &ray_cluster_kind(), &cluster_name(&plain)).expect("cluster");
    assert_eq!(
        cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][1].get("restartPolicy"),
        None
    );
}

/// With `SidecarSubmitterRestart`, a failed submitter is transient until it has restarted KubeRay's 2
/// times (`checkIsRestartCountExceeded`); then the RayJob fails with KubeRay's message.
#[test]
fn with_the_gate_a_failing_submitter_fails_the_rayjob_only_after_its_restarts() {
    let host = restarting_host();
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let (cluster, id) = (cluster_name(&host), job_id(&host));
    head_pod(&host, &cluster, json!({"running": {}}));
    ray.add_job(&id, "RUNNING");
    let pod = format!("{cluster}-head-abcde");
    let failed = json!({"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": rfc3339(5)}});
    // The first failure, not restarted yet, and the first restart: still running.
    host.update(&pod_kind(), &pod, |p| {
        p["status"]["containerStatuses"][1]["state"] = failed.clone();
    });
    at(&host, 6);
    step(&host);
    assert_eq!(deployment(&host), "Running");
    host.update(&pod_kind(), &pod, |p| {
        let submitter = &mut p["status"]["containerStatuses"][1];
        submitter["restartCount"] = json!(1);
        submitter["lastState"] = failed.clone();
        submitter["state"] = json!({"running": {}});
    });
    step(&host);
    assert_eq!(deployment(&host), "Running");
    // The second restart uses up the budget.
    host.update(&pod_kind(), &pod, |p| {
        p["status"]["containerStatuses"][1]["restartCount"] = json!(2);
    });
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "SubmissionFailed");
    assert_eq!(
        s["message"],
        "Ray head pod submitter container ray-job-submitter terminated after exceeding the maximum restart count"
    );
}

/// With `SidecarSubmitterRestart`, a submitter that failed before but has now exited successfully completes
/// the RayJob, however often it restarted.
#[test]
fn with_the_gate_a_submitter_that_succeeds_after_restarts_completes_the_rayjob() {
    let host = restarting_host();
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let (cluster, id) = (cluster_name(&host), job_id(&host));
    head_pod(&host, &cluster, json!({"running": {}}));
    ray.add_job(&id, "SUCCEEDED");
    ray.set_status(&id, "SUCCEEDED", Some((T0 + 4) * 1000));
    host.update(&pod_kind(), &format!("{cluster}-head-abcde"), |p| {
        let submitter = &mut p["status"]["containerStatuses"][1];
        submitter["restartCount"] = json!(3);
        submitter["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error"}});
        submitter["state"] =
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": rfc3339(5)}});
    });
    at(&host, 6);
    step(&host);
    assert_eq!(deployment(&host), "Complete");
}
