//! The clocks that can end a RayJob regardless of what Ray says. Each check returns whether it failed the
//! RayJob (and then the status says why); all are judged against the reconcile's single `now`.

use kuberay_crds::{JobDeploymentStatus, JobFailedReason, JobStatus, RayJobStatus};
use kuberay_plugin_sdk::Host;
use kuberay_rules::time;

use crate::{consts::SUBMITTER_FINISHED_TIMEOUT_SECONDS, context::Ctx, status};

fn started(job_status: &RayJobStatus) -> Option<(i64, String)> {
    let start = job_status.start_time.as_ref()?;
    Some((time::seconds(start), time::go_default(start)))
}

/// `activeDeadlineSeconds`, counted from `startTime`.
pub fn active<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> bool {
    let (Some(limit), Some((start, printed))) = (ctx.spec().active_deadline_seconds, started(job_status))
    else {
        return false;
    };
    if ctx.now < start + i64::from(limit) {
        return false;
    }
    status::fail(
        job_status,
        JobFailedReason::DeadlineExceeded,
        format!(
            "The RayJob has passed the activeDeadlineSeconds. StartTime: {printed}. ActiveDeadlineSeconds: {limit}"
        ),
    );
    true
}

/// `preRunningDeadlineSeconds`: the job must be running this long after `startTime`.
pub fn pre_running<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> bool {
    let (Some(limit), Some((start, printed))) =
        (ctx.spec().pre_running_deadline_seconds, started(job_status))
    else {
        return false;
    };
    if ctx.now < start + i64::from(limit) {
        return false;
    }
    status::fail(
        job_status,
        JobFailedReason::PreRunningDeadlineExceeded,
        format!(
            "The RayJob has passed the preRunningDeadlineSeconds. StartTime: {printed}. \
             PreRunningDeadlineSeconds: {limit}"
        ),
    );
    true
}

/// Ray says the job ended, but the RayJob is still `Running` long after (a submitter that never exits):
/// end the RayJob as Ray's status says.
pub fn transition_grace_period<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> bool {
    let ray_status = status::job_status(job_status);
    if !ray_status.is_terminal() || status::deployment(job_status) != JobDeploymentStatus::Running {
        return false;
    }
    let Some(end) = job_status.ray_job_info.as_ref().and_then(|i| i.end_time.as_ref()) else {
        return false;
    };
    if ctx.now < time::seconds(end) + ctx.env.rayjob_transition_grace_period_seconds {
        return false;
    }
    job_status.job_deployment_status = Some(if ray_status == JobStatus::Failed {
        JobDeploymentStatus::Failed
    } else {
        JobDeploymentStatus::Complete
    });
    job_status.reason = Some(JobFailedReason::JobDeploymentStatusTransitionGracePeriodExceeded);
    job_status.message = Some(
        "JobDeploymentStatus does not transition to Complete or Failed within the grace period after \
         JobStatus reaches a terminal state."
            .into(),
    );
    true
}

/// The dashboard has not answered a status query for too long.
pub fn status_check_timeout<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> bool {
    let Some(since) = job_status.job_status_check_failure_start_time.clone() else {
        return false;
    };
    let timeout = ctx.env.rayjob_status_check_timeout_seconds;
    if ctx.now < time::seconds(&since) + timeout {
        return false;
    }
    status::fail(
        job_status,
        JobFailedReason::JobStatusCheckTimeoutExceeded,
        format!(
            "Job status checks have been failing since {}; exceeded timeout of {timeout}s",
            time::date_time(&since)
        ),
    );
    true
}

/// The submitter finished but Ray's job is still not terminal well after: it never will be.
pub fn submitter_finished<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &mut RayJobStatus,
    finished_at: i64,
) -> bool {
    if ctx.now < finished_at + SUBMITTER_FINISHED_TIMEOUT_SECONDS {
        return false;
    }
    job_status.job_status = Some(JobStatus::Failed);
    status::fail(
        job_status,
        JobFailedReason::JobDeploymentStatusTransitionGracePeriodExceeded,
        format!(
            "The RayJob submitter finished at {} but the ray job did not reach terminal state within {}s",
            time::date_time(&time::from_seconds(finished_at)),
            SUBMITTER_FINISHED_TIMEOUT_SECONDS
        ),
    );
    true
}

/// The first failed status query starts the clock; returns whether that changed the status.
pub fn record_status_check_failure<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> bool {
    if job_status.job_status_check_failure_start_time.is_some() {
        return false;
    }
    job_status.job_status_check_failure_start_time = Some(time::from_seconds(ctx.now));
    true
}

/// A successful query stops the clock; returns whether that changed the status.
pub fn clear_status_check_failure(job_status: &mut RayJobStatus) -> bool {
    job_status.job_status_check_failure_start_time.take().is_some()
}
