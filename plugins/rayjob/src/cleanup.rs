//! The finalizer `ray.io/rayjob-finalizer`: a RayJob that is deleted while its Ray job may still run asks
//! Ray to stop the job first (on a selected cluster the job would otherwise outlive its RayJob; on an owned
//! one it would be killed abruptly with the cluster). Like KubeRay, the finalizer goes whether or not the
//! stop worked: a RayJob must never be stuck because its cluster is unreachable.

use kuberay_crds::{RayJob, RayJobStatus, constants::finalizers};
use kuberay_plugin_sdk::{Host, LogLevel, Outcome, ReconcileError, ray::jobs::StopOutcome};

use crate::{context::Ctx, status};

pub fn run<H: Host>(ctx: &Ctx<'_, H>) -> Result<Outcome, ReconcileError> {
    let job_status = ctx.job.status.clone().unwrap_or_default();
    if !status::job_status(&job_status).is_terminal() {
        stop(ctx, &job_status);
    }
    if has_finalizer(&ctx.job) {
        ctx.host.remove_finalizer(finalizers::RAY_JOB_STOP_JOB)?;
    }
    Ok(Outcome::done())
}

fn has_finalizer(job: &RayJob) -> bool {
    job.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizers::RAY_JOB_STOP_JOB)
}

/// Asks Ray to stop the job, if one may have been submitted; failures are logged, not returned.
fn stop<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) {
    let (cluster, job_id) = (status::cluster_name(job_status), status::job_id(job_status));
    if cluster.is_empty() || job_id.is_empty() {
        return;
    }
    let fields = [("cluster", cluster), ("submission-id", job_id)];
    match ctx.head(cluster).stop_job(job_id) {
        Ok(StopOutcome::Stopped) => ctx.host.log(LogLevel::Info, "stopped the Ray job", &fields),
        Ok(StopOutcome::AlreadyFinished(s)) => ctx.host.log(
            LogLevel::Info,
            &format!("the Ray job had already ended ({s})"),
            &fields,
        ),
        Ok(StopOutcome::NotFound) => ctx.host.log(LogLevel::Info, "Ray does not know the job", &fields),
        Err(e) => ctx.host.log(
            LogLevel::Warn,
            &format!("failed to stop the Ray job; removing the finalizer anyway: {e}"),
            &fields,
        ),
    }
}
