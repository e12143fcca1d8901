//! `Waiting` (`InteractiveMode` only): the cluster is up and the user submits the job themselves; the RayJob
//! follows it once `spec.jobId` names the submission.

use kuberay_crds::{JobDeploymentStatus, RayJobStatus};
use kuberay_plugin_sdk::{Host, Outcome, ReconcileError};

use super::Step;
use crate::{consts::REQUEUE, context::Ctx, deadlines, spec};

pub fn run<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> Result<Step, ReconcileError> {
    if deadlines::pre_running(ctx, job_status) {
        return Ok(Step::Record);
    }
    let Some(job_id) = spec::job_id(ctx.spec()) else {
        return Ok(Step::Stop(Outcome::requeue_after(REQUEUE)));
    };
    job_status.job_id = Some(job_id.to_string());
    job_status.job_deployment_status = Some(JobDeploymentStatus::Running);
    Ok(Step::Record)
}
