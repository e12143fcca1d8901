//! The plugin SDK's Jobs-API client ([`RayHead`]) against a live head. Plugins reach a head only through
//! the host's `ray` call; here an in-memory host answers that call by sending the request through the API
//! server's services proxy, so the client's parsing of Ray's real answers (404 texts, the duplicate
//! submission 500, `stopped: false`, lenient job details) is checked against Ray itself and the fake head.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use http::Method;
use kuberay_plugin_sdk::{
    Host, HostError, PortRole, RayRequest, RayResponse,
    ray::{
        RayHead,
        jobs::{JobDetails, JobStatus, JobSubmitRequest, StopOutcome, SubmitOutcome},
    },
    testing::FakeHost,
};
use serde_json::{Value, json};

use crate::{
    error::{Error, Result},
    proxy_http::ProxyHttp,
};

macro_rules! check {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(Error::Other(format!($($msg)+)));
        }
    };
}

/// Runs the SDK client's checks against the dashboard behind `dashboard`; `tag` makes submission ids unique.
pub async fn sdk_jobs_client(dashboard: ProxyHttp, tag: &str) -> Result<()> {
    let runtime = tokio::runtime::Handle::current();
    let tag = format!("{tag}-sdk");
    // The SDK's host interface is synchronous (it is a WebAssembly import); the checks run on a blocking
    // thread that waits for each proxied request.
    tokio::task::spawn_blocking(move || {
        let host = FakeHost::new(json!({
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "conformance", "namespace": "conformance", "uid": "conformance"},
        }));
        host.on_ray(move |request| runtime.block_on(forward(&dashboard, request)));
        checks(&RayHead::new(&host, "conformance"), &tag)
    })
    .await
    .map_err(|e| Error::Other(format!("the SDK client checks panicked: {e}")))?
}

/// The host's side of `ray`: only the dashboard is behind `dashboard`.
async fn forward(dashboard: &ProxyHttp, request: &RayRequest) -> std::result::Result<RayResponse, HostError> {
    if request.role != PortRole::Dashboard {
        return Err(HostError::Unavailable(format!(
            "no {:?} port in this test",
            request.role
        )));
    }
    let method = Method::from_bytes(request.method.as_bytes())
        .map_err(|e| HostError::Invalid(format!("method {}: {e}", request.method)))?;
    let body: Option<Value> = if request.body.is_empty() {
        None
    } else {
        Some(serde_json::from_slice(&request.body).map_err(|e| HostError::Invalid(e.to_string()))?)
    };
    let reply = dashboard
        .send(method, &request.path, body.as_ref())
        .await
        .map_err(|e| HostError::Unavailable(e.to_string()))?;
    Ok(RayResponse {
        status: reply.status.as_u16(),
        headers: Vec::new(),
        body: reply.body.into_bytes(),
    })
}

fn checks<H: Host>(head: &RayHead<'_, H>, tag: &str) -> Result<()> {
    let unknown = format!("{tag}-unknown");
    check!(
        head.job_info(&unknown).map_err(ray)?.is_none(),
        "an unknown job was found"
    );
    check!(
        head.job_logs(&unknown).map_err(ray)?.is_none(),
        "an unknown job has logs"
    );
    let stop = head.stop_job(&unknown).map_err(ray)?;
    check!(
        stop == StopOutcome::NotFound,
        "stopping an unknown job gave {stop:?}"
    );

    // A job that succeeds; submitting it again is "already submitted", not an error.
    let ok_id = format!("{tag}-ok");
    let metadata = BTreeMap::from([("owner".to_string(), "conformance".to_string())]);
    let request = JobSubmitRequest::new(format!("python -c \"print('hello from {ok_id}')\""))
        .submission_id(&ok_id)
        .metadata(Some(&metadata))
        .runtime_env_yaml(Some("env_vars:\n  CONFORMANCE: \"1\"\n"))
        .map_err(Error::Other)?;
    let first = head.submit_job(&request).map_err(ray)?;
    check!(
        first
            == SubmitOutcome::Submitted {
                job_id: ok_id.clone()
            },
        "the first submission gave {first:?}"
    );
    let again = head.submit_job(&request).map_err(ray)?;
    check!(
        again
            == SubmitOutcome::AlreadySubmitted {
                submission_id: ok_id.clone()
            },
        "a duplicate submission gave {again:?}"
    );
    let details = wait(head, &ok_id, JobStatus::is_terminal)?;
    check!(
        details.status == JobStatus::Succeeded,
        "the job ended {details:?}"
    );
    check!(
        details.job_type.as_deref() == Some("SUBMISSION") && details.submission_id.as_deref() == Some(&ok_id),
        "details {details:?}"
    );
    check!(
        details.metadata.as_ref() == Some(&metadata),
        "metadata {:?}",
        details.metadata
    );
    check!(
        details
            .runtime_env
            .as_ref()
            .is_some_and(|env| env["env_vars"]["CONFORMANCE"] == "1"),
        "runtime_env {:?}",
        details.runtime_env
    );
    check!(
        matches!((details.start_time, details.end_time), (Some(s), Some(e)) if s <= e),
        "start/end {:?} {:?}",
        details.start_time,
        details.end_time
    );
    let logs = head.job_logs(&ok_id).map_err(ray)?.unwrap_or_default();
    check!(
        logs.contains(&format!("hello from {ok_id}")),
        "logs of {ok_id}: {logs:?}"
    );
    let stop = head.stop_job(&ok_id).map_err(ray)?;
    check!(
        stop == StopOutcome::AlreadyFinished(JobStatus::Succeeded),
        "stopping a finished job gave {stop:?}"
    );

    // A job that fails.
    let fail_id = format!("{tag}-fail");
    let failing = JobSubmitRequest::new("python -c \"import sys; sys.exit(3)\"").submission_id(&fail_id);
    head.submit_job(&failing).map_err(ray)?;
    let details = wait(head, &fail_id, JobStatus::is_terminal)?;
    check!(
        details.status == JobStatus::Failed,
        "the failing job ended {details:?}"
    );
    check!(
        details.driver_exit_code == Some(3),
        "driver_exit_code {:?}",
        details.driver_exit_code
    );

    // A long job: stopped while it runs, then forgotten.
    let long_id = format!("{tag}-long");
    let long = JobSubmitRequest::new("python -c \"import time; time.sleep(120)\"").submission_id(&long_id);
    head.submit_job(&long).map_err(ray)?;
    wait(head, &long_id, |s| *s == JobStatus::Running)?;
    let stop = head.stop_job(&long_id).map_err(ray)?;
    check!(
        stop == StopOutcome::Stopped,
        "stopping a running job gave {stop:?}"
    );
    let details = wait(head, &long_id, JobStatus::is_terminal)?;
    check!(
        details.status == JobStatus::Stopped,
        "the stopped job ended {details:?}"
    );

    let listed: Vec<String> = head
        .list_jobs()
        .map_err(ray)?
        .into_iter()
        .filter_map(|j| j.submission_id)
        .collect();
    for id in [&ok_id, &fail_id, &long_id] {
        check!(listed.contains(id), "the job list {listed:?} lacks {id}");
    }
    check!(
        head.delete_job(&long_id).map_err(ray)?,
        "deleting a stopped job deleted nothing"
    );
    check!(
        head.job_info(&long_id).map_err(ray)?.is_none(),
        "a deleted job is still there"
    );
    check!(
        !head.delete_job(&long_id).map_err(ray)?,
        "deleting a deleted job deleted something"
    );
    Ok(())
}

/// Polls the job until its status satisfies `done`.
fn wait<H: Host>(head: &RayHead<'_, H>, id: &str, done: impl Fn(&JobStatus) -> bool) -> Result<JobDetails> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let details = head.job_info(id).map_err(ray)?;
        if let Some(details) = details.as_ref().filter(|d| done(&d.status)) {
            return Ok(details.clone());
        }
        if Instant::now() > deadline {
            return Err(Error::Other(format!(
                "job {id} did not reach the wanted status: {details:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn ray(error: kuberay_plugin_sdk::ray::RayError) -> Error {
    Error::Other(format!("the SDK client failed: {error}"))
}
