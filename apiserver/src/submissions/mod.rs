//! `RayJobSubmissionService`: jobs submitted straight to the Ray head of a RayCluster through Ray's Jobs
//! API, with the Ray-head routing, timeouts, status-code handling and auth token the operator uses.
//!
//! Unlike KubeRay's apiserver, which always dials `<cluster>-head-svc.<ns>.svc.cluster.local:8265`, the head
//! is found as the operator finds it (custom head Service names, the `dashboard` port of the Service) and
//! reached directly or, with `--use-kubernetes-proxy`, through the API server's `services/proxy` as the
//! caller. Any RayCluster the caller may read can be used, not only those created through this API: the
//! caller's own rights decide.

mod convert;
mod head;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use kuberay_plugin_sdk::ray::{
    RayError, RayHead,
    jobs::{StopOutcome, SubmitOutcome},
};
use tonic::{Request, Response, Status};

pub use self::head::Heads;
use self::{
    convert::{job_info, ray_error, submit_request},
    head::Transport,
};
use crate::{
    api::{self, ray_job_submission_service_server::RayJobSubmissionService},
    context::context,
    error::{ApiError, ApiResult},
};

/// The gRPC service.
pub struct JobSubmissions {
    heads: Arc<Heads>,
}

/// Where a call goes: the namespace and cluster of its request, and the HTTP method it sends to the head
/// (which decides the `services/proxy` verb the caller needs).
struct Target<'a> {
    namespace: &'a str,
    cluster: &'a str,
    method: &'static str,
}

impl JobSubmissions {
    pub fn new(heads: Arc<Heads>) -> Self {
        Self { heads }
    }

    /// Runs `call` with the typed Jobs API client on the head of the target cluster, once the caller may
    /// use it.
    async fn on_head<T, R>(
        &self,
        request: &Request<T>,
        target: Target<'_>,
        call: impl FnOnce(&RayHead<'_, Transport>) -> Result<R, RayError> + Send + 'static,
    ) -> ApiResult<R>
    where
        R: Send + 'static,
    {
        // The cluster is looked up as KubeRay's server looks it up (its messages included).
        crate::validate::object_ref("Cluster", target.namespace, target.cluster)?;
        let head = self
            .heads
            .open(context(request)?, target.namespace, target.cluster)
            .await?;
        head.authorize(target.method).await?;
        head.run(move |transport| call(&RayHead::new(transport, "")).map_err(ray_error))
            .await
    }
}

fn require(field: &str, value: &str) -> ApiResult<()> {
    if value.trim().is_empty() {
        return Err(ApiError::InvalidArgument(format!("{field} is required")));
    }
    Ok(())
}

fn not_found(id: &str) -> Status {
    ApiError::NotFound(format!("job {id:?} does not exist")).into()
}

#[tonic::async_trait]
impl RayJobSubmissionService for JobSubmissions {
    async fn submit_ray_job(
        &self,
        request: Request<api::SubmitRayJobRequest>,
    ) -> Result<Response<api::SubmitRayJobReply>, Status> {
        let message = request.get_ref();
        let submission = message
            .jobsubmission
            .as_ref()
            .ok_or_else(|| ApiError::InvalidArgument("jobsubmission is required".into()))?;
        let ray_request = submit_request(submission)?;
        let target = Target {
            namespace: &message.namespace,
            cluster: &message.clustername,
            method: "POST",
        };
        let outcome = self
            .on_head(&request, target, move |head| head.submit_job(&ray_request))
            .await?;
        match outcome {
            SubmitOutcome::Submitted { job_id } => Ok(Response::new(api::SubmitRayJobReply {
                submission_id: job_id,
            })),
            SubmitOutcome::AlreadySubmitted { submission_id } => Err(ApiError::AlreadyExists(format!(
                "a job with submission id {submission_id:?} exists already on this cluster"
            ))
            .into()),
        }
    }

    async fn get_job_details(
        &self,
        request: Request<api::GetJobDetailsRequest>,
    ) -> Result<Response<api::JobSubmissionInfo>, Status> {
        let message = request.get_ref();
        let id = message.submissionid.clone();
        require("submissionid", &id)?;
        let target = Target {
            namespace: &message.namespace,
            cluster: &message.clustername,
            method: "GET",
        };
        let details = self
            .on_head(&request, target, move |head| head.job_info(&id))
            .await?
            .ok_or_else(|| not_found(&message.submissionid))?;
        Ok(Response::new(job_info(details)))
    }

    async fn get_job_log(
        &self,
        request: Request<api::GetJobLogRequest>,
    ) -> Result<Response<api::GetJobLogReply>, Status> {
        let message = request.get_ref();
        let id = message.submissionid.clone();
        require("submissionid", &id)?;
        let target = Target {
            namespace: &message.namespace,
            cluster: &message.clustername,
            method: "GET",
        };
        let log = self
            .on_head(&request, target, move |head| head.job_logs(&id))
            .await?
            .ok_or_else(|| not_found(&message.submissionid))?;
        Ok(Response::new(api::GetJobLogReply { log }))
    }

    async fn list_job_details(
        &self,
        request: Request<api::ListJobDetailsRequest>,
    ) -> Result<Response<api::ListJobSubmissionInfo>, Status> {
        let message = request.get_ref();
        let target = Target {
            namespace: &message.namespace,
            cluster: &message.clustername,
            method: "GET",
        };
        let jobs = self.on_head(&request, target, |head| head.list_jobs()).await?;
        Ok(Response::new(api::ListJobSubmissionInfo {
            submissions: jobs.into_iter().map(job_info).collect(),
        }))
    }

    async fn stop_ray_job(
        &self,
        request: Request<api::StopRayJobSubmissionRequest>,
    ) -> Result<Response<()>, Status> {
        let message = request.get_ref();
        let id = message.submissionid.clone();
        require("submissionid", &id)?;
        let target = Target {
            namespace: &message.namespace,
            cluster: &message.clustername,
            method: "POST",
        };
        match self
            .on_head(&request, target, move |head| head.stop_job(&id))
            .await?
        {
            StopOutcome::NotFound => Err(not_found(&message.submissionid)),
            StopOutcome::Stopped | StopOutcome::AlreadyFinished(_) => Ok(Response::new(())),
        }
    }

    async fn delete_ray_job(
        &self,
        request: Request<api::DeleteRayJobSubmissionRequest>,
    ) -> Result<Response<()>, Status> {
        let message = request.get_ref();
        let id = message.submissionid.clone();
        require("submissionid", &id)?;
        let target = Target {
            namespace: &message.namespace,
            cluster: &message.clustername,
            method: "DELETE",
        };
        match self
            .on_head(&request, target, move |head| delete_when_finished(head, &id))
            .await?
        {
            Deleted::Yes => Ok(Response::new(())),
            Deleted::NotFound => Err(not_found(&message.submissionid)),
            Deleted::NotFinished(refusal) => Err(ApiError::FailedPrecondition(format!(
                "job {} is not finished (stop it first): the Ray head refused to delete it: {refusal}",
                message.submissionid
            ))
            .into()),
        }
    }
}

/// How long a delete waits for a job that is not finished yet: one being stopped finishes within Ray's stop
/// grace period (`RAY_JOB_STOP_WAIT_TIME_S`, 3 s by default), as a client that stops and then deletes expects.
const DELETE_WAIT: Duration = Duration::from_secs(10);
/// How often the job is looked at meanwhile.
const DELETE_POLL: Duration = Duration::from_millis(250);

/// Ray's reason in its refusal to delete a job that is not finished (the line of its traceback that says
/// so), else the whole text.
fn not_finished_reason(text: &str) -> &str {
    text.lines()
        .find(|l| l.contains("non-terminal"))
        .unwrap_or(text)
        .trim()
}

/// What became of a delete.
enum Deleted {
    Yes,
    NotFound,
    /// The job was still not finished after [`DELETE_WAIT`]: Ray's refusal.
    NotFinished(String),
}

/// Deletes job `id` on `head`. Ray refuses to delete a job that is not finished (a 500 saying "non-terminal
/// state"), and a job is not finished for a moment after it was asked to stop: such a job is waited for, up
/// to [`DELETE_WAIT`], and then deleted; one still running then is refused with Ray's message (a 400, never
/// a 5xx that clients would retry). Runs on a blocking thread, as every call on a head does.
fn delete_when_finished(head: &RayHead<'_, Transport>, id: &str) -> Result<Deleted, RayError> {
    let deadline = Instant::now() + DELETE_WAIT;
    loop {
        let refusal = match head.delete_job(id) {
            Ok(true) => return Ok(Deleted::Yes),
            Ok(false) => return Ok(Deleted::NotFound),
            Err(RayError::Status { status, body, .. }) if status >= 500 => body,
            Err(e) => return Err(e),
        };
        // Another failure of the head than a job not finished: Ray's own error.
        if !refusal.contains("non-terminal") {
            return Err(RayError::Status {
                call: "DeleteJob",
                status: 500,
                body: refusal,
            });
        }
        match head.job_info(id)? {
            None => return Ok(Deleted::NotFound),
            _ if Instant::now() >= deadline => {
                return Ok(Deleted::NotFinished(not_finished_reason(&refusal).to_string()));
            }
            // Finished by now: delete it again at once.
            Some(info) if info.status.is_terminal() => {}
            Some(_) => std::thread::sleep(DELETE_POLL),
        }
    }
}
