//! KubeRay's `ray-job.sample.yaml` from start to finish in the default `K8sJobMode`: the state machine, the
//! RayCluster it creates, the submitter Job, the RayJob's head Service, what the status says at each step,
//! the events, and a steady state that writes nothing.

mod common;

use common::*;
use kuberay_plugin_sdk::{serde_json::json, testing::Write};

#[test]
fn new_rayjob_is_claimed_and_names_are_recorded_before_anything_exists() {
    let host = host(sample("ray-job.sample.yaml"));
    let outcome = step(&host);
    assert_eq!(
        host.writes(),
        vec![
            Write::AddFinalizer("ray.io/rayjob-finalizer".into()),
            Write::ApplyStatus
        ]
    );
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Initializing");
    assert_eq!(s["startTime"], rfc3339(0));
    assert_eq!(
        (s["failed"].clone(), s["succeeded"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(s["observedGeneration"], 1);
    assert!(s.get("jobStatus").is_none(), "{s}");
    for name in [cluster_name(&host), job_id(&host)] {
        let suffix = name
            .strip_prefix("rayjob-sample-")
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(suffix.len(), 5);
        assert!(
            suffix.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
            "{name}"
        );
    }
    // Nothing was created under those names yet: that is the next reconcile's job.
    assert!(host.objects(&ray_cluster_kind()).is_empty());
    assert!(outcome.requeue_after.is_some());
}

#[test]
fn cluster_is_created_from_the_spec_with_kuberay_labels() {
    let mut job = sample("ray-job.sample.yaml");
    job["metadata"]["labels"] = json!({"team": "ml"});
    job["metadata"]["annotations"] = json!({"note": "x"});
    let host = host(job.clone());
    step(&host);
    host.clear_writes();
    step(&host);
    let name = cluster_name(&host);
    let cluster = get(&host, &ray_cluster_kind(), &name).expect("cluster created");
    assert_eq!(
        cluster["metadata"]["labels"],
        json!({
            "team": "ml",
            "ray.io/originated-from-cr-name": "rayjob-sample",
            "ray.io/originated-from-crd": "RayJob",
            "ray.io/job-submission-mode": "K8sJobMode",
        })
    );
    assert_eq!(cluster["metadata"]["annotations"], json!({"note": "x"}));
    assert_eq!(cluster["spec"], job["spec"]["rayClusterSpec"]);
    assert_eq!(cluster["metadata"]["ownerReferences"][0]["kind"], "RayJob");
    let created = event(&host, "CreatedRayCluster").expect("event");
    assert_eq!(created.note, format!("Created RayCluster default/{name}"));
    // Not ready yet: the RayJob waits in Initializing and shows the cluster's status.
    assert_eq!(deployment(&host), "Initializing");
    assert!(get(&host, &job_kind(), "rayjob-sample").is_none());
}

#[test]
fn ready_cluster_gets_the_submitter_job() {
    let host = host(sample("ray-job.sample.yaml"));
    run_to_running(&host);
    let cluster = cluster_name(&host);
    let id = job_id(&host);
    let dashboard = format!("{cluster}-head-svc.default.svc.cluster.local:8265");
    assert_eq!(status(&host)["dashboardURL"], dashboard);

    let submitter = get(&host, &job_kind(), "rayjob-sample").expect("submitter Job");
    let origin = json!({
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    });
    assert_eq!(submitter["metadata"]["labels"], origin);
    assert_eq!(submitter["spec"]["backoffLimit"], 2);
    let template = &submitter["spec"]["template"];
    assert_eq!(template["metadata"]["labels"], origin);
    assert_eq!(template["spec"]["restartPolicy"], "Never");
    let container = &template["spec"]["containers"][0];
    assert_eq!(container["name"], "ray-job-submitter");
    assert_eq!(container["image"], "rayproject/ray:2.52.0");
    assert_eq!(
        container["resources"],
        json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}})
    );
    assert_eq!(container["command"], json!(["/bin/bash", "-ce", "--"]));
    let address = format!("http://{dashboard}");
    let expected = format!(
        "until python -c \"import urllib.request; r=urllib.request.urlopen('{address}/api/gcs_healthz', \
         timeout=10); exit(0 if b'success' in r.read() else 1)\" >/dev/null 2>&1 ; do echo \"Waiting for Ray \
         Dashboard GCS to become healthy at {address} ...\" ; sleep 2 ; done ; if ! ray job status --address \
         {address} {id} >/dev/null 2>&1 ; then ray job submit --address {address} --no-wait --runtime-env-json \
         \"{{\\\"env_vars\\\":{{\\\"counter_name\\\":\\\"test_counter\\\"}},\\\"pip\\\":[\\\"requests==2.26.0\\\",\
         \\\"pendulum==2.1.2\\\"]}}\" --submission-id {id} -- python /home/ray/samples/sample_code.py ; fi ; \
         ray job logs --address {address} --follow {id}"
    );
    assert_eq!(container["args"], json!([expected]));
    assert_eq!(
        container["env"],
        json!([
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "RAY_DASHBOARD_ADDRESS", "value": dashboard},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": id},
        ])
    );
    let created = event(&host, "CreatedRayJobSubmitter").expect("event");
    assert_eq!(created.note, "Created Kubernetes Job default/rayjob-sample");
}

#[test]
fn submitter_config_and_custom_template() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["submitterConfig"] = json!({"backoffLimit": 5});
    job["spec"]["submitterPodTemplate"] = json!({
        "metadata": {"labels": {"mine": "yes"}},
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "my-submitter", "image": "me/submitter:1", "command": ["ray", "job", "submit", "--", "x"]}
        ]},
    });
    let host = host(job);
    run_to_running(&host);
    let submitter = get(&host, &job_kind(), "rayjob-sample").expect("submitter Job");
    assert_eq!(submitter["spec"]["backoffLimit"], 5);
    let template = &submitter["spec"]["template"];
    assert_eq!(template["metadata"]["labels"]["mine"], "yes");
    assert_eq!(
        template["metadata"]["labels"]["ray.io/originated-from-crd"],
        "RayJob"
    );
    let container = &template["spec"]["containers"][0];
    // A user's own command is kept; the environment is added all the same.
    assert_eq!(container["command"], json!(["ray", "job", "submit", "--", "x"]));
    assert!(container.get("args").is_none());
    assert_eq!(container["env"][2]["name"], "RAY_JOB_SUBMISSION_ID");
}

#[test]
fn runs_to_completion_and_then_stays_quiet() {
    let host = host(sample("ray-job.sample.yaml"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let id = job_id(&host);
    let cluster = cluster_name(&host);

    // The submitter has not submitted yet: Ray does not know the job, nothing changes.
    host.clear_writes();
    step(&host);
    assert!(!wrote_status(&host));
    let service = get(&host, &service_kind(), "rayjob-sample-head-svc").expect("RayJob head Service");
    assert_eq!(service["spec"]["selector"]["ray.io/cluster"], cluster.as_str());
    assert_eq!(
        service["metadata"]["labels"],
        json!({
            "ray.io/originated-from-cr-name": "rayjob-sample",
            "ray.io/originated-from-crd": "RayJob",
            "ray.io/node-type": "head",
            "ray.io/identifier": "rayjob-sample-head",
        })
    );
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert!(event_reasons(&host).contains(&"CreatedService".to_string()));

    // The submitter Pod submitted the job; Ray runs it.
    ray.add_job(&id, "RUNNING");
    step(&host);
    let s = status(&host);
    assert_eq!(
        (s["jobStatus"].as_str(), s["jobDeploymentStatus"].as_str()),
        (Some("RUNNING"), Some("Running"))
    );
    assert_eq!(s["message"], "Job is currently running.");
    assert_eq!(s["rayJobInfo"]["startTime"], rfc3339(0));
    assert_eq!(s["rayClusterStatus"]["state"], "ready");

    // Ray is done but the submitter is still following the logs: still Running.
    ray.set_status(&id, "SUCCEEDED", Some((T0 + 60) * 1000 + 500));
    at(&host, 61);
    step(&host);
    assert_eq!(deployment(&host), "Running");
    assert_eq!(status(&host)["jobStatus"], "SUCCEEDED");

    submitter_finished(&host, "rayjob-sample", "Complete", 62);
    at(&host, 63);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Complete");
    assert_eq!(s["endTime"], rfc3339(63));
    assert_eq!(s["rayJobInfo"]["endTime"], rfc3339(60));
    assert_eq!(
        (s["succeeded"].clone(), s["failed"].clone()),
        (json!(1), json!(0))
    );
    assert!(s.get("reason").is_none());

    // Done: nothing is deleted (no shutdown configured), nothing is written, no requeue.
    at(&host, 1000);
    host.clear_writes();
    ray.clear();
    let outcome = step(&host);
    assert_eq!(host.writes(), vec![]);
    assert_eq!(outcome.requeue_after, None);
    assert!(ray.calls().is_empty());
    assert!(get(&host, &ray_cluster_kind(), &cluster).is_some());
}

#[test]
fn steady_running_state_writes_nothing() {
    let host = host(sample("ray-job.sample.yaml"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.add_job(&job_id(&host), "RUNNING");
    settle(&host, 5);
    // The cluster controller refreshes its status timestamps: not worth a RayJob status write.
    host.update(&ray_cluster_kind(), &cluster_name(&host), |c| {
        c["status"]["lastUpdateTime"] = json!(rfc3339(30));
    });
    at(&host, 30);
    host.clear_writes();
    step(&host);
    assert_eq!(host.writes(), vec![]);
    assert!(host.events().is_empty());
}

#[test]
fn failed_submitter_fails_the_rayjob() {
    let host = host(sample("ray-job.sample.yaml"));
    FakeRay::install(&host);
    run_to_running(&host);
    submitter_finished(&host, "rayjob-sample", "Failed", 5);
    at(&host, 6);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "SubmissionFailed");
    assert_eq!(
        s["message"],
        "Job submission has failed. Reason: BackoffLimitExceeded. Message: Job has reached the specified \
         backoff limit"
    );
    assert_eq!(s["failed"], 1);
}

#[test]
fn application_failure_is_app_failed() {
    let host = host(sample("ray-job.sample.yaml"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let id = job_id(&host);
    ray.add_job(&id, "FAILED");
    ray.set_status(&id, "FAILED", Some(T0 * 1000 + 5000));
    submitter_finished(&host, "rayjob-sample", "Complete", 6);
    at(&host, 7);
    step(&host);
    let s = status(&host);
    assert_eq!(
        (s["jobStatus"].as_str(), s["jobDeploymentStatus"].as_str()),
        (Some("FAILED"), Some("Failed"))
    );
    assert_eq!(s["reason"], "AppFailed");
}

#[test]
fn submitter_done_but_no_ray_job_is_app_failed() {
    let host = host(sample("ray-job.sample.yaml"));
    FakeRay::install(&host);
    run_to_running(&host);
    submitter_finished(&host, "rayjob-sample", "Complete", 5);
    at(&host, 6);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "Failed");
    assert_eq!(s["reason"], "AppFailed");
    assert_eq!(
        s["message"],
        "Submitter completed but Ray job not found in RayCluster."
    );
}

#[test]
fn ray_job_that_never_ends_after_the_submitter_is_failed_after_30s() {
    let host = host(sample("ray-job.sample.yaml"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    ray.add_job(&job_id(&host), "RUNNING");
    submitter_finished(&host, "rayjob-sample", "Complete", 10);
    at(&host, 39);
    step(&host);
    assert_eq!(deployment(&host), "Running");
    at(&host, 40);
    step(&host);
    let s = status(&host);
    assert_eq!(
        (s["jobStatus"].as_str(), s["jobDeploymentStatus"].as_str()),
        (Some("FAILED"), Some("Failed"))
    );
    assert_eq!(s["reason"], "JobDeploymentStatusTransitionGracePeriodExceeded");
    assert_eq!(
        s["message"],
        "The RayJob submitter finished at 2027-01-15 08:00:10 but the ray job did not reach terminal state \
         within 30s"
    );
}

#[test]
fn a_job_that_ended_is_reported_as_it_ended_even_long_after_the_submitter() {
    // The operator was away for minutes: Ray's verdict wins over the submitter timeout.
    let host = host(sample("ray-job.sample.yaml"));
    let ray = FakeRay::install(&host);
    run_to_running(&host);
    let id = job_id(&host);
    ray.add_job(&id, "SUCCEEDED");
    ray.set_status(&id, "SUCCEEDED", Some((T0 + 9) * 1000));
    submitter_finished(&host, "rayjob-sample", "Complete", 10);
    at(&host, 600);
    step(&host);
    assert_eq!(deployment(&host), "Complete");
    assert_eq!(status(&host)["jobStatus"], "SUCCEEDED");
}

#[test]
fn a_restart_between_creating_the_submitter_and_recording_running_creates_nothing_twice() {
    let host = host(sample("ray-job.sample.yaml"));
    run_to_running(&host);
    let cluster = cluster_name(&host);
    // The operator died before the `Running` status reached the API server: the RayJob still says
    // Initializing, without a dashboard, but the cluster and the submitter exist.
    let mut job = host.primary();
    job["status"]["jobDeploymentStatus"] = json!("Initializing");
    job["status"].as_object_mut().map(|s| s.remove("dashboardURL"));
    host.set_primary(job);
    host.clear_writes();
    step(&host);
    assert_eq!(deployment(&host), "Running");
    assert_eq!(
        host.writes(),
        vec![Write::ApplyStatus],
        "no second cluster or submitter"
    );
    assert_eq!(host.objects(&ray_cluster_kind()).len(), 1);
    assert_eq!(cluster_name(&host), cluster);
}
