//! One reconcile of a RayJob, in KubeRay's order: hand off RayJobs another controller manages, validate,
//! then run the state of `jobDeploymentStatus`; a state that moved the status on gets its retry check and is
//! recorded. Everything the plugin knows comes from the RayJob (its status above all) and from what exists
//! in the cluster: each reconcile runs in a fresh instance, with no memory of the previous one.

use kuberay_crds::{JobDeploymentStatus, JobFailedReason, RayJob, RayJobStatus};
use kuberay_plugin_sdk::{Event, Host, LogLevel, Outcome, ReconcileError, Request};
use serde_json::Value;

use crate::{
    batch, cleanup,
    consts::{REQUEUE, REQUEUE_AFTER_WRITE, action, reason},
    context::Ctx,
    deletion, retry,
    states::{Step, initializing, new, running, suspend, waiting},
    status,
    validation::{self, Invalid},
};

pub fn reconcile<H: Host>(host: &H, request: Request) -> Result<Outcome, ReconcileError> {
    let job = match request.object.to_typed::<RayJob>() {
        Ok(job) => job,
        Err(e) => return unreadable(host, &request.object.to_value()?, &e.to_string()),
    };
    if let Some(manager) = job
        .spec
        .managed_by
        .as_deref()
        .filter(|m| *m != kuberay_crds::MANAGED_BY_KUBERAY)
    {
        host.log(
            LogLevel::Info,
            "skipping RayJob managed by another controller",
            &[("managed-by", manager)],
        );
        return Ok(Outcome::done());
    }
    if job.metadata.deletion_timestamp.is_some() {
        // The finalizer is `cleanup`'s; without it there is nothing left to do.
        return Ok(Outcome::done());
    }
    let ctx = Ctx::new(host, job);
    let old = ctx.job.status.clone().unwrap_or_default();
    if let Err(invalid) = validation::validate(&ctx.job, ctx.gates) {
        return validation_failed(&ctx, old, &invalid);
    }
    let mut new = old.clone();
    let step = match status::deployment(&old) {
        JobDeploymentStatus::New => new::run(&ctx, &mut new)?,
        JobDeploymentStatus::Initializing => initializing::run(&ctx, &mut new)?,
        JobDeploymentStatus::Waiting => waiting::run(&ctx, &mut new)?,
        JobDeploymentStatus::Running => running::run(&ctx, &mut new)?,
        JobDeploymentStatus::Suspending | JobDeploymentStatus::Retrying => suspend::release(&ctx, &mut new)?,
        JobDeploymentStatus::Suspended => suspend::suspended(&ctx, &mut new),
        JobDeploymentStatus::Complete | JobDeploymentStatus::Failed => Step::Stop(finished(&ctx, &new)?),
        JobDeploymentStatus::ValidationFailed => Step::Stop(Outcome::done()),
        JobDeploymentStatus::Other(other) => {
            ctx.log(LogLevel::Warn, &format!("unknown jobDeploymentStatus {other:?}"));
            Step::Stop(Outcome::requeue_after(REQUEUE))
        }
    };
    match step {
        Step::Stop(outcome) => Ok(outcome),
        Step::Record => {
            retry::count_and_retry(ctx.spec(), &mut new);
            status::settle(&ctx.job, &old, &mut new, ctx.now);
            let wrote = status::write(&ctx, new)?;
            Ok(Outcome::requeue_after(if wrote {
                REQUEUE_AFTER_WRITE
            } else {
                REQUEUE
            }))
        }
    }
}

/// `Complete` and `Failed`: the deletions after the job, then (whatever they did) the batch scheduler's
/// clean-up, whose failure is only logged, as KubeRay's deferred call does.
fn finished<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) -> Result<Outcome, ReconcileError> {
    let outcome = deletion::run(ctx, job_status);
    if let Err(e) = batch::cleanup(ctx, job_status) {
        ctx.log(
            LogLevel::Warn,
            &format!("Failed to cleanup batch scheduler resources: {e}"),
        );
    }
    outcome
}

/// KubeRay ends an invalid RayJob in `ValidationFailed` and leaves it there; the event is recorded when the
/// status changes, not on every look.
fn validation_failed<H: Host>(
    ctx: &Ctx<'_, H>,
    old: RayJobStatus,
    invalid: &Invalid,
) -> Result<Outcome, ReconcileError> {
    ctx.log(LogLevel::Warn, &invalid.message);
    let mut new = old;
    new.job_deployment_status = Some(JobDeploymentStatus::ValidationFailed);
    new.reason = Some(JobFailedReason::ValidationFailed);
    new.message = Some(invalid.message.clone());
    new.observed_generation = ctx.job.metadata.generation;
    if status::write(ctx, new)? {
        ctx.event(Event::warning(
            invalid.reason,
            action::VALIDATE,
            format!("{}: {}", ctx.key(&ctx.name), invalid.message),
        ));
    }
    Ok(Outcome::done())
}

/// A RayJob the types cannot read (a field of the wrong type that the schema let through): reported like a
/// failed validation, keeping whatever of the status can be read.
fn unreadable<H: Host>(host: &H, object: &Value, error: &str) -> Result<Outcome, ReconcileError> {
    let message = format!("The RayJob could not be read: {error}");
    host.log(LogLevel::Warn, &message, &[]);
    let mut job = RayJob::default();
    job.metadata.name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map(str::to_string);
    job.metadata.namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string);
    job.metadata.generation = object.pointer("/metadata/generation").and_then(Value::as_i64);
    job.status = object
        .get("status")
        .and_then(|s| serde_json::from_value::<RayJobStatus>(s.clone()).ok());
    let ctx = Ctx::new(host, job);
    let old = ctx.job.status.clone().unwrap_or_default();
    let invalid = Invalid {
        reason: reason::INVALID_RAYJOB_SPEC,
        message,
    };
    validation_failed(&ctx, old, &invalid)
}

/// `Plugin::cleanup`.
pub fn cleanup<H: Host>(host: &H, request: Request) -> Result<Outcome, ReconcileError> {
    match request.object.into_typed::<RayJob>() {
        Ok(job) => cleanup::run(&Ctx::new(host, job)),
        Err(e) => {
            // Nothing can be stopped without the status; the RayJob must still be able to go.
            host.log(
                LogLevel::Warn,
                &format!("the RayJob could not be read ({e}); removing the finalizer"),
                &[],
            );
            host.remove_finalizer(kuberay_crds::constants::finalizers::RAY_JOB_STOP_JOB)?;
            Ok(Outcome::done())
        }
    }
}
