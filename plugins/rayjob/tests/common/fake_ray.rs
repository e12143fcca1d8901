//! A Ray head for the scenario tests, behind `FakeHost::on_ray`: the Jobs API with Ray's answers (404 text
//! for unknown jobs, a 500 asking for a different submission_id on duplicates, `stopped: false` for finished
//! jobs), every request recorded in order, and knobs to move jobs along or make the head unreachable.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, MutexGuard},
};

use kuberay_plugin_sdk::{
    HostError, RayRequest, RayResponse,
    serde_json::{self, Value, json},
    testing::FakeHost,
};

#[derive(Debug, Clone)]
pub struct FakeJob {
    pub status: String,
    pub message: String,
    pub start_ms: u64,
    pub end_ms: Option<u64>,
    pub submitted: Value,
}

#[derive(Default)]
struct State {
    jobs: BTreeMap<String, FakeJob>,
    requests: Vec<RayRequest>,
    unreachable: bool,
    submit_error: Option<(u16, String)>,
}

#[derive(Clone, Default)]
pub struct FakeRay(Arc<Mutex<State>>);

fn text(status: u16, body: &str) -> Result<RayResponse, HostError> {
    Ok(RayResponse {
        status,
        headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
        body: body.as_bytes().to_vec(),
    })
}

fn json_answer(value: &Value) -> Result<RayResponse, HostError> {
    Ok(RayResponse {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: value.to_string().into_bytes(),
    })
}

impl FakeRay {
    /// A head answering the host's Ray calls.
    pub fn install(host: &FakeHost) -> Self {
        let ray = Self::default();
        let handler = ray.clone();
        host.on_ray(move |request| handler.answer(request));
        ray
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every request so far, as `METHOD path`.
    pub fn calls(&self) -> Vec<String> {
        self.state()
            .requests
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }

    pub fn requests(&self) -> Vec<RayRequest> {
        self.state().requests.clone()
    }

    pub fn clear(&self) {
        self.state().requests.clear();
    }

    pub fn job(&self, id: &str) -> Option<FakeJob> {
        self.state().jobs.get(id).cloned()
    }

    /// A job submitted by someone else (an earlier operator, the user, a submitter Pod).
    pub fn add_job(&self, id: &str, status: &str) {
        self.state().jobs.insert(
            id.into(),
            FakeJob {
                status: status.into(),
                message: message(status).into(),
                start_ms: 1_800_000_000_000,
                end_ms: None,
                submitted: Value::Null,
            },
        );
    }

    /// Moves a job on; terminal statuses get an end time.
    pub fn set_status(&self, id: &str, status: &str, end_ms: Option<u64>) {
        if let Some(job) = self.state().jobs.get_mut(id) {
            job.status = status.into();
            job.message = message(status).into();
            job.end_ms = end_ms;
        }
    }

    pub fn set_unreachable(&self, unreachable: bool) {
        self.state().unreachable = unreachable;
    }

    /// The next submissions fail with this answer.
    pub fn fail_submissions(&self, status: u16, body: &str) {
        self.state().submit_error = Some((status, body.into()));
    }

    fn answer(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        let mut state = self.state();
        state.requests.push(request.clone());
        if state.unreachable {
            return Err(HostError::Unavailable(format!(
                "the head of RayCluster {} is not reachable",
                request.cluster
            )));
        }
        let path = request.path.as_str();
        match (request.method.as_str(), path.strip_prefix("/api/jobs/")) {
            ("POST", Some("")) => {
                if let Some((status, body)) = state.submit_error.clone() {
                    return text(status, &body);
                }
                let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                let id = body["submission_id"]
                    .as_str()
                    .unwrap_or("raysubmit_generated")
                    .to_string();
                if state.jobs.contains_key(&id) {
                    return text(
                        500,
                        &format!(
                            "Traceback (most recent call last):\nRuntimeError: Request failed with status code \
                             400: Traceback (most recent call last):\nValueError: Job with submission_id {id} \
                             already exists. Please use a different submission_id.\n."
                        ),
                    );
                }
                state.jobs.insert(
                    id.clone(),
                    FakeJob {
                        status: "PENDING".into(),
                        message: message("PENDING").into(),
                        start_ms: 1_800_000_000_000,
                        end_ms: None,
                        submitted: body,
                    },
                );
                json_answer(&json!({"job_id": id, "submission_id": id}))
            }
            ("GET", Some(rest)) => match rest.strip_suffix("/logs") {
                Some(id) => match state.jobs.get(id) {
                    Some(_) => json_answer(&json!({"logs": "hello\n"})),
                    None => text(404, &format!("Job {id} does not exist")),
                },
                None => match state.jobs.get(rest) {
                    Some(job) => json_answer(&details(rest, job)),
                    None => text(404, &format!("Job {rest} does not exist")),
                },
            },
            ("POST", Some(rest)) if rest.ends_with("/stop") => {
                let id = rest.trim_end_matches("/stop");
                match state.jobs.get_mut(id) {
                    Some(job) => {
                        let stopped = !matches!(job.status.as_str(), "STOPPED" | "SUCCEEDED" | "FAILED");
                        if stopped {
                            job.status = "STOPPED".into();
                            job.message = message("STOPPED").into();
                        }
                        json_answer(&json!({"stopped": stopped}))
                    }
                    None => text(404, &format!("Job {id} does not exist")),
                }
            }
            _ => text(404, "Not Found"),
        }
    }
}

fn message(status: &str) -> &'static str {
    match status {
        "PENDING" => "Job has not started yet.",
        "RUNNING" => "Job is currently running.",
        "STOPPED" => "Job was intentionally stopped.",
        "SUCCEEDED" => "Job finished successfully.",
        _ => "Job entrypoint command failed with exit code 1",
    }
}

fn details(id: &str, job: &FakeJob) -> Value {
    json!({
        "type": "SUBMISSION",
        "job_id": null,
        "submission_id": id,
        "driver_info": null,
        "status": job.status,
        "entrypoint": job.submitted.get("entrypoint"),
        "message": job.message,
        "error_type": null,
        "start_time": job.start_ms,
        "end_time": job.end_ms,
        "metadata": job.submitted.get("metadata"),
        "runtime_env": job.submitted.get("runtime_env"),
        "driver_agent_http_address": null,
        "driver_node_id": null,
        "driver_exit_code": null,
    })
}
