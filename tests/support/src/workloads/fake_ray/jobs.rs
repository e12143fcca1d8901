//! The Ray Jobs API (`/api/jobs/`) as a Ray 2.x dashboard answers it, status codes and error texts included,
//! so that clients are tested against the same answers they get from a real head.

use std::{
    collections::BTreeMap,
    sync::Mutex,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FakeHead, entrypoint::Script, text};

/// How long a job stays PENDING before it starts running.
const PENDING_FOR: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Pending,
    Running,
    Stopped,
    Succeeded,
    Failed,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Running => "RUNNING",
            Self::Stopped => "STOPPED",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Stopped | Self::Succeeded | Self::Failed)
    }
}

struct Job {
    submission_id: String,
    entrypoint: String,
    metadata: Option<Value>,
    runtime_env: Option<Value>,
    submitted_ms: u64,
    stopped_ms: Option<u64>,
    script: Script,
}

impl Job {
    fn started_ms(&self) -> u64 {
        self.submitted_ms + PENDING_FOR.as_millis() as u64
    }

    fn finished_ms(&self) -> u64 {
        self.started_ms() + self.script.run_for.as_millis() as u64
    }

    fn status(&self, now: u64) -> JobStatus {
        match self.stopped_ms {
            Some(_) => JobStatus::Stopped,
            None if now < self.started_ms() => JobStatus::Pending,
            None if now < self.finished_ms() => JobStatus::Running,
            None if self.script.exit_code == 0 => JobStatus::Succeeded,
            None => JobStatus::Failed,
        }
    }

    fn logs(&self, now: u64) -> String {
        let status = self.status(now);
        if status == JobStatus::Pending || self.stopped_ms.is_some_and(|s| s < self.started_ms()) {
            return String::new();
        }
        let mut logs = format!(
            "Running entrypoint for job {}: {}\n",
            self.submission_id, self.entrypoint
        );
        if status != JobStatus::Running {
            logs.push_str(&self.script.output);
        }
        logs
    }

    fn details(&self, now: u64) -> Value {
        let status = self.status(now);
        let (message, error_type, exit_code) = match status {
            JobStatus::Pending => ("Job has not started yet.".to_string(), None, None),
            JobStatus::Running => ("Job is currently running.".to_string(), None, None),
            JobStatus::Stopped => ("Job was intentionally stopped.".to_string(), None, None),
            JobStatus::Succeeded => ("Job finished successfully.".to_string(), None, Some(0)),
            JobStatus::Failed => (
                format!(
                    "Job entrypoint command failed with exit code {}, last available logs (truncated to 20,000 \
                     chars):\n{}",
                    self.script.exit_code,
                    self.logs(now)
                ),
                Some("JOB_ENTRYPOINT_COMMAND_ERROR"),
                Some(self.script.exit_code),
            ),
        };
        let end_time = match status {
            JobStatus::Stopped => self.stopped_ms,
            JobStatus::Succeeded | JobStatus::Failed => Some(self.finished_ms()),
            _ => None,
        };
        json!({
            "type": "SUBMISSION",
            "job_id": null,
            "submission_id": self.submission_id,
            "driver_info": null,
            "status": status.as_str(),
            "entrypoint": self.entrypoint,
            "message": message,
            "error_type": error_type,
            "start_time": self.submitted_ms,
            "end_time": end_time,
            "metadata": self.metadata,
            "runtime_env": self.runtime_env,
            "driver_agent_http_address": null,
            "driver_node_id": null,
            "driver_exit_code": exit_code,
        })
    }
}

/// Every job submitted to one fake head, in submission order.
#[derive(Default)]
pub struct JobStore {
    jobs: Mutex<BTreeMap<u64, Job>>,
    next: Mutex<u64>,
    /// Submission attempts per submission id, duplicates included (a test knob, not a Ray endpoint).
    attempts: Mutex<BTreeMap<String, u32>>,
}

impl JobStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Job>> {
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn with_job<T>(&self, id: &str, f: impl FnOnce(&mut Job) -> T) -> Option<T> {
        self.lock().values_mut().find(|j| j.submission_id == id).map(f)
    }
}

#[derive(Deserialize)]
pub struct SubmitRequest {
    entrypoint: Option<String>,
    submission_id: Option<String>,
    /// Deprecated alias of `submission_id` that Ray still accepts.
    job_id: Option<String>,
    metadata: Option<BTreeMap<String, String>>,
    runtime_env: Option<serde_json::Map<String, Value>>,
    entrypoint_num_cpus: Option<f64>,
    entrypoint_num_gpus: Option<f64>,
    entrypoint_memory: Option<u64>,
    entrypoint_resources: Option<BTreeMap<String, f64>>,
}

pub async fn submit(State(head): State<FakeHead>, body: axum::body::Bytes) -> Response {
    let request: SubmitRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("Traceback (most recent call last):\nTypeError: {e}"),
            );
        }
    };
    let _ = (
        request.entrypoint_num_cpus,
        request.entrypoint_num_gpus,
        request.entrypoint_memory,
    );
    let _ = request.entrypoint_resources;
    let Some(entrypoint) = request.entrypoint else {
        return text(
            StatusCode::BAD_REQUEST,
            "Traceback (most recent call last):\nTypeError: JobSubmitRequest.__init__() missing 1 required \
             positional argument: 'entrypoint'",
        );
    };
    let submission_id = request
        .submission_id
        .or(request.job_id)
        .unwrap_or_else(generated_submission_id);
    let jobs = &head.jobs;
    *jobs
        .attempts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(submission_id.clone())
        .or_insert(0) += 1;
    if jobs.with_job(&submission_id, |_| ()).is_some() {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "Traceback (most recent call last):\nRuntimeError: Request failed with status code 400: \
                 Traceback (most recent call last):\nValueError: Job with submission_id {submission_id} already \
                 exists. Please use a different submission_id.\n."
            ),
        );
    }
    let key = {
        let mut next = jobs
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *next += 1;
        *next
    };
    let script = Script::from_entrypoint(&entrypoint);
    jobs.lock().insert(
        key,
        Job {
            submission_id: submission_id.clone(),
            entrypoint,
            metadata: request.metadata.map(|m| json!(m)),
            runtime_env: request.runtime_env.map(Value::Object),
            submitted_ms: now_ms(),
            stopped_ms: None,
            script,
        },
    );
    if !head.options.submit_delay.is_zero() {
        tokio::time::sleep(head.options.submit_delay).await;
    }
    Json(json!({ "job_id": submission_id, "submission_id": submission_id })).into_response()
}

/// `GET /testenv/submissions`: how many times each submission id was submitted.
pub async fn submissions(State(head): State<FakeHead>) -> Response {
    let attempts = head
        .jobs
        .attempts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    Json(json!(attempts)).into_response()
}

pub async fn list(State(head): State<FakeHead>) -> Response {
    let now = now_ms();
    let all: Vec<Value> = head.jobs.lock().values().map(|j| j.details(now)).collect();
    Json(Value::Array(all)).into_response()
}

pub async fn get(State(head): State<FakeHead>, Path(id): Path<String>) -> Response {
    let now = now_ms();
    head.jobs
        .with_job(&id, |j| Json(j.details(now)).into_response())
        .unwrap_or_else(|| not_found(&id))
}

pub async fn logs(State(head): State<FakeHead>, Path(id): Path<String>) -> Response {
    let now = now_ms();
    head.jobs
        .with_job(&id, |j| Json(json!({ "logs": j.logs(now) })).into_response())
        .unwrap_or_else(|| not_found(&id))
}

pub async fn stop(State(head): State<FakeHead>, Path(id): Path<String>) -> Response {
    let now = now_ms();
    head.jobs
        .with_job(&id, |j| {
            let stopped = !j.status(now).is_terminal();
            if stopped {
                j.stopped_ms = Some(now);
            }
            Json(json!({ "stopped": stopped })).into_response()
        })
        .unwrap_or_else(|| not_found(&id))
}

pub async fn delete(State(head): State<FakeHead>, Path(id): Path<String>) -> Response {
    let now = now_ms();
    let mut jobs = head.jobs.lock();
    let Some((&key, job)) = jobs.iter().find(|(_, j)| j.submission_id == id) else {
        return not_found(&id);
    };
    let status = job.status(now);
    if !status.is_terminal() {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "Traceback (most recent call last):\nRuntimeError: Attempted to delete job with id '{id}', but it \
                 is in a non-terminal state {}.",
                status.as_str()
            ),
        );
    }
    jobs.remove(&key);
    Json(json!({ "deleted": true })).into_response()
}

fn not_found(id: &str) -> Response {
    text(StatusCode::NOT_FOUND, format!("Job {id} does not exist"))
}

fn generated_submission_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut x = (nanos as u64) ^ 0x9e37_79b9_7f4a_7c15;
    let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let suffix: String = (0..16)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            alphabet[(x % alphabet.len() as u64) as usize] as char
        })
        .collect();
    format!("raysubmit_{suffix}")
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
