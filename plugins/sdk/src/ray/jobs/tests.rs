//! The Jobs API client against canned answers in the exact form a Ray 2.x head gives them (see the fake head
//! in `tests/support/src/workloads/fake_ray/jobs.rs`, which the real-Ray conformance tests keep honest).

use std::sync::{Arc, Mutex};

use serde_json::json;

use super::{JobStatus, JobSubmitRequest, StopOutcome, SubmitOutcome};
use crate::{
    HostError, PortRole, RayRequest, RayResponse, RayTarget,
    ray::{RayError, RayHead},
    testing::FakeHost,
};

fn host() -> FakeHost {
    FakeHost::new(json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "job"}}))
}

fn answer(status: u16, body: &str) -> Result<RayResponse, HostError> {
    Ok(RayResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    })
}

type Rule = (&'static str, &'static str, u16, String);

fn rule(method: &'static str, path: &'static str, status: u16, body: &str) -> Rule {
    (method, path, status, body.to_string())
}

/// Records every request and answers from a list of `(method, path) -> (status, body)` rules.
fn scripted(host: &FakeHost, rules: Vec<Rule>) -> Arc<Mutex<Vec<RayRequest>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    host.on_ray(move |request| {
        log.lock().unwrap().push(request.clone());
        match rules
            .iter()
            .find(|(m, p, _, _)| *m == request.method && *p == request.path)
        {
            Some((_, _, status, body)) => answer(*status, body),
            None => answer(404, "not routed in this test"),
        }
    });
    seen
}

const RUNNING: &str = r#"{"type": "SUBMISSION", "job_id": null, "submission_id": "job-abcde",
    "driver_info": null, "status": "RUNNING", "entrypoint": "python x.py",
    "message": "Job is currently running.", "error_type": null, "start_time": 1700000000123,
    "end_time": null, "metadata": null, "runtime_env": null, "driver_agent_http_address": null,
    "driver_node_id": null, "driver_exit_code": null}"#;

const SUCCEEDED: &str = r#"{"type": "SUBMISSION", "job_id": "02000000", "submission_id": "job-abcde",
    "status": "SUCCEEDED", "entrypoint": "python x.py", "message": "Job finished successfully.",
    "start_time": 1700000000123, "end_time": 1700000009999, "metadata": {"owner": "me"},
    "runtime_env": {"pip": ["requests"]}, "driver_exit_code": 0, "attempt_number": 1}"#;

#[test]
fn job_info_reads_details_with_nulls() {
    let host = host();
    let seen = scripted(&host, vec![rule("GET", "/api/jobs/job-abcde", 200, RUNNING)]);
    let info = RayHead::new(&host, "cluster-1")
        .job_info("job-abcde")
        .unwrap()
        .unwrap();
    assert_eq!(info.status, JobStatus::Running);
    assert_eq!(info.job_id, None);
    assert_eq!(info.submission_id.as_deref(), Some("job-abcde"));
    assert_eq!(info.start_time, Some(1_700_000_000_123));
    assert_eq!(info.end_time, None);
    let request = &seen.lock().unwrap()[0];
    assert_eq!(request.cluster, "cluster-1");
    assert_eq!(
        (request.role, request.target),
        (PortRole::Dashboard, RayTarget::Cluster)
    );
    assert!(request.headers.is_empty() && request.body.is_empty());
}

#[test]
fn job_info_of_an_unknown_job_is_none() {
    let host = host();
    host.on_ray(|_| {
        Ok(RayResponse {
            status: 404,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: b"Job job-x does not exist".to_vec(),
        })
    });
    assert_eq!(RayHead::new(&host, "c").job_info("job-x"), Ok(None));
}

#[test]
fn job_info_checks_the_status_before_decoding() {
    let host = host();
    host.on_ray(|_| answer(500, "Traceback (most recent call last):\nRuntimeError: boom"));
    let err = RayHead::new(&host, "c").job_info("j").unwrap_err();
    assert_eq!(
        err.to_string(),
        "GetJobInfo failed: HTTP 500: Traceback (most recent call last):\nRuntimeError: boom"
    );
}

#[test]
fn unreachable_heads_are_host_errors() {
    let host = host();
    host.on_ray(|_| Err(HostError::Unavailable("head not ready".into())));
    let err = RayHead::new(&host, "c").job_info("j").unwrap_err();
    assert_eq!(
        err,
        RayError::Host(HostError::Unavailable("head not ready".into()))
    );
}

#[test]
fn submit_posts_the_request_and_reads_the_id() {
    let host = host();
    let seen = scripted(
        &host,
        vec![rule(
            "POST",
            "/api/jobs/",
            200,
            r#"{"job_id": "job-abcde", "submission_id": "job-abcde"}"#,
        )],
    );
    let request = JobSubmitRequest::new("python x.py").submission_id("job-abcde");
    let outcome = RayHead::new(&host, "c").submit_job(&request).unwrap();
    assert_eq!(
        outcome,
        SubmitOutcome::Submitted {
            job_id: "job-abcde".into()
        }
    );
    let sent = &seen.lock().unwrap()[0];
    assert_eq!(
        sent.headers,
        vec![("Content-Type".to_string(), "application/json".to_string())]
    );
    assert_eq!(
        String::from_utf8_lossy(&sent.body),
        r#"{"entrypoint":"python x.py","submission_id":"job-abcde"}"#
    );
}

#[test]
fn submitting_a_known_id_is_already_submitted() {
    let host = host();
    scripted(
        &host,
        vec![rule(
            "POST",
            "/api/jobs/",
            500,
            "Traceback (most recent call last):\nRuntimeError: Request failed with status code 400: \
             Traceback (most recent call last):\nValueError: Job with submission_id job-abcde already exists. \
             Please use a different submission_id.\n.",
        )],
    );
    let request = JobSubmitRequest::new("python x.py").submission_id("job-abcde");
    assert_eq!(
        RayHead::new(&host, "c").submit_job(&request),
        Ok(SubmitOutcome::AlreadySubmitted {
            submission_id: "job-abcde".into()
        })
    );
}

#[test]
fn other_submit_failures_are_errors() {
    let host = host();
    scripted(
        &host,
        vec![rule(
            "POST",
            "/api/jobs/",
            400,
            "Traceback (most recent call last):\nTypeError: bad",
        )],
    );
    let err = RayHead::new(&host, "c")
        .submit_job(&JobSubmitRequest::new("x"))
        .unwrap_err();
    assert!(matches!(err, RayError::Status { status: 400, .. }));
    // A 500 for another reason (no agent yet) is not "already submitted".
    scripted(
        &host,
        vec![rule(
            "POST",
            "/api/jobs/",
            500,
            "No available agent to submit job",
        )],
    );
    let err = RayHead::new(&host, "c")
        .submit_job(&JobSubmitRequest::new("x"))
        .unwrap_err();
    assert!(matches!(err, RayError::Status { status: 500, .. }));
}

#[test]
fn list_reads_an_array() {
    let host = host();
    let list = format!("[{RUNNING}, {SUCCEEDED}]");
    scripted(&host, vec![rule("GET", "/api/jobs/", 200, &list)]);
    let jobs = RayHead::new(&host, "c").list_jobs().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[1].status, JobStatus::Succeeded);
    assert_eq!(jobs[1].end_time, Some(1_700_000_009_999));
    assert_eq!(jobs[1].metadata.as_ref().map(|m| m["owner"].as_str()), Some("me"));
}

#[test]
fn stop_that_stopped() {
    let host = host();
    let seen = scripted(
        &host,
        vec![rule(
            "POST",
            "/api/jobs/job-abcde/stop",
            200,
            r#"{"stopped": true}"#,
        )],
    );
    assert_eq!(
        RayHead::new(&host, "c").stop_job("job-abcde"),
        Ok(StopOutcome::Stopped)
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn stop_of_a_finished_job_succeeds_after_looking_it_up() {
    let host = host();
    let seen = scripted(
        &host,
        vec![
            rule("POST", "/api/jobs/job-abcde/stop", 200, r#"{"stopped": false}"#),
            rule("GET", "/api/jobs/job-abcde", 200, SUCCEEDED),
        ],
    );
    assert_eq!(
        RayHead::new(&host, "c").stop_job("job-abcde"),
        Ok(StopOutcome::AlreadyFinished(JobStatus::Succeeded))
    );
    let methods: Vec<String> = seen.lock().unwrap().iter().map(|r| r.method.clone()).collect();
    assert_eq!(methods, ["POST", "GET"]);
}

#[test]
fn stop_that_did_not_stop_a_running_job_fails() {
    let host = host();
    scripted(
        &host,
        vec![
            rule("POST", "/api/jobs/job-abcde/stop", 200, r#"{"stopped": false}"#),
            rule("GET", "/api/jobs/job-abcde", 200, RUNNING),
        ],
    );
    let err = RayHead::new(&host, "c").stop_job("job-abcde").unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to stop job job-abcde: it is still RUNNING"
    );
}

#[test]
fn stop_of_an_unknown_job_is_not_found() {
    let host = host();
    scripted(&host, vec![]);
    assert_eq!(
        RayHead::new(&host, "c").stop_job("nope"),
        Ok(StopOutcome::NotFound)
    );
}

#[test]
fn logs_and_delete() {
    let host = host();
    scripted(
        &host,
        vec![
            rule("GET", "/api/jobs/a/logs", 200, r#"{"logs": "hello\n"}"#),
            rule("DELETE", "/api/jobs/a", 200, r#"{"deleted": true}"#),
            rule(
                "DELETE",
                "/api/jobs/b",
                500,
                "RuntimeError: Attempted to delete job with id 'b', but it is in a non-terminal state RUNNING.",
            ),
        ],
    );
    let head = RayHead::new(&host, "c");
    assert_eq!(head.job_logs("a"), Ok(Some("hello\n".into())));
    assert_eq!(head.job_logs("zzz"), Ok(None));
    assert_eq!(head.delete_job("a"), Ok(true));
    assert_eq!(head.delete_job("zzz"), Ok(false));
    assert!(matches!(
        head.delete_job("b"),
        Err(RayError::Status { status: 500, .. })
    ));
}

#[test]
fn ids_are_encoded_and_the_head_pod_can_be_targeted() {
    let host = host();
    let seen = scripted(&host, vec![]);
    let head = RayHead::new(&host, "c").via_head_pod();
    assert_eq!(head.job_info("a b/../c"), Ok(None));
    assert!(matches!(head.job_info(".."), Err(RayError::Request(_))));
    let request = &seen.lock().unwrap()[0];
    assert_eq!(request.path, "/api/jobs/a%20b%2F..%2Fc");
    assert_eq!(request.target, RayTarget::HeadPod);
}

#[test]
fn garbage_on_success_is_a_decode_error() {
    let host = host();
    host.on_ray(|_| answer(200, "<html>proxy error</html>"));
    let err = RayHead::new(&host, "c").job_info("j").unwrap_err();
    assert!(
        matches!(
            err,
            RayError::Decode {
                call: "GetJobInfo",
                ..
            }
        ),
        "{err}"
    );
}

/// A transport that is not a plugin's host, as a native server would write one.
struct Canned(Mutex<Vec<RayRequest>>);

impl crate::RayTransport for Canned {
    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        self.0.lock().unwrap().push(request.clone());
        match request.method.as_str() {
            "GET" => answer(200, RUNNING),
            _ => answer(
                500,
                "Please use a different submission_id: job-abcde exists already",
            ),
        }
    }
}

#[test]
fn the_client_works_over_any_transport() {
    let transport = Canned(Mutex::new(Vec::new()));
    let head = RayHead::new(&transport, "c").via_head_pod();
    let info = head.job_info("job-abcde").unwrap().unwrap();
    assert_eq!(info.status, JobStatus::Running);
    let request = JobSubmitRequest::new("python x.py").submission_id("job-abcde");
    assert_eq!(
        head.submit_job(&request),
        Ok(SubmitOutcome::AlreadySubmitted {
            submission_id: "job-abcde".into()
        })
    );
    let seen = transport.0.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|r| r.target == RayTarget::HeadPod && r.cluster == "c")
    );
}
