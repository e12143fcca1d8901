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

use std::sync::Arc;

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
        crate::validate::namespace(target.namespace)?;
        crate::validate::path_name("clustername", target.cluster)?;
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
        if self
            .on_head(&request, target, move |head| head.delete_job(&id))
            .await?
        {
            Ok(Response::new(()))
        } else {
            Err(not_found(&message.submissionid))
        }
    }
}
