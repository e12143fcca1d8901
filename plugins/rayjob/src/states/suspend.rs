//! Suspension and retries, which share their clean-up. `suspend: true` moves an `Initializing` or
//! `Running` RayJob to `Suspending`; `Suspending` (and `Retrying`) delete the cluster and the submitter Job,
//! wait until both are gone, and only then forget the run in the status. The deletion is atomic: once
//! `Suspending`, it completes even if `suspend` is turned off meanwhile, so a RayJob never resumes on half a
//! cluster. `Suspended` waits for `suspend: false` and starts over from `New`.

use k8s_openapi::api::batch::v1::Job;
use kuberay_crds::{JobDeploymentStatus, JobStatus, JobSubmissionMode, RayJobStatus};
use kuberay_plugin_sdk::{Event, Host, Kind, LogLevel, Outcome, ReconcileError};

use super::Step;
use crate::{
    batch, cluster,
    consts::{REQUEUE, action, reason},
    context::Ctx,
    spec, status,
};

/// Moves to `Suspending` if the user asked for it; returns whether it did.
pub fn requested<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> bool {
    if !spec::suspend(ctx.spec()) {
        return false;
    }
    job_status.job_deployment_status = Some(JobDeploymentStatus::Suspending);
    true
}

/// `Suspending` and `Retrying`.
pub fn release<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> Result<Step, ReconcileError> {
    let cluster_gone = cluster::delete(ctx, job_status)?;
    let submitter_gone = delete_submitter(ctx)?;
    if !(cluster_gone && submitter_gone) {
        ctx.log(
            LogLevel::Info,
            "waiting for the cluster and the submitter to be deleted before the status moves on",
        );
        return Ok(Step::Stop(Outcome::requeue_after(REQUEUE)));
    }
    batch::cleanup(ctx, job_status)?;
    let next = match status::deployment(job_status) {
        JobDeploymentStatus::Suspending => JobDeploymentStatus::Suspended,
        _ => JobDeploymentStatus::New,
    };
    *job_status = RayJobStatus {
        job_status: Some(JobStatus::New),
        job_deployment_status: Some(next),
        start_time: job_status.start_time.take(),
        end_time: job_status.end_time.take(),
        succeeded: job_status.succeeded,
        failed: job_status.failed,
        observed_generation: job_status.observed_generation,
        ..RayJobStatus::default()
    };
    Ok(Step::Record)
}

/// `Suspended`.
pub fn suspended<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> Step {
    if spec::suspend(ctx.spec()) {
        return Step::Stop(Outcome::done());
    }
    job_status.job_status = Some(JobStatus::New);
    job_status.job_deployment_status = Some(JobDeploymentStatus::New);
    Step::Record
}

/// Deletes the submitter Job so that a resumed or retried RayJob gets a fresh one; returns whether it is
/// gone. Only `K8sJobMode` has one.
fn delete_submitter<H: Host>(ctx: &Ctx<'_, H>) -> Result<bool, ReconcileError> {
    if matches!(
        ctx.mode(),
        JobSubmissionMode::HttpMode | JobSubmissionMode::SidecarMode
    ) {
        return Ok(true);
    }
    let Some(job) = ctx.get::<Job>(&ctx.name)? else {
        return Ok(true);
    };
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(false);
    }
    let key = ctx.key(&ctx.name);
    match ctx
        .host
        .delete(&Kind::of::<Job>(), &ctx.name, job.metadata.uid.as_deref())
    {
        Ok(()) => {
            ctx.event(
                Event::normal(
                    reason::DELETED_RAYJOB_SUBMITTER,
                    action::DELETE,
                    format!("Deleted submitter K8s Job {key}"),
                )
                .about(Kind::of::<Job>(), &ctx.name),
            );
            Ok(false)
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_DELETE_RAYJOB_SUBMITTER,
                action::DELETE,
                format!("Failed to delete submitter K8s Job {key}: {}", e.message()),
            ));
            Err(e.into())
        }
    }
}
