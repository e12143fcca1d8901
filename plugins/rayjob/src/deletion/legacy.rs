//! The deprecated `onSuccess`/`onFailure` pair: one policy for a job Ray reports `SUCCEEDED`, one for
//! `FAILED`, both after `ttlSecondsAfterFinished`. Other endings (a stopped job, a RayJob that failed before
//! Ray had a say) trigger neither.

use kuberay_crds::{DeletionPolicyType, DeletionStrategy, JobStatus, RayJobStatus};
use kuberay_plugin_sdk::{Host, Outcome, ReconcileError};

use super::{actions, ended, wait_until};
use crate::{context::Ctx, spec, status};

pub fn run<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &RayJobStatus,
    strategy: &DeletionStrategy,
) -> Result<Outcome, ReconcileError> {
    let policy = match status::job_status(job_status) {
        JobStatus::Succeeded => strategy.on_success.as_ref().and_then(|p| p.policy),
        JobStatus::Failed => strategy.on_failure.as_ref().and_then(|p| p.policy),
        _ => None,
    };
    let Some(policy) = policy.filter(|p| *p != DeletionPolicyType::DeleteNone) else {
        return Ok(Outcome::done());
    };
    let at = ended(ctx, job_status) + spec::ttl_seconds_after_finished(ctx.spec());
    if at > ctx.now {
        return Ok(wait_until(ctx, at));
    }
    if !actions::completed(ctx, job_status, policy)? {
        actions::execute(ctx, job_status, policy)?;
    }
    Ok(Outcome::done())
}
