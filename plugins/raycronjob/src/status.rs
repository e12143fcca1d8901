//! The RayCronJob's status: `lastScheduleTime`, the tick whose RayJob was created last. It is written only
//! after that RayJob exists, so a tick is never recorded without its RayJob.

use kuberay_crds::{RayCronJob, RayCronJobStatus};
use kuberay_plugin_sdk::{Host, HostError};
use kuberay_rules::time;

/// Unix seconds of `lastScheduleTime`, or of the creation when nothing was scheduled yet (`None` if the
/// object has neither, which the API server never serves).
pub fn last_schedule(cronjob: &RayCronJob) -> Option<i64> {
    cronjob
        .status
        .as_ref()
        .and_then(|s| s.last_schedule_time.as_ref())
        .or(cronjob.metadata.creation_timestamp.as_ref())
        .map(time::seconds)
}

/// Records `tick` (Unix seconds) as `lastScheduleTime`.
pub fn record_tick<H: Host>(host: &H, tick: i64) -> Result<(), HostError> {
    let status = RayCronJobStatus {
        last_schedule_time: Some(time::from_seconds(tick)),
    };
    let value = serde_json::to_value(&status).map_err(|e| HostError::Internal(format!("JSON: {e}")))?;
    host.apply_status(&value)
}
