//! `Running`: follow the Ray job until it ends. Every reconcile asks Ray for the job under the submission id
//! recorded in the status, before anything else touches Ray, so a job submitted by an earlier reconcile (or
//! an earlier operator) is found, not submitted again. In `HTTPMode` a job Ray does not know is submitted here,
//! and "already submitted" counts as success. With a submitter (K8sJobMode, SidecarMode) the RayJob ends only
//! when the submitter has finished too.

use kuberay_crds::{
    JobDeploymentStatus, JobFailedReason, JobStatus, JobSubmissionMode, RayJobStatus, RayJobStatusInfo,
};
use kuberay_plugin_sdk::{
    Host, LogLevel, Outcome, RayHead, ReconcileError,
    ray::jobs::{JobDetails, SubmitOutcome},
};
use kuberay_rules::time;

use super::{Step, suspend};
use crate::{
    cluster,
    consts::REQUEUE,
    context::Ctx,
    dashboard, deadlines, service, spec, status,
    submitter::{self, Check},
};

pub fn run<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> Result<Step, ReconcileError> {
    if suspend::requested(ctx, job_status)
        || deadlines::active(ctx, job_status)
        || deadlines::transition_grace_period(ctx, job_status)
        || deadlines::status_check_timeout(ctx, job_status)
    {
        return Ok(Step::Record);
    }
    let cluster = cluster::get_or_create(ctx, job_status)?;
    service::reconcile(ctx, &cluster)?;
    let cluster_name = status::cluster_name(job_status).to_string();
    let mut check = Check::default();
    if spec::has_submitter(ctx.spec()) {
        check = submitter::check(ctx, job_status, &cluster_name)?;
        if check.failed {
            return Ok(Step::Record);
        }
    }
    let head = ctx.head(&cluster_name);
    let step = match head.job_info(status::job_id(job_status)) {
        Ok(Some(info)) => {
            deadlines::clear_status_check_failure(job_status);
            follow(ctx, job_status, &info, cluster.status.clone(), check.finished_at)
        }
        Ok(None) => not_found(ctx, job_status, &head, check.finished_at),
        Err(e) => {
            ctx.log(LogLevel::Warn, &format!("failed to get the Ray job's info: {e}"));
            if check
                .finished_at
                .is_some_and(|t| deadlines::submitter_finished(ctx, job_status, t))
            {
                return Ok(Step::Record);
            }
            recorded_or_wait(deadlines::record_status_check_failure(ctx, job_status))
        }
    };
    Ok(step)
}

/// Ray knows the job: copy its status, and end the RayJob once both Ray and the submitter are done.
fn follow<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &mut RayJobStatus,
    info: &JobDetails,
    cluster_status: Option<kuberay_crds::RayClusterStatus>,
    finished_at: Option<i64>,
) -> Step {
    let ray_status = JobStatus::from(info.status.as_str());
    let submitter_done = !spec::has_submitter(ctx.spec()) || finished_at.is_some();
    let terminal = ray_status.is_terminal() && submitter_done;
    // Judged after asking Ray (KubeRay judges it before): a job that did end is reported as it ended even
    // when the operator comes back long after the submitter finished.
    if !terminal && finished_at.is_some_and(|t| deadlines::submitter_finished(ctx, job_status, t)) {
        return Step::Record;
    }
    let (deployment, reason) = match (terminal, &ray_status) {
        (true, JobStatus::Failed) => (JobDeploymentStatus::Failed, Some(JobFailedReason::AppFailed)),
        (true, _) => (JobDeploymentStatus::Complete, None),
        (false, _) => (JobDeploymentStatus::Running, None),
    };
    job_status.ray_cluster_status = cluster_status;
    job_status.job_status = Some(ray_status);
    job_status.job_deployment_status = Some(deployment);
    job_status.reason = reason;
    job_status.message = info.message.clone();
    let ray_times = job_status
        .ray_job_info
        .get_or_insert_with(RayJobStatusInfo::default);
    if let Some(start) = info.start_time.filter(|t| *t != 0) {
        ray_times.start_time = Some(time::from_millis(start));
    }
    if let Some(end) = info.end_time.filter(|t| *t != 0) {
        ray_times.end_time = Some(time::from_millis(end));
    }
    Step::Record
}

/// Ray does not know the job (yet).
fn not_found<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &mut RayJobStatus,
    head: &RayHead<'_, H>,
    finished_at: Option<i64>,
) -> Step {
    if ctx.mode() == JobSubmissionMode::HttpMode {
        return submit(ctx, job_status, head);
    }
    match finished_at {
        Some(t) if deadlines::submitter_finished(ctx, job_status, t) => Step::Record,
        Some(_) => {
            status::fail(
                job_status,
                JobFailedReason::AppFailed,
                "Submitter completed but Ray job not found in RayCluster.".into(),
            );
            Step::Record
        }
        // The submitter has not submitted yet.
        None => Step::Stop(Outcome::requeue_after(REQUEUE)),
    }
}

/// `HTTPMode`: the plugin is the submitter. The submission id makes this idempotent.
fn submit<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus, head: &RayHead<'_, H>) -> Step {
    let job_id = status::job_id(job_status).to_string();
    let result = dashboard::submit_request(&ctx.job, job_status)
        .and_then(|request| head.submit_job(&request).map_err(|e| e.to_string()));
    match result {
        Ok(outcome) => {
            let what = match outcome {
                SubmitOutcome::Submitted { .. } => "submitted the Ray job",
                SubmitOutcome::AlreadySubmitted { .. } => "the Ray job was already submitted",
            };
            ctx.host.log(LogLevel::Info, what, &[("submission-id", &job_id)]);
            recorded_or_wait(deadlines::clear_status_check_failure(job_status))
        }
        Err(e) => {
            ctx.host.log(
                LogLevel::Warn,
                &format!("failed to submit the Ray job: {e}"),
                &[("submission-id", &job_id)],
            );
            recorded_or_wait(deadlines::record_status_check_failure(ctx, job_status))
        }
    }
}

/// Record the status if the step changed it, else look again after the usual interval.
fn recorded_or_wait(changed: bool) -> Step {
    if changed {
        Step::Record
    } else {
        Step::Stop(Outcome::requeue_after(REQUEUE))
    }
}
