//! The batch scheduler the operator was configured with (`batchScheduler`, KubeRay's `--batch-scheduler`):
//! what KubeRay's RayJob controller does with it. In `Initializing`, before the cluster: the scheduler's
//! refusal of the RayJob, or Volcano's PodGroup of the RayJob created or resized; the decorations of the
//! cluster it creates (`K8sJobMode` only) and of the submitter Job's Pod template; when the RayJob is
//! suspended, retried or finished, Volcano's PodGroup resized to what the cluster still holds. The rules are
//! `kuberay_rules::batch_scheduler`'s.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use kuberay_crds::{JobSubmissionMode, RayCluster, RayJob, RayJobStatus};
use kuberay_plugin_sdk::{Event, Host, ReconcileError};
use kuberay_rules::batch_scheduler::{
    BatchScheduler, Parent,
    volcano::{self, SyncError},
    yunikorn::SUBMITTER_GROUP,
};

use crate::{
    consts::{action, reason},
    context::Ctx,
    status,
};

fn sync_error(error: SyncError) -> ReconcileError {
    match error {
        SyncError::Host(e) => e.into(),
        SyncError::Invalid(message) => ReconcileError::Transient(message),
    }
}

/// KubeRay's `DoBatchSchedulingOnSubmission` for a RayJob in `Initializing`: an error while the scheduler
/// refuses the RayJob (retried, as KubeRay does), Volcano's PodGroup kept.
pub fn submit<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), ReconcileError> {
    let Some(scheduler) = ctx.batch_scheduler else {
        return Ok(());
    };
    if let Some(refusal) = scheduler.refuses_job(&ctx.job) {
        return Err(ReconcileError::Transient(refusal));
    }
    if scheduler == BatchScheduler::Volcano
        && let Some(size) = volcano::job_size(&ctx.job)
    {
        volcano::sync(ctx.host, Parent::Job(&ctx.job), &size).map_err(sync_error)?;
    }
    Ok(())
}

/// The cluster a `K8sJobMode` RayJob creates gets the scheduler's labels and annotations for the RayJob.
pub fn decorate_cluster<H: Host>(ctx: &Ctx<'_, H>, cluster: &mut RayCluster) {
    if let Some(scheduler) = ctx.batch_scheduler
        && ctx.mode() == JobSubmissionMode::K8sJobMode
    {
        scheduler
            .decoration(Parent::Job(&ctx.job), "")
            .apply_to_meta(&mut cluster.metadata);
    }
}

/// The submitter Job's Pod template, as the `submittergroup` of the RayJob's gang.
pub fn decorate_submitter<H: Host>(ctx: &Ctx<'_, H>, template: &mut PodTemplateSpec) {
    if let Some(scheduler) = ctx.batch_scheduler {
        scheduler
            .decoration(Parent::Job(&ctx.job), SUBMITTER_GROUP)
            .apply_to_template(template);
    }
}

/// KubeRay's `cleanupBatchSchedulerResources` with the RayJob's status `job_status`: Volcano's PodGroup
/// resized to what the RayJob's cluster still holds, reported by an event either way.
pub fn cleanup<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) -> Result<(), ReconcileError> {
    if ctx.batch_scheduler != Some(BatchScheduler::Volcano) {
        return Ok(());
    }
    let job = RayJob {
        status: Some(job_status.clone()),
        ..ctx.job.clone()
    };
    let key = ctx.key(&ctx.name);
    let resized = resize(ctx, &job);
    match &resized {
        Ok(false) => {}
        Ok(true) => ctx.event(Event::normal(
            reason::BATCH_SCHEDULER_CLEANED_UP,
            action::CLEANUP,
            format!("Cleaned up batch scheduler resources for RayJob {key}"),
        )),
        Err(e) => ctx.event(Event::warning(
            reason::FAILED_TO_CLEANUP_BATCH_SCHEDULER,
            action::CLEANUP,
            format!("Failed to cleanup batch scheduler resources for RayJob {key}: {e}"),
        )),
    }
    resized.map(drop)
}

fn resize<H: Host>(ctx: &Ctx<'_, H>, job: &RayJob) -> Result<bool, ReconcileError> {
    let cluster_name = job.status.as_ref().map(status::cluster_name).unwrap_or_default();
    let cluster = if cluster_name.is_empty() {
        None
    } else {
        ctx.get::<RayCluster>(cluster_name)?
    };
    let Some(size) = volcano::cleanup_size(job, cluster.as_ref()) else {
        return Ok(false);
    };
    volcano::sync(ctx.host, Parent::Job(job), &size).map_err(sync_error)
}
