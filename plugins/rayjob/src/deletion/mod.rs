//! What happens after a RayJob ends (`Complete` or `Failed`): nothing to a selected cluster; otherwise
//! `deletionStrategy` (its rules, or the legacy `onSuccess`/`onFailure` pair) if set, else
//! `shutdownAfterJobFinishes`, each after its TTL counted from `endTime`. The status is never written here:
//! deletions are checked against the cluster as it is, so repeating them is harmless.

pub mod actions;
mod legacy;
mod rules;

use std::time::Duration;

use kuberay_crds::{DeletionPolicyType, RayJobStatus};
use kuberay_plugin_sdk::{Host, LogLevel, Outcome, ReconcileError};
use kuberay_rules::time;

use crate::{cluster, consts::TTL_SLACK_SECONDS, context::Ctx, spec};

/// How much a policy deletes; when several rules are due at once the one that deletes most goes first.
pub fn impact(policy: DeletionPolicyType) -> u8 {
    match policy {
        DeletionPolicyType::DeleteNone => 1,
        DeletionPolicyType::DeleteWorkers => 2,
        DeletionPolicyType::DeleteCluster => 3,
        DeletionPolicyType::DeleteSelf => 4,
    }
}

pub fn run<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) -> Result<Outcome, ReconcileError> {
    if spec::uses_cluster_selector(ctx.spec()) {
        return Ok(Outcome::done());
    }
    if let Some(strategy) = &ctx.spec().deletion_strategy {
        return match &strategy.deletion_rules {
            Some(rules) => rules::run(ctx, job_status, rules),
            None => legacy::run(ctx, job_status, strategy),
        };
    }
    if spec::shutdown_after_job_finishes(ctx.spec()) {
        return shutdown(ctx, job_status);
    }
    Ok(Outcome::done())
}

/// `shutdownAfterJobFinishes`: delete the cluster once the TTL has passed. The submitter Job stays, with the
/// driver's logs (a finished Job holds no resources).
fn shutdown<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) -> Result<Outcome, ReconcileError> {
    let at = ended(ctx, job_status) + spec::ttl_seconds_after_finished(ctx.spec());
    if at > ctx.now {
        return Ok(wait_until(ctx, at));
    }
    cluster::delete(ctx, job_status)?;
    ctx.log(LogLevel::Info, "the RayJob finished; its cluster is deleted");
    Ok(Outcome::done())
}

/// When the RayJob ended. `endTime` is always set on a finished RayJob; should it be missing (a status
/// edited by hand) the start counts, so that the TTL still runs out.
fn ended<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) -> i64 {
    job_status
        .end_time
        .as_ref()
        .or(job_status.start_time.as_ref())
        .map_or(ctx.now, time::seconds)
}

/// Reconcile again just after `at`.
fn wait_until<H: Host>(ctx: &Ctx<'_, H>, at: i64) -> Outcome {
    let seconds = (at - ctx.now).max(0) + TTL_SLACK_SECONDS;
    Outcome::requeue_after(Duration::from_secs(u64::try_from(seconds).unwrap_or_default()))
}
