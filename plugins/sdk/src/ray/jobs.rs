//! The dashboard's Jobs API (`/api/jobs/`), with Ray's answers turned into results a controller can act
//! on: "not found" is `None` (or [`StopOutcome::NotFound`]), "this submission id exists already" is
//! [`SubmitOutcome::AlreadySubmitted`], and a stop that did not stop anything fails only if the job is still
//! running. Status codes are checked before any body is decoded.

mod model;
mod submit;

use serde::Deserialize;

pub use self::{
    model::{JobDetails, JobStatus, StopOutcome, SubmitOutcome},
    submit::{JobSubmitRequest, runtime_env_from_yaml},
};
use super::{
    RayError, RayHead, RayTransport,
    wire::{decode, is_success, path_segment, quoted_body, status_error},
};

/// The Jobs API's root; Ray requires the trailing slash on submit and list.
const JOBS: &str = "/api/jobs/";

/// What Ray's 500 says when the submission id is taken (the agent's 400, wrapped by the head).
const ALREADY_SUBMITTED: &str = "Please use a different submission_id";

#[derive(Deserialize)]
struct SubmitResponse {
    #[serde(default)]
    job_id: Option<String>,
    #[serde(default)]
    submission_id: Option<String>,
}

#[derive(Deserialize)]
struct StopResponse {
    stopped: bool,
}

#[derive(Deserialize)]
struct LogsResponse {
    #[serde(default)]
    logs: Option<String>,
}

#[derive(Deserialize)]
struct DeleteResponse {
    #[serde(default)]
    deleted: bool,
}

impl<T: RayTransport + ?Sized> RayHead<'_, T> {
    /// `POST /api/jobs/`. A 500 whose text asks for a different submission id means the id is taken: the job
    /// was submitted before, which is what an idempotent submission wants.
    pub fn submit_job(&self, request: &JobSubmitRequest) -> Result<SubmitOutcome, RayError> {
        const CALL: &str = "SubmitJob";
        let body = request.to_json().map_err(RayError::Request)?;
        let response = self.dashboard("POST", JOBS.to_string(), Some(body))?;
        if response.status == 500 && String::from_utf8_lossy(&response.body).contains(ALREADY_SUBMITTED) {
            return Ok(SubmitOutcome::AlreadySubmitted {
                submission_id: request.submission_id.clone().unwrap_or_default(),
            });
        }
        let answer: SubmitResponse = decode(CALL, &response)?;
        match answer.job_id.or(answer.submission_id) {
            Some(job_id) => Ok(SubmitOutcome::Submitted { job_id }),
            None => Err(RayError::Decode {
                call: CALL,
                detail: "no job_id".into(),
                body: quoted_body(&response.body),
            }),
        }
    }

    /// `GET /api/jobs/{id}`; `None` when the head does not know the job (404).
    pub fn job_info(&self, id: &str) -> Result<Option<JobDetails>, RayError> {
        let response = self.dashboard("GET", format!("{JOBS}{}", path_segment(id)?), None)?;
        if response.status == 404 {
            return Ok(None);
        }
        decode("GetJobInfo", &response).map(Some)
    }

    /// `GET /api/jobs/`: every job the head knows, submitted ones first. A head without the Jobs API (404)
    /// has no jobs.
    pub fn list_jobs(&self) -> Result<Vec<JobDetails>, RayError> {
        let response = self.dashboard("GET", JOBS.to_string(), None)?;
        if response.status == 404 {
            return Ok(Vec::new());
        }
        decode("ListJobs", &response)
    }

    /// `POST /api/jobs/{id}/stop`. Ray answers `stopped: false` when there was nothing to stop; the job is
    /// then looked up, and only a job that is still not finished makes this fail.
    pub fn stop_job(&self, id: &str) -> Result<StopOutcome, RayError> {
        let path = format!("{JOBS}{}/stop", path_segment(id)?);
        let response = self.dashboard("POST", path, None)?;
        if response.status == 404 {
            return Ok(StopOutcome::NotFound);
        }
        let answer: StopResponse = decode("StopJob", &response)?;
        if answer.stopped {
            return Ok(StopOutcome::Stopped);
        }
        match self.job_info(id)? {
            None => Ok(StopOutcome::NotFound),
            Some(info) if info.status.is_terminal() => Ok(StopOutcome::AlreadyFinished(info.status)),
            Some(info) => Err(RayError::NotStopped {
                id: id.to_string(),
                status: info.status,
            }),
        }
    }

    /// `GET /api/jobs/{id}/logs`: the driver's whole log so far; `None` when the job is unknown.
    pub fn job_logs(&self, id: &str) -> Result<Option<String>, RayError> {
        let response = self.dashboard("GET", format!("{JOBS}{}/logs", path_segment(id)?), None)?;
        if response.status == 404 {
            return Ok(None);
        }
        let answer: LogsResponse = decode("GetJobLog", &response)?;
        Ok(Some(answer.logs.unwrap_or_default()))
    }

    /// `DELETE /api/jobs/{id}`: forgets a finished job (its log files stay). Returns whether Ray deleted
    /// something; an unknown job is `false`. Deleting a job that is still running is an error (Ray's 500).
    pub fn delete_job(&self, id: &str) -> Result<bool, RayError> {
        let response = self.dashboard("DELETE", format!("{JOBS}{}", path_segment(id)?), None)?;
        if response.status == 404 {
            return Ok(false);
        }
        if !is_success(response.status) {
            return Err(status_error("DeleteJob", &response));
        }
        let answer: DeleteResponse = decode("DeleteJob", &response)?;
        Ok(answer.deleted)
    }
}

#[cfg(test)]
mod tests;
