//! `RayCronJob`: RayJobs on a schedule.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Serialize};

use crate::rayjob::RayJobSpec;

/// Creates a RayJob from `spec.jobTemplate` at every tick of `spec.schedule`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RayCronJob {
    pub metadata: ObjectMeta,
    pub spec: RayCronJobSpec,
    pub status: Option<RayCronJobStatus>,
}

ray_resource!(
    RayCronJob,
    spec = RayCronJobSpec,
    status = RayCronJobStatus,
    plural = "raycronjobs",
    list_kind = "RayCronJobList"
);

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayCronJobSpec {
    pub job_template: RayJobSpec,
    /// A cron expression, as for Kubernetes CronJobs.
    pub schedule: String,
    /// An IANA time zone name for `schedule`; the operator's local zone when unset. Never empty, because
    /// an empty name would silently mean UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub time_zone: Option<String>,
    /// Stops creating RayJobs; those already created are not affected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayCronJobStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
}
