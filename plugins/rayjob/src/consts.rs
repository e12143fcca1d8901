//! Names, values and timings that are part of KubeRay's observable RayJob behaviour but not fields of the
//! API (those are in `kuberay_crds`): event reasons, the submitter's container and environment, defaults.
//! They keep KubeRay's exact spelling because users' tooling and `ray` itself look for them. What every
//! plugin shares (ports, port names, `ray.io/originated-from-crd` values, event actions) is defined once in
//! `kuberay_rules::consts` and re-exported here.

use std::time::Duration;

/// KubeRay looks at an active RayJob every 3 seconds.
pub const REQUEUE: Duration = Duration::from_secs(3);

/// After a status write KubeRay's own watch event brings the RayJob straight back; the host does not queue a
/// reconcile for status changes, so the plugin asks for a prompt one instead.
pub const REQUEUE_AFTER_WRITE: Duration = Duration::from_millis(200);

/// Deletion TTLs are checked a little after they expire, as KubeRay does, so that clock skew between the
/// check and the deadline never makes a reconcile find it not yet due.
pub const TTL_SLACK_SECONDS: i64 = 2;

/// How long after the submitter finished the Ray job must be terminal.
pub const SUBMITTER_FINISHED_TIMEOUT_SECONDS: i64 = 30;

/// The submitter Job's `backoffLimit` unless `submitterConfig.backoffLimit` says otherwise.
pub const DEFAULT_SUBMITTER_BACKOFF_LIMIT: i32 = 2;

/// RayJob names leave room for the `-xxxxx` suffix of the cluster name within RayCluster's 53 characters.
pub const MAX_RAYJOB_NAME_LENGTH: usize = 53 - 6;

pub use kuberay_rules::consts::{
    CLUSTER_DOMAIN, COMPONENT_NAME, DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT, action, crd,
};

/// The submitter container, in the submitter Job or in the head Pod.
pub const SUBMITTER_CONTAINER_NAME: &str = "ray-job-submitter";

/// Environment of the submitter container.
pub mod env {
    pub const PYTHONUNBUFFERED: &str = "PYTHONUNBUFFERED";
    pub const RAY_DASHBOARD_ADDRESS: &str = "RAY_DASHBOARD_ADDRESS";
    pub const RAY_JOB_SUBMISSION_ID: &str = "RAY_JOB_SUBMISSION_ID";
}

/// Event reasons, exactly as KubeRay records them.
pub mod reason {
    pub const BATCH_SCHEDULER_CLEANED_UP: &str = "BatchSchedulerCleanedUp";
    pub const FAILED_TO_CLEANUP_BATCH_SCHEDULER: &str = "FailedToCleanupBatchScheduler";
    pub const INVALID_RAYJOB_SPEC: &str = "InvalidRayJobSpec";
    pub const INVALID_RAYJOB_METADATA: &str = "InvalidRayJobMetadata";
    pub const INVALID_RAYJOB_STATUS: &str = "InvalidRayJobStatus";
    pub const CREATED_RAYJOB_SUBMITTER: &str = "CreatedRayJobSubmitter";
    pub const DELETED_RAYJOB_SUBMITTER: &str = "DeletedRayJobSubmitter";
    pub const FAILED_TO_CREATE_RAYJOB_SUBMITTER: &str = "FailedToCreateRayJobSubmitter";
    pub const FAILED_TO_DELETE_RAYJOB_SUBMITTER: &str = "FailedToDeleteRayJobSubmitter";
    pub const CREATED_RAYCLUSTER: &str = "CreatedRayCluster";
    pub const UPDATED_RAYCLUSTER: &str = "UpdatedRayCluster";
    pub const DELETED_RAYCLUSTER: &str = "DeletedRayCluster";
    pub const FAILED_TO_CREATE_RAYCLUSTER: &str = "FailedToCreateRayCluster";
    pub const FAILED_TO_DELETE_RAYCLUSTER: &str = "FailedToDeleteRayCluster";
    pub const FAILED_TO_UPDATE_RAYCLUSTER: &str = "FailedToUpdateRayCluster";
    pub const RAYCLUSTER_NOT_FOUND: &str = "RayClusterNotFound";
    pub const CREATED_SERVICE: &str = "CreatedService";
    pub const UPDATED_SERVICE: &str = "UpdatedService";
    pub const FAILED_TO_CREATE_SERVICE: &str = "FailedToCreateService";
    pub const FAILED_TO_UPDATE_SERVICE: &str = "FailedToUpdateService";
}
