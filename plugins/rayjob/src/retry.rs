//! `backoffLimit`: a failed RayJob is run again from scratch, on a new cluster, until it has failed
//! `backoffLimit + 1` times. Deadlines and status-check timeouts are final (another attempt would hit them
//! again). The counters `succeeded` and `failed` are kept here, at the moment the outcome is recorded.

use kuberay_crds::{JobDeploymentStatus, JobFailedReason, JobStatus, RayJobSpec, RayJobStatus};

use crate::status;

/// Counts a RayJob that has just ended and turns a retryable failure into `Retrying`.
pub fn count_and_retry(spec: &RayJobSpec, job_status: &mut RayJobStatus) {
    let deployment = status::deployment(job_status);
    let mut failed = job_status.failed.unwrap_or(0);
    let mut succeeded = job_status.succeeded.unwrap_or(0);
    if deployment == JobDeploymentStatus::Failed {
        failed = failed.saturating_add(1);
    }
    if deployment == JobDeploymentStatus::Complete && status::job_status(job_status) == JobStatus::Succeeded {
        succeeded = succeeded.saturating_add(1);
    }
    job_status.failed = Some(failed);
    job_status.succeeded = Some(succeeded);

    let Some(limit) = spec.backoff_limit else {
        return;
    };
    let final_reason = matches!(
        job_status.reason,
        Some(JobFailedReason::DeadlineExceeded | JobFailedReason::JobStatusCheckTimeoutExceeded)
    );
    if deployment == JobDeploymentStatus::Failed && failed < limit.saturating_add(1) && !final_reason {
        job_status.job_deployment_status = Some(JobDeploymentStatus::Retrying);
    }
}
