//! The RayJob plugin on the real control plane: KubeRay's RayJob samples on real Ray heads (directly, and
//! through the API server's proxy from where Pods are unreachable), K8sJobMode submitters really running
//! `ray job submit` against real heads, and, on fake heads, a failing job, a
//! deleted running job, an operator killed mid-submission, deadlines, retries, suspend and resume,
//! clusterSelector, InteractiveMode and a RayJob that deletes itself.

use std::{path::Path, process::Stdio, time::Duration};

use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, Patch, PatchParams},
};
use kuberay_testenv::{TestEnv, TestNamespace, annotations, proxy_http::ProxyHttp};
use serde_json::{Value, json};

use crate::isolated::{IsolatedOperator, never_direct, succeeded_on};
use crate::support::{
    OperatorOptions, apply, env, eventually, namespace, plugins_dir_with, ray_api, rayclusters,
    ready_cluster, real_ray_namespace, sample, start_operator, status_of,
};

/// A finalizer only the tests set and remove.
const TEST_HOLD: &str = "kuberay-wasm-tests/hold";

fn rayjobs(client: &Client, ns: &TestNamespace) -> Api<DynamicObject> {
    ray_api(client, ns, "RayJob", "rayjobs")
}

/// Waits until the RayJob's deployment status is `wanted` and returns its status.
async fn deployment(api: &Api<DynamicObject>, name: &str, wanted: &str, timeout: Duration) -> Value {
    eventually(&format!("RayJob {name} to be {wanted}"), timeout, || async {
        let status = status_of(api, name).await?;
        (status["jobDeploymentStatus"] == wanted).then_some(status)
    })
    .await
}

fn small_cluster(head_annotations: Value) -> Value {
    json!({
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {
            "metadata": {"annotations": head_annotations},
            "spec": {"containers": [{
                "name": "ray-head", "image": "rayproject/ray:2.52.0",
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                "ports": [{"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265}],
            }]},
        }},
    })
}

fn http_job(name: &str, entrypoint: &str, extra: Value) -> Value {
    let mut job = json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
        "spec": {"submissionMode": "HTTPMode", "entrypoint": entrypoint, "rayClusterSpec": small_cluster(json!({}))},
    });
    if let (Some(spec), Some(extra)) = (job["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    job
}

/// Waits until the object `name` no longer exists.
async fn gone(api: &Api<DynamicObject>, name: &str, what: impl AsRef<str>, timeout: Duration) {
    eventually(what.as_ref(), timeout, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

/// The dashboard of the RayJob's cluster, through the API server.
async fn dashboard(client: &Client, ns: &TestNamespace, cluster: &str) -> ProxyHttp {
    let name = format!("{cluster}-head-svc");
    ProxyHttp::service(client.clone(), ns.name(), &name, "dashboard")
}

/// KubeRay's RayJob samples, run in HTTPMode with their code in a file the real head can read: the sample
/// code without the pip packages it would download (the head has no route to PyPI).
fn adapted_samples(dir: &Path) -> Vec<(Value, Vec<&'static str>)> {
    let mut jobs = Vec::new();
    for file in [
        "ray-job.sample.yaml",
        "ray-job.shutdown.yaml",
        "ray-job.resources.yaml",
    ] {
        let text = std::fs::read_to_string(sample(file)).unwrap();
        let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .filter(|v: &Value| !v.is_null())
            .collect();
        let code = docs
            .iter()
            .find_map(|d| d.pointer("/data/sample_code.py").and_then(Value::as_str))
            .expect("the sample's code ConfigMap");
        let mut expected_log = vec![FINISHED];
        if code.contains("get_counter") {
            expected_log.push("test_counter got 5");
        }
        let mut code: String = code
            .lines()
            .filter(|l| !l.contains("requests"))
            .map(|l| format!("{l}\n"))
            .collect();
        code.push_str(&format!("print({FINISHED:?})\n"));
        let stem = file.trim_end_matches(".yaml");
        let script = dir.join(format!("{stem}.py"));
        std::fs::write(&script, code).unwrap();
        let mut job = docs.into_iter().find(|d| d["kind"] == "RayJob").unwrap();
        // Two of the samples share a name; each runs here under its own.
        job["metadata"]["name"] = json!(stem.replace("ray-job.", "rayjob-"));
        job["spec"]["submissionMode"] = json!("HTTPMode");
        job["spec"]["entrypoint"] = json!(format!("python {}", script.display()));
        job["spec"]["runtimeEnvYAML"] = json!("env_vars:\n  counter_name: \"test_counter\"\n");
        jobs.push((job, expected_log));
    }
    jobs
}

/// Printed by every adapted sample after its own code ran (the resources sample prints nothing itself).
const FINISHED: &str = "sample code finished";

/// Applies the adapted samples, waits for each to complete and checks what it ran. The samples are followed
/// at once, so that one's TTL does not run out while another is being checked.
async fn run_samples(client: &Client, ns: &TestNamespace) {
    let dir = std::env::temp_dir().join(format!("kuberay-wasm-rayjob-{}", ns.name()));
    std::fs::create_dir_all(&dir).unwrap();
    let api = rayjobs(client, ns);
    let jobs = adapted_samples(&dir);
    for (job, _) in &jobs {
        apply(&api, job).await;
    }
    futures::future::join_all(
        jobs.iter()
            .map(|(job, expected_log)| check_sample(client, ns, &api, job, expected_log)),
    )
    .await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Waits for the sample `job` to complete and checks what it ran.
async fn check_sample(
    client: &Client,
    ns: &TestNamespace,
    api: &Api<DynamicObject>,
    job: &Value,
    expected_log: &[&str],
) {
    let name = job["metadata"]["name"].as_str().unwrap();
    let status = deployment(api, name, "Complete", Duration::from_secs(300)).await;
    assert_eq!(status["jobStatus"], "SUCCEEDED", "{name}: {status}");
    let cluster = status["rayClusterName"].as_str().unwrap().to_string();
    assert!(
        cluster.starts_with(&format!("{name}-")) && cluster.len() == name.len() + 6,
        "{cluster}"
    );
    assert!(
        status["startTime"].is_string() && status["endTime"].is_string(),
        "{status}"
    );
    assert_eq!(status["succeeded"], 1);
    if job["spec"]["shutdownAfterJobFinishes"] == true {
        // Kept for the TTL (10 s in the sample) after the end, then deleted.
        assert!(
            rayclusters(client, ns).get_opt(&cluster).await.unwrap().is_some(),
            "{name}'s cluster was deleted before its TTL"
        );
        gone(
            &rayclusters(client, ns),
            &cluster,
            format!("{name}'s cluster to be deleted after the TTL"),
            Duration::from_secs(60),
        )
        .await;
    } else {
        let job_id = status["jobId"].as_str().unwrap();
        // The driver's output reaches the job log shortly after the job ends.
        let head = dashboard(client, ns, &cluster).await;
        eventually(
            &format!("{name}'s log to show {expected_log:?}"),
            Duration::from_secs(60),
            || async {
                let logs = head.get(&format!("/api/jobs/{job_id}/logs")).await.ok()?;
                expected_log.iter().all(|l| logs.body.contains(l)).then_some(())
            },
        )
        .await;
    }
}

#[tokio::test]
async fn kuberay_rayjob_samples_complete_on_real_ray_heads_directly() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let (ns, _turn) = real_ray_namespace(env, "rayjob-real").await;
    let operator = rayjob_operator(env, &ns).await;
    run_samples(&client, &ns).await;
    assert!(
        operator.metric(
            "kuberay_wasm_ray_requests_total",
            &["route=\"direct-service\"", "outcome=\"ok\""]
        ) > 0.0
    );
    operator.stop().await;
}

#[tokio::test]
async fn kuberay_rayjob_samples_complete_through_the_api_server_proxy_only() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let (ns, _turn) = real_ray_namespace(env, "rayjob-proxy").await;
    // The operator runs where no Pod address is reachable; only the API server is.
    let plugins = [
        kuberay_plugin_artifacts::RAYCLUSTER,
        kuberay_plugin_artifacts::RAYJOB,
    ];
    let operator = IsolatedOperator::start(env, ns.name(), &plugins, true, 18180);
    run_samples(&client, &ns).await;
    let ray = operator.ray_requests().await;
    assert!(succeeded_on(&ray, "proxy-service"), "{ray:?}");
    assert!(never_direct(&ray), "a direct connection was attempted: {ray:?}");
    operator.stop().await;
}

/// A RayJob in KubeRay's default `K8sJobMode`: a submitter Job runs KubeRay's script (`ray job submit`, then
/// `ray job logs --follow`) in a Pod of the Ray image, which the test environment runs for real in the Pod's
/// network against the head's Service name.
fn submitter_job(name: &str, entrypoint: &str) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
        "spec": {"entrypoint": entrypoint, "rayClusterSpec": small_cluster(json!({})),
                 "runtimeEnvYAML": "env_vars:\n  GREETING: from-the-runtime-env\n"},
    })
}

/// The output of the submitter Pod of `job` (its single container).
async fn submitter_log(env: &TestEnv, client: &Client, ns: &TestNamespace, job: &str) -> String {
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), ns.name());
    let list = pods
        .list(&kube::api::ListParams::default().labels(&format!("job-name={job}")))
        .await
        .unwrap();
    let pod = list.items.first().expect("the submitter Job's Pod");
    let name = pod.metadata.name.clone().unwrap();
    let container = pod.spec.as_ref().unwrap().containers[0].name.clone();
    std::fs::read_to_string(env.container_log(ns.name(), &name, &container)).unwrap_or_default()
}

#[tokio::test]
async fn k8s_job_mode_submitters_run_ray_job_submit_against_real_heads() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let (ns, _turn) = real_ray_namespace(env, "rayjob-submitter").await;
    let operator = rayjob_operator(env, &ns).await;
    let api = rayjobs(&client, &ns);
    let greet = "python -c \"import os; print('job says', os.environ['GREETING'])\"";
    apply(&api, &submitter_job("greets", greet)).await;
    apply(
        &api,
        &submitter_job("exits", "python -c \"import sys; sys.exit(3)\""),
    )
    .await;
    // KubeRay's light-weight submitter (its `ray-job.light-weight-submitter.yaml` sample's template, without
    // the pip packages): the Go `/submitter` posts the job and tails its logs over a WebSocket.
    let dir = std::env::temp_dir().join(format!("kuberay-wasm-rayjob-{}", ns.name()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("light.py");
    std::fs::write(
        &script,
        "import os\nprint('light says', os.environ['GREETING'])\n",
    )
    .unwrap();
    let mut light = submitter_job("light", "");
    light["spec"]["submitterPodTemplate"] = json!({"spec": {"restartPolicy": "Never", "containers": [{
        "name": "my-custom-rayjob-submitter",
        "image": "quay.io/kuberay/submitter:v1.5.1",
        "command": ["/submitter"],
        "args": ["--runtime-env-json", "{\"env_vars\":{\"GREETING\":\"light\"}}", "--",
                 "python", script.display().to_string()],
    }]}});
    apply(&api, &light).await;

    let ok = deployment(&api, "greets", "Complete", Duration::from_secs(300)).await;
    assert_eq!(ok["jobStatus"], "SUCCEEDED", "{ok}");
    // The submitter Pod ran `ray job submit` and followed the job's logs to its end.
    let job_id = ok["jobId"].as_str().unwrap().to_string();
    let log = submitter_log(env, &client, &ns, "greets").await;
    assert!(
        log.contains(&format!("Job '{job_id}' submitted successfully")),
        "{log}"
    );
    assert!(log.contains("job says from-the-runtime-env"), "{log}");
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client.clone(), ns.name());
    let submitter = jobs.get("greets").await.unwrap();
    assert_eq!(submitter.status.and_then(|s| s.succeeded), Some(1));

    let failed = deployment(&api, "exits", "Failed", Duration::from_secs(300)).await;
    assert_eq!(failed["jobStatus"], "FAILED", "{failed}");
    assert_eq!(failed["reason"], "AppFailed", "{failed}");
    let log = submitter_log(env, &client, &ns, "exits").await;
    assert!(log.contains("submitted successfully"), "{log}");

    let light = deployment(&api, "light", "Complete", Duration::from_secs(300)).await;
    assert_eq!(light["jobStatus"], "SUCCEEDED", "{light}");
    let log = submitter_log(env, &client, &ns, "light").await;
    assert!(log.contains("SUCC -- Job"), "{log}");
    assert!(log.contains("light says light"), "{log}");
    let _ = std::fs::remove_dir_all(dir);
    operator.stop().await;
}

/// The operator with the RayCluster and RayJob plugins, watching `ns`.
async fn rayjob_operator(env: &TestEnv, ns: &TestNamespace) -> crate::support::Operator {
    let options = OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::RAYJOB,
        ],
        ..OperatorOptions::default()
    };
    start_operator(env, ns, options).await
}

async fn fake_operator(env: &TestEnv, prefix: &str) -> (Client, TestNamespace, crate::support::Operator) {
    let client = env.client().await.unwrap();
    let ns = namespace(env, prefix).await;
    let operator = rayjob_operator(env, &ns).await;
    (client, ns, operator)
}

#[tokio::test]
async fn a_failing_job_fails_with_app_failed() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-fail").await;
    let api = rayjobs(&client, &ns);
    apply(
        &api,
        &http_job("fails", "python -c \"import sys; sys.exit(3)\"", json!({})),
    )
    .await;
    let status = deployment(&api, "fails", "Failed", Duration::from_secs(120)).await;
    assert_eq!(status["jobStatus"], "FAILED");
    assert_eq!(status["reason"], "AppFailed");
    assert_eq!(status["failed"], 1);
    operator.stop().await;
}

#[tokio::test]
async fn deleting_a_running_rayjob_stops_its_ray_job() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-delete").await;
    let api = rayjobs(&client, &ns);
    apply(&api, &http_job("long", "sleep 300", json!({}))).await;
    let status = eventually("the Ray job to run", Duration::from_secs(120), || async {
        let status = status_of(&api, "long").await?;
        (status["jobStatus"] == "RUNNING").then_some(status)
    })
    .await;
    let (cluster, job_id) = (
        status["rayClusterName"].as_str().unwrap().to_string(),
        status["jobId"].as_str().unwrap().to_string(),
    );
    let head = dashboard(&client, &ns, &cluster).await;
    // The cluster is garbage-collected right after the RayJob goes; a finalizer of the test's own keeps it
    // (and its head) until the test has looked at the job.
    let hold = json!({"metadata": {"finalizers": [TEST_HOLD]}});
    rayclusters(&client, &ns)
        .patch(&cluster, &PatchParams::default(), &Patch::Merge(hold))
        .await
        .unwrap();
    api.delete("long", &DeleteParams::default()).await.unwrap();
    gone(&api, "long", "the RayJob to be gone", Duration::from_secs(60)).await;
    let details: Value = head
        .get(&format!("/api/jobs/{job_id}"))
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(details["status"], "STOPPED", "{details}");
    assert_eq!(details["message"], "Job was intentionally stopped.");
    let release = json!({"metadata": {"finalizers": null}});
    rayclusters(&client, &ns)
        .patch(&cluster, &PatchParams::default(), &Patch::Merge(release))
        .await
        .unwrap();
    operator.stop().await;
}

#[tokio::test]
async fn an_operator_killed_mid_submission_submits_the_job_once() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "rayjob-kill").await;
    let plugins = plugins_dir_with(&[
        kuberay_plugin_artifacts::RAYCLUSTER,
        kuberay_plugin_artifacts::RAYJOB,
    ]);
    let start = || {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
            .arg("operator")
            .arg("--plugins")
            .arg(&plugins)
            .arg("--kubeconfig")
            .arg(env.kubeconfig())
            .args(["--watch-namespace", ns.name(), "--plugin-reload-interval", "0"])
            // The control plane is shared: another test's ReconcilePlugin resources are not this operator's.
            .arg("--plugin-resources=false")
            .args([
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
            ])
            .arg("--cache-dir")
            .arg(crate::support::shared_cache_dir())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    let api = rayjobs(&client, &ns);
    // The head takes 10 s to answer a submission (it records the job first).
    let mut job = http_job("once", "echo once", json!({}));
    job["spec"]["rayClusterSpec"] = small_cluster(json!({annotations::FAKE_SUBMIT_DELAY: "10"}));
    apply(&api, &job).await;
    let mut first = start();
    let status = eventually(
        "the RayJob to name its cluster and job",
        Duration::from_secs(120),
        || async {
            let status = status_of(&api, "once").await?;
            (status["jobId"].is_string() && status["rayClusterName"].is_string()).then_some(status)
        },
    )
    .await;
    let (cluster, job_id) = (
        status["rayClusterName"].as_str().unwrap().to_string(),
        status["jobId"].as_str().unwrap().to_string(),
    );
    let head = dashboard(&client, &ns, &cluster).await;
    let attempts = || async {
        let counts = head.get("/testenv/submissions").await.ok()?.json().ok()?;
        counts.get(&job_id).and_then(Value::as_u64)
    };
    // The submission has reached the head and is waiting for its answer: kill the operator now.
    eventually(
        "the submission to reach the head",
        Duration::from_secs(120),
        || async { attempts().await },
    )
    .await;
    first.kill().await.unwrap();
    let _ = first.wait().await;
    assert_ne!(
        status_of(&api, "once").await.unwrap()["jobDeploymentStatus"],
        "Complete"
    );

    let mut second = start();
    let done = deployment(&api, "once", "Complete", Duration::from_secs(120)).await;
    assert_eq!(done["jobStatus"], "SUCCEEDED");
    assert_eq!(attempts().await, Some(1), "the job was submitted more than once");
    let listed: Value = head.get("/api/jobs/").await.unwrap().json().unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["submission_id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [job_id.as_str()],
        "the head runs exactly the job the RayJob names"
    );
    second.kill().await.unwrap();
    let _ = second.wait().await;
    let _ = std::fs::remove_dir_all(plugins);
}

#[tokio::test]
async fn the_active_deadline_fails_a_running_job() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-deadline").await;
    let api = rayjobs(&client, &ns);
    apply(
        &api,
        &http_job("slow", "sleep 300", json!({"activeDeadlineSeconds": 8})),
    )
    .await;
    let status = deployment(&api, "slow", "Failed", Duration::from_secs(120)).await;
    assert_eq!(status["reason"], "DeadlineExceeded");
    operator.stop().await;
}

#[tokio::test]
async fn a_failed_job_is_retried_on_a_new_cluster_up_to_the_backoff_limit() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-retry").await;
    let api = rayjobs(&client, &ns);
    apply(&api, &http_job("flaky", "exit 1", json!({"backoffLimit": 1}))).await;
    let clusters = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let status = eventually("the retries to be used up", Duration::from_secs(240), || async {
        let status = status_of(&api, "flaky").await?;
        if let Some(cluster) = status["rayClusterName"].as_str().filter(|c| !c.is_empty()) {
            clusters.lock().unwrap().insert(cluster.to_string());
        }
        (status["jobDeploymentStatus"] == "Failed" && status["failed"] == 2).then_some(status)
    })
    .await;
    let clusters = clusters.into_inner().unwrap();
    assert_eq!(status["reason"], "AppFailed");
    assert_eq!(
        clusters.len(),
        2,
        "each attempt runs on a new cluster: {clusters:?}"
    );
    operator.stop().await;
}

#[tokio::test]
async fn a_suspended_rayjob_releases_its_cluster_and_runs_again_when_resumed() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-suspend").await;
    let api = rayjobs(&client, &ns);
    let job = http_job("pausable", "sleep 15", json!({"shutdownAfterJobFinishes": true}));
    apply(&api, &job).await;
    let running = eventually("the job to run", Duration::from_secs(120), || async {
        let status = status_of(&api, "pausable").await?;
        (status["jobStatus"] == "RUNNING").then_some(status)
    })
    .await;
    let first_cluster = running["rayClusterName"].as_str().unwrap().to_string();
    api.patch(
        "pausable",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": true}})),
    )
    .await
    .unwrap();
    // Reset to Go's empty structs as KubeRay writes them, although server-side apply cannot write `{}` over
    // the filled objects in one step (the plugin drops them first, then writes them empty).
    assert!(running["rayJobInfo"]["startTime"].is_string(), "{running}");
    eventually(
        "RayJob pausable to be Suspended with empty job info",
        Duration::from_secs(120),
        || async {
            let status = status_of(&api, "pausable").await?;
            (status["jobDeploymentStatus"] == "Suspended"
                && status["rayJobInfo"] == json!({})
                && status["rayClusterStatus"]["head"] == json!({}))
            .then_some(())
        },
    )
    .await;
    gone(
        &rayclusters(&client, &ns),
        &first_cluster,
        "the cluster to be deleted",
        Duration::from_secs(60),
    )
    .await;
    api.patch(
        "pausable",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .unwrap();
    let done = deployment(&api, "pausable", "Complete", Duration::from_secs(180)).await;
    assert_eq!(done["jobStatus"], "SUCCEEDED");
    assert_ne!(
        done["rayClusterName"],
        first_cluster.as_str(),
        "resumed on a new cluster"
    );
    operator.stop().await;
}

#[tokio::test]
async fn a_cluster_selector_runs_the_job_on_an_existing_cluster_and_keeps_it() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-selector").await;
    let cluster = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "shared"}, "spec": small_cluster(json!({}))});
    rayclusters(&client, &ns)
        .patch(
            "shared",
            &PatchParams::apply("kuberay-wasm-tests"),
            &Patch::Apply(&cluster),
        )
        .await
        .unwrap();
    ready_cluster(&client, &ns, "shared").await;
    let api = rayjobs(&client, &ns);
    let mut job = http_job(
        "guest",
        "echo hello",
        json!({"clusterSelector": {"ray.io/cluster": "shared"}}),
    );
    job["spec"].as_object_mut().unwrap().remove("rayClusterSpec");
    apply(&api, &job).await;
    let done = deployment(&api, "guest", "Complete", Duration::from_secs(120)).await;
    assert_eq!(done["rayClusterName"], "shared");
    assert_eq!(done["jobStatus"], "SUCCEEDED");
    api.delete("guest", &DeleteParams::default()).await.unwrap();
    gone(&api, "guest", "the RayJob to be gone", Duration::from_secs(60)).await;
    assert!(
        rayclusters(&client, &ns)
            .get_opt("shared")
            .await
            .unwrap()
            .is_some(),
        "the selected cluster was deleted"
    );
    operator.stop().await;
}

#[tokio::test]
async fn interactive_mode_waits_for_the_users_job_id() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-interactive").await;
    let api = rayjobs(&client, &ns);
    let mut job = http_job("interactive", "unused", json!({}));
    job["spec"]["submissionMode"] = json!("InteractiveMode");
    apply(&api, &job).await;
    let waiting = deployment(&api, "interactive", "Waiting", Duration::from_secs(120)).await;
    let cluster = waiting["rayClusterName"].as_str().unwrap().to_string();
    // The user submits to the cluster themselves, then tells the RayJob which job it is.
    let head = dashboard(&client, &ns, &cluster).await;
    let submitted = head
        .post(
            "/api/jobs/",
            Some(&json!({"entrypoint": "echo interactive", "submission_id": "mine"})),
        )
        .await
        .unwrap();
    assert_eq!(submitted.status, 200, "{submitted:?}");
    job["spec"]["jobId"] = json!("mine");
    apply(&api, &job).await;
    let done = deployment(&api, "interactive", "Complete", Duration::from_secs(120)).await;
    assert_eq!(
        (done["jobId"].as_str(), done["jobStatus"].as_str()),
        (Some("mine"), Some("SUCCEEDED"))
    );
    operator.stop().await;
}

#[tokio::test]
async fn a_delete_self_rule_deletes_the_finished_rayjob_and_its_cluster() {
    let env = env().await;
    let (client, ns, operator) = fake_operator(env, "rayjob-self").await;
    let api = rayjobs(&client, &ns);
    let rules = json!({"deletionStrategy": {"deletionRules": [
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 2}},
    ]}});
    apply(&api, &http_job("ephemeral", "echo done", rules)).await;
    let done = deployment(&api, "ephemeral", "Complete", Duration::from_secs(120)).await;
    let cluster = done["rayClusterName"].as_str().unwrap().to_string();
    gone(
        &api,
        "ephemeral",
        "the RayJob to delete itself",
        Duration::from_secs(60),
    )
    .await;
    gone(
        &rayclusters(&client, &ns),
        &cluster,
        "its cluster to be garbage-collected",
        Duration::from_secs(60),
    )
    .await;
    operator.stop().await;
}
