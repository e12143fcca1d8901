//! What the end-to-end flow tests share: a tenant (a namespace and a user holding the shipped user role in
//! it), polling that reports the last state it saw, clusters made ready through the API, the job-submission
//! flow run against any server over REST, kubeconfigs for clients of the server, and reading metrics.

use std::{path::Path, time::Duration};

use kube::Api;
use kuberay_testenv::{HeadMode, TestEnv, TestNamespace};
use serde_json::{Value, json};

use crate::support::{Rest, User, expect, namespace};

/// How long a cluster with a fake head takes at most to be `ready`.
pub const FAKE_READY: Duration = Duration::from_secs(90);
/// How long a cluster with a real Ray head takes at most to be `ready` (about 20-40 s on an idle machine).
pub const REAL_READY: Duration = Duration::from_secs(180);

/// A namespace of its own and a user (the ServiceAccount `ray-user` of that namespace) who holds the
/// shipped user role there and nothing anywhere else.
pub struct Tenant {
    pub ns: TestNamespace,
    pub user: User,
}

impl Tenant {
    pub async fn new(env: &TestEnv, prefix: &str, head: HeadMode) -> Self {
        let ns = namespace(env, prefix, head).await;
        let user = User::service_account(env, ns.name(), "ray-user").await;
        user.grant(env, ns.name()).await;
        Self { ns, user }
    }

    pub fn name(&self) -> &str {
        self.ns.name()
    }

    /// `/apis/v1/namespaces/<ns>`, the prefix of the tenant's v1 routes.
    pub fn base(&self) -> String {
        format!("/apis/v1/namespaces/{}", self.ns.name())
    }

    /// Deletes the namespace, so its Pods (and Ray heads) stop now rather than with the environment.
    pub async fn remove(self, env: &TestEnv) {
        let admin = env.client().await.unwrap();
        let _ = self.ns.delete(&admin).await;
    }
}

/// Polls `check` every 500 ms until it returns `Ok`, failing after `timeout` with the last `Err` it gave
/// (the state that was observed, for the failure message).
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = tokio::time::Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => assert!(
                started.elapsed() < timeout,
                "timed out after {timeout:?} waiting for {what}; last seen: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Polls `GET <base>/clusters/<name>` until its `clusterState` is `ready` and returns the cluster.
pub async fn ready_cluster(rest: &Rest, base: &str, name: &str, timeout: Duration) -> Value {
    wait_for(&format!("cluster {name} to be ready"), timeout, || async {
        let (status, cluster) = rest.get(&format!("{base}/clusters/{name}")).await;
        if status == 200 && cluster["clusterState"] == "ready" {
            Ok(cluster)
        } else {
            Err(format!("{status} clusterState={}", cluster["clusterState"]))
        }
    })
    .await
}

/// The same with a cluster created through the `ray.io/v1` pass-through (not managed by the v1 API, so
/// read from Kubernetes as the admin).
pub async fn ready_ray_cluster(env: &TestEnv, ns: &str, name: &str, timeout: Duration) -> Value {
    let api: Api<kuberay_crds::RayCluster> = Api::namespaced(env.client().await.unwrap(), ns);
    wait_for(&format!("RayCluster {name} to be ready"), timeout, || async {
        let cluster = api.get(name).await.map_err(|e| e.to_string())?;
        let cluster = serde_json::to_value(cluster).unwrap();
        match cluster.pointer("/status/state") {
            Some(state) if state == "ready" => Ok(cluster),
            other => Err(format!("state {other:?}")),
        }
    })
    .await
}

/// The entrypoint the submission flow runs: it prints a fixed line (which the fake head echoes too) and
/// the value of `GREETING` from the runtime environment (only a real head runs it).
pub const HELLO: &str =
    "python -c \"import os; print('hello from ray'); print('greeting=' + os.environ['GREETING'])\"";

/// A Ray job that runs until it is stopped.
pub const LONG: &str = "python -c \"import time; time.sleep(600)\"";

/// Polls a submission's details until its status is `want` (a failed or stopped job fails at once).
pub async fn submission_status(rest: &Rest, path: &str, want: &str, timeout: Duration) -> Value {
    wait_for(&format!("{path} to be {want}"), timeout, || async {
        let (code, details) = rest.get(path).await;
        let status = details["status"].as_str().unwrap_or_default().to_string();
        if code == 200 && status == want {
            return Ok(details);
        }
        assert!(
            !(["FAILED", "STOPPED", "SUCCEEDED"].contains(&status.as_str())),
            "{path} ended {status} instead of {want}: {details}"
        );
        Err(format!("{code} {details}"))
    })
    .await
}

/// The job-submission flow of KubeRay's API over REST, against the Ray head of the ready cluster `cluster`
/// of `base`: submit (with a runtime environment and metadata), details until SUCCEEDED, the log, the list,
/// a duplicate submission id, stopping a running job, deleting a finished one and unknown ids. `mode`
/// names the server in messages and submission ids; `real_head` also checks what only a real head does
/// (running the entrypoint in the runtime environment).
pub async fn submission_flow(rest: &Rest, base: &str, cluster: &str, mode: &str, real_head: bool) {
    let submissions = format!("{base}/jobsubmissions/{cluster}");
    let submitted = expect(
        rest.post(
            &submissions,
            &json!({
                "entrypoint": HELLO,
                "runtimeEnv": format!("env_vars:\n  GREETING: {mode}\n"),
                "metadata": {"flow": mode},
            }),
        )
        .await,
        200,
    );
    let id = submitted["submissionId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| panic!("[{mode}] no submission id: {submitted}"))
        .to_string();
    let timeout = if real_head {
        Duration::from_secs(120)
    } else {
        Duration::from_secs(30)
    };
    let details = submission_status(rest, &format!("{submissions}/{id}"), "SUCCEEDED", timeout).await;
    assert_eq!(details["submissionId"], id.as_str(), "[{mode}] {details}");
    assert_eq!(details["entrypoint"], HELLO, "[{mode}] {details}");
    assert_eq!(details["metadata"]["flow"], mode, "[{mode}] {details}");
    let env_vars = details["runtimeEnv"]["env_vars"].as_str().unwrap_or_default();
    assert!(env_vars.contains("GREETING"), "[{mode}] runtime env: {details}");
    for time in ["startTime", "endTime"] {
        let millis: u64 = details[time].as_str().and_then(|t| t.parse().ok()).unwrap_or(0);
        assert!(millis > 0, "[{mode}] {time} (uint64 as a JSON string): {details}");
    }

    let log = expect(rest.get(&format!("{submissions}/log/{id}")).await, 200);
    let text = log["log"].as_str().unwrap_or_default();
    assert!(text.contains("hello from ray"), "[{mode}] log: {log}");
    if real_head {
        assert!(
            text.contains(&format!("greeting={mode}")),
            "[{mode}] the runtime env was not applied: {log}"
        );
    }

    let listed = expect(rest.get(&submissions).await, 200);
    let ids: Vec<&str> = listed["submissions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["submissionId"].as_str())
        .collect();
    assert!(ids.contains(&id.as_str()), "[{mode}] {id} not listed: {listed}");

    // A submission id of the caller's choosing, used once only.
    let long_id = format!("{mode}-long");
    let long = json!({"entrypoint": LONG, "submissionId": long_id});
    let submitted = expect(rest.post(&submissions, &long).await, 200);
    assert_eq!(submitted["submissionId"], long_id.as_str(), "[{mode}]");
    let again = expect(rest.post(&submissions, &long).await, 409);
    assert_eq!(
        again["code"], 6,
        "[{mode}] a duplicate id is ALREADY_EXISTS: {again}"
    );
    let long_path = format!("{submissions}/{long_id}");
    submission_status(rest, &long_path, "RUNNING", timeout).await;
    expect(rest.post(&long_path, &json!({})).await, 200);
    submission_status(rest, &long_path, "STOPPED", Duration::from_secs(60)).await;

    expect(rest.delete(&format!("{submissions}/{id}")).await, 200);
    let gone = expect(rest.get(&format!("{submissions}/{id}")).await, 404);
    assert_eq!(gone["code"], 5, "[{mode}] {gone}");

    // A job still running is not deleted: a 400 with Ray's reason (never a 5xx, which clients retry).
    // Stopped and deleted at once, as KubeRay's suite does it, it is deleted once it has stopped.
    let stopping = format!("{submissions}/{mode}-stopping");
    let job = json!({"entrypoint": LONG, "submissionId": format!("{mode}-stopping")});
    expect(rest.post(&submissions, &job).await, 200);
    submission_status(rest, &stopping, "RUNNING", timeout).await;
    let refused = expect(rest.delete(&stopping).await, 400);
    assert_eq!(refused["code"], 9, "[{mode}] FAILED_PRECONDITION: {refused}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("non-terminal"),
        "[{mode}] Ray's reason: {refused}"
    );
    expect(rest.post(&stopping, &json!({})).await, 200);
    expect(rest.delete(&stopping).await, 200);
    expect(rest.get(&stopping).await, 404);
    for path in [
        format!("{submissions}/no-such-job"),
        format!("{submissions}/log/no-such-job"),
    ] {
        let missing = expect(rest.get(&path).await, 404);
        assert_eq!(missing["code"], 5, "[{mode}] {path}: {missing}");
    }
    expect(rest.delete(&format!("{submissions}/no-such-job")).await, 404);
}

/// The sum of the values of the metric lines of `name` that contain every `needle`.
pub fn metric(text: &str, name: &str, needles: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && needles.iter().all(|n| l.contains(n)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The lines of `name` in a metrics text.
pub fn metric_lines<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(name)).collect()
}

/// Writes a kubeconfig for `server` that trusts `ca` (checking the certificate for `tls_server_name`
/// instead of the address when given) and authenticates with `token`.
pub fn write_kubeconfig(path: &Path, server: &str, ca: &Path, token: &str, tls_server_name: Option<&str>) {
    let mut cluster = json!({"server": server, "certificate-authority": ca});
    if let Some(name) = tls_server_name {
        cluster["tls-server-name"] = json!(name);
    }
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    });
    std::fs::write(path, serde_yaml::to_string(&config).unwrap()).unwrap();
}

/// `PATCH path` with a JSON merge patch (as `kubectl patch --type merge` sends it), through `rest`'s
/// server and credentials.
pub async fn merge_patch(rest: &Rest, path: &str, patch: &Value) -> (u16, Value) {
    let mut request = rest
        .client
        .patch(format!("{}{path}", rest.base))
        .header("content-type", "application/merge-patch+json")
        .body(patch.to_string());
    if let Some(token) = &rest.token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}
