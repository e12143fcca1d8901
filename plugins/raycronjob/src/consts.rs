//! Names and timings that are part of KubeRay's observable RayCronJob behaviour but not fields of the API
//! (labels and annotations are in `kuberay_crds::constants`).

use std::time::Duration;

/// When the next tick is already due (ticks missed while the operator was down), KubeRay's own status watch
/// event brings the RayCronJob straight back; the host does not queue a reconcile for status changes, so the
/// plugin asks for a prompt one instead.
pub const REQUEUE_CATCH_UP: Duration = Duration::from_millis(200);

/// RayJob names leave room for the `-xxxxx` suffix of their cluster within RayCluster's 53 characters, and
/// RayCronJob names room for the `-<Unix minutes>` suffix of their RayJobs (a dash and up to 10 digits).
pub const MAX_RAYCRONJOB_NAME_LENGTH: usize = 53 - 6 - 11;

/// Event reasons, exactly as KubeRay records them, and two of ours.
pub mod reason {
    /// Warning: the schedule, the time zone or the name cannot be used.
    pub const INVALID_RAYCRONJOB_SPEC: &str = "InvalidRayCronJobSpec";
    /// Normal: `suspend` is set, nothing is created.
    pub const SUSPENDED_RAYCRONJOB: &str = "SuspendedRayCronJob";
    /// KubeRay records no event for the RayJobs it creates; the plugin reports them as the RayJob and
    /// RayCluster plugins report what they create.
    pub const CREATED_RAYJOB: &str = "CreatedRayJob";
    /// Warning: the RayJob of a tick could not be created (retried).
    pub const FAILED_TO_CREATE_RAYJOB: &str = "FailedToCreateRayJob";
}

/// Event actions KubeRay's RayCronJob controller uses besides the shared ones (`kuberay_rules::consts::action`).
pub mod action {
    /// The action of `SuspendedRayCronJob`.
    pub const SUSPEND: &str = "Suspend";
}
