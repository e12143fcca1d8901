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
    RayHead,
    jobs::{StopOutcome, SubmitOutcome},
};
use tonic::{Request, Response, Status};

pub use self::head::Heads;
use self::{
    convert::{job_info, ray_error, submit_request},
    head::Head,
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

impl JobSubmissions {
    pub fn new(heads: Arc<Heads>) -> Self {
        Self { heads }
    }

    /// The cluster's head, checked for `method`, for the caller of `request`.
    async fn head<T>(
        &self,
        request: &Request<T>,
        namespace: &str,
        cluster: &str,
        method: &str,
    ) -> ApiResult<Head> {
        crate::validate::namespace(namespace)?;
        crate::validate::path_name("clustername", cluster)?;
        let head = self.heads.open(context(request)?, namespace, cluster).await?;
        head.authorize(method).await?;
        Ok(head)
    }
}

fn require(field: &str, value: &str) -> ApiResult<()> {
    if value.trim().is_empty() {
        return Err(ApiError::InvalidArgument(format!("{field} is required")));
    }
    Ok(())
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
        let head = self
            .head(&request, &message.namespace, &message.clustername, "POST")
            .await?;
        let outcome = head
            .run(move |t| RayHead::new(t, "").submit_job(&ray_request).map_err(ray_error))
            .await?;
        let submission_id = match outcome {
            SubmitOutcome::Submitted { job_id } => job_id,
            SubmitOutcome::AlreadySubmitted { submission_id } => {
                return Err(ApiError::AlreadyExists(format!(
                    "a job with submission id {submission_id:?} exists already on this cluster"
                ))
                .into());
            }
        };
        Ok(Response::new(api::SubmitRayJobReply { submission_id }))
    }

    async fn get_job_details(
        &self,
        request: Request<api::GetJobDetailsRequest>,
    ) -> Result<Response<api::JobSubmissionInfo>, Status> {
        let message = request.get_ref();
        let id = message.submissionid.clone();
        require("submissionid", &id)?;
        let head = self
            .head(&request, &message.namespace, &message.clustername, "GET")
            .await?;
        let details = head
            .run(move |t| RayHead::new(t, "").job_info(&id).map_err(ray_error))
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("job {:?} does not exist", message.submissionid)))?;
        Ok(Response::new(job_info(details)))
    }

    async fn get_job_log(
        &self,
        request: Request<api::GetJobLogRequest>,
    ) -> Result<Response<api::GetJobLogReply>, Status> {
        let message = request.get_ref();
        let id = message.submissionid.clone();
        require("submissionid", &id)?;
        let head = self
            .head(&request, &message.namespace, &message.clustername, "GET")
            .await?;
        let log = head
            .run(move |t| RayHead::new(t, "").job_logs(&id).map_err(ray_error))
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("job {:?} does not exist", message.submissionid)))?;
        Ok(Response::new(api::GetJobLogReply { log }))
    }

    async fn list_job_details(
        &self,
        request: Request<api::ListJobDetailsRequest>,
    ) -> Result<Response<api::ListJobSubmissionInfo>, Status> {
        let message = request.get_ref();
        let head = self
            .head(&request, &message.namespace, &message.clustername, "GET")
            .await?;
        let jobs = head
            .run(|t| RayHead::new(t, "").list_jobs().map_err(ray_error))
            .await?;
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
        let head = self
            .head(&request, &message.namespace, &message.clustername, "POST")
            .await?;
        match head
            .run(move |t| RayHead::new(t, "").stop_job(&id).map_err(ray_error))
            .await?
        {
            StopOutcome::NotFound => {
                Err(ApiError::NotFound(format!("job {:?} does not exist", message.submissionid)).into())
            }
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
        let head = self
            .head(&request, &message.namespace, &message.clustername, "DELETE")
            .await?;
        let deleted = head
            .run(move |t| RayHead::new(t, "").delete_job(&id).map_err(ray_error))
            .await?;
        if deleted {
            Ok(Response::new(()))
        } else {
            Err(ApiError::NotFound(format!("job {:?} does not exist", message.submissionid)).into())
        }
    }
}
