//! One reconcile of a RayCronJob, in KubeRay's order: validate, honour `suspend`, then find the first tick
//! after `lastScheduleTime` (or the creation). A tick still to come is waited for; a due one gets its
//! RayJob (or finds it already there) and is recorded, and the plugin comes back for the next.
//!
//! Ticks missed while the operator was down (or while the RayCronJob was suspended) are handled as KubeRay
//! handles them: each one gets its RayJob, oldest first, one per reconcile, until the schedule has caught
//! up with the clock. A restart never creates a tick twice: the RayJob's name is derived from the tick, so
//! a second create for it is refused by the API server and counts as done.

use std::time::Duration;

use kuberay_crds::RayCronJob;
use kuberay_plugin_sdk::{
    Document, Event, Host, HostError, Kind, LogLevel, Outcome, ReconcileError, Request, TypedHost,
};
use kuberay_rules::{consts::action as shared_action, report::record, time};

use crate::{
    child,
    consts::{REQUEUE_CATCH_UP, action, reason},
    schedule::Invalid,
    status, validation,
};

/// Reconciles the RayCronJob of `request`: at most one RayJob created and one status write per call.
pub fn reconcile<H: Host>(host: &H, request: Request) -> Result<Outcome, ReconcileError> {
    let cronjob: RayCronJob = request.object.to_typed().map_err(|e| {
        invalid_spec(
            host,
            &request.object,
            &Invalid(format!("the RayCronJob could not be read: {e}")),
        )
    })?;
    if cronjob.metadata.deletion_timestamp.is_some() {
        return Ok(Outcome::done());
    }
    let schedule = validation::validate(&cronjob).map_err(|e| invalid_spec(host, &request.object, &e))?;
    if cronjob.spec.suspend == Some(true) {
        host.log(
            LogLevel::Debug,
            "RayCronJob suspended, no new RayJobs will be created",
            &[],
        );
        record(
            host,
            &Event::normal(
                reason::SUSPENDED_RAYCRONJOB,
                action::SUSPEND,
                "RayCronJob suspended, no new RayJobs will be created",
            ),
        );
        return Ok(Outcome::done());
    }
    let now = time::now_seconds(host);
    let earliest = status::last_schedule(&cronjob).unwrap_or(now);
    let never = || {
        invalid_spec(
            host,
            &request.object,
            &Invalid("invalid cron schedule: it has no time after the last one".into()),
        )
    };
    let tick = schedule.next_after(earliest).ok_or_else(never)?;
    if tick > now {
        return Ok(wait(tick - now));
    }
    create(host, &cronjob, tick)?;
    status::record_tick(host, tick)
        .map_err(|e| retry(host, &format!("could not record lastScheduleTime: {e}")))?;
    Ok(match schedule.next_after(tick) {
        Some(next) if next > now => wait(next - now),
        Some(_) => Outcome::requeue_after(REQUEUE_CATCH_UP),
        None => Outcome::done(),
    })
}

/// Creates the RayJob of `tick`; one that already exists was created for this tick before.
fn create<H: Host>(host: &H, cronjob: &RayCronJob, tick: i64) -> Result<(), ReconcileError> {
    let job = child::build(cronjob, tick);
    let name = job.metadata.name.clone().unwrap_or_default();
    let key = format!(
        "{}/{name}",
        cronjob.metadata.namespace.as_deref().unwrap_or_default()
    );
    match host.create_as(&job) {
        Ok(_) => {
            host.log(
                LogLevel::Info,
                "Successfully created RayJob",
                &[("rayJobName", &name)],
            );
            let note = format!(
                "Created RayJob {key} for the tick at {}",
                child::scheduled_timestamp(tick)
            );
            record(
                host,
                &Event::normal(reason::CREATED_RAYJOB, shared_action::CREATE, note)
                    .about(Kind::of::<kuberay_crds::RayJob>(), &name),
            );
            Ok(())
        }
        Err(HostError::Conflict(_)) => {
            host.log(
                LogLevel::Info,
                "RayJob for this tick already exists, skipping creation",
                &[("rayJobName", &name)],
            );
            Ok(())
        }
        Err(e) => {
            let note = format!("Failed to create RayJob {key}: {}", e.message());
            record(
                host,
                &Event::warning(
                    reason::FAILED_TO_CREATE_RAYJOB,
                    shared_action::CREATE,
                    note.clone(),
                ),
            );
            Err(retry(host, &note))
        }
    }
}

fn wait(seconds: i64) -> Outcome {
    Outcome::requeue_after(Duration::from_secs(u64::try_from(seconds).unwrap_or(1).max(1)))
}

/// A write that failed: logged, and retried by the host with its backoff (1 s doubling; KubeRay retries
/// after 3 s).
fn retry<H: Host>(host: &H, message: &str) -> ReconcileError {
    host.log(LogLevel::Warn, message, &[]);
    ReconcileError::Transient(message.to_string())
}

/// KubeRay's Warning event for a spec it cannot schedule; the host then records its own `InvalidObject`
/// and waits for the RayCronJob to change instead of retrying.
fn invalid_spec<H: Host>(host: &H, object: &Document, invalid: &Invalid) -> ReconcileError {
    let object = object.to_value().unwrap_or_default();
    let meta = |field: &str| {
        object
            .pointer(&format!("/metadata/{field}"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let note = format!("{}/{}: {invalid}", meta("namespace"), meta("name"));
    record(
        host,
        &Event::warning(
            reason::INVALID_RAYCRONJOB_SPEC,
            shared_action::VALIDATE,
            note.clone(),
        ),
    );
    ReconcileError::InvalidObject(note)
}
