//! `RayJob`: a Ray job together with the cluster it runs on.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::PodTemplateSpec,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
};
use serde::{Deserialize, Serialize};

use crate::raycluster::{RayClusterSpec, RayClusterStatus};

/// A Ray job. The operator creates a cluster from `spec.rayClusterSpec` (or picks one with
/// `spec.clusterSelector`), submits `spec.entrypoint` and follows the job to its end.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RayJob {
    pub metadata: ObjectMeta,
    pub spec: RayJobSpec,
    pub status: Option<RayJobStatus>,
}

ray_resource!(
    RayJob,
    spec = RayJobSpec,
    status = RayJobStatus,
    plural = "rayjobs",
    list_kind = "RayJobList"
);

open_enum! {
    /// The status of the job as Ray's Jobs API reports it.
    pub enum JobStatus {
        /// Not submitted yet.
        New = "",
        Pending = "PENDING",
        Running = "RUNNING",
        Stopped = "STOPPED",
        Succeeded = "SUCCEEDED",
        Failed = "FAILED",
    }
}

impl JobStatus {
    /// Whether Ray will not change the status any more (the same set as Ray's own `is_terminal`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Stopped | Self::Succeeded | Self::Failed)
    }
}

open_enum! {
    /// Where the operator is in a RayJob's lifecycle: cluster, submission and clean-up together.
    pub enum JobDeploymentStatus {
        New = "",
        Initializing = "Initializing",
        Running = "Running",
        Complete = "Complete",
        Failed = "Failed",
        ValidationFailed = "ValidationFailed",
        Suspending = "Suspending",
        Suspended = "Suspended",
        Retrying = "Retrying",
        Waiting = "Waiting",
    }
}

impl JobDeploymentStatus {
    /// Whether the RayJob is finished for good (`Complete` or `Failed`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Complete | Self::Failed)
    }
}

open_enum! {
    /// Why a RayJob became `Failed`.
    pub enum JobFailedReason {
        SubmissionFailed = "SubmissionFailed",
        DeadlineExceeded = "DeadlineExceeded",
        PreRunningDeadlineExceeded = "PreRunningDeadlineExceeded",
        AppFailed = "AppFailed",
        JobDeploymentStatusTransitionGracePeriodExceeded = "JobDeploymentStatusTransitionGracePeriodExceeded",
        JobStatusCheckTimeoutExceeded = "JobStatusCheckTimeoutExceeded",
        ValidationFailed = "ValidationFailed",
    }
}

open_enum! {
    /// How the job gets to the cluster. The schema does not restrict it, so unknown modes reach the operator,
    /// which reports them as a validation failure of that one RayJob.
    pub enum JobSubmissionMode {
        /// A Kubernetes Job runs `ray job submit`; the default.
        K8sJobMode = "K8sJobMode",
        /// The operator calls the Jobs API itself.
        HttpMode = "HTTPMode",
        /// The user submits; the operator waits for `spec.jobId` to appear in Ray.
        InteractiveMode = "InteractiveMode",
        /// A container in the head Pod submits the job.
        SidecarMode = "SidecarMode",
    }
}

/// Clean-up after the job ends, in one of two forms that must not be mixed: the deprecated pair
/// `onSuccess` + `onFailure`, or `deletionRules`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
            "message": "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same deletionStrategy",
        },
        {
            "rule": "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
            "message": "deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)",
        },
    ]))
)]
#[serde(rename_all = "camelCase")]
pub struct DeletionStrategy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_success: Option<DeletionPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<DeletionPolicy>,
    /// If several rules are overdue at once (the operator was down, say), the most destructive runs first.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1), extend("x-kubernetes-list-type" = "atomic"))
    )]
    pub deletion_rules: Option<Vec<DeletionRule>>,
}

/// Do `policy` once `condition` has held for its TTL.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeletionRule {
    pub policy: DeletionPolicyType,
    pub condition: DeletionCondition,
}

/// Exactly one of `jobStatus` (how the Ray job ended) and `jobDeploymentStatus` (how the RayJob ended,
/// which also covers jobs that were never submitted).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
            "message": "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition.",
        },
        {
            "rule": "has(self.jobStatus) || has(self.jobDeploymentStatus)",
            "message": "the deletion condition requires either the JobStatus or the JobDeploymentStatus field.",
        },
    ]))
)]
#[serde(rename_all = "camelCase")]
pub struct DeletionCondition {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ["SUCCEEDED", "FAILED"])))]
    pub job_status: Option<JobStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ["Failed"])))]
    pub job_deployment_status: Option<JobDeploymentStatus>,
    /// Seconds between reaching the status and acting.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0), extend("default" = 0)))]
    pub ttl_seconds: Option<i32>,
}

/// The deprecated single-policy form of [`DeletionRule`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeletionPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<DeletionPolicyType>,
}

/// What a deletion rule deletes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum DeletionPolicyType {
    /// The RayCluster.
    DeleteCluster,
    /// The workers only; the head stays for inspection.
    DeleteWorkers,
    /// The RayJob itself, and with it everything it owns.
    DeleteSelf,
    /// Nothing.
    #[default]
    DeleteNone,
}

/// The submitter Kubernetes Job (or sidecar).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubmitterConfig {
    /// The Job's `backoffLimit`, or the sidecar's restart budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}

/// Times of the Ray job as the dashboard reports them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayJobStatusInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Time>,
}

/// The desired job. RayCronJob embeds it as the template of the jobs it creates.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayJobSpec {
    /// Seconds the RayJob may be active before the operator fails it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i32>,
    /// Retries of the whole job, each on a new cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 0)))]
    pub backoff_limit: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_cluster_spec: Option<RayClusterSpec>,
    /// The Pod that runs `ray job submit` in `K8sJobMode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitter_pod_template: Option<PodTemplateSpec>,
    /// Passed to Ray as the job's metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Run on an existing RayCluster with these labels instead of creating one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitter_config: Option<SubmitterConfig>,
    /// Which controller reconciles this object; see [`crate::MANAGED_BY_KUBERAY`]. Immutable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-validations" = crate::common::managed_by_validations()))
    )]
    pub managed_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_strategy: Option<DeletionStrategy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<String>,
    /// Ray's runtime environment, as a YAML document in a string.
    #[serde(rename = "runtimeEnvYAML", skip_serializing_if = "Option::is_none")]
    pub runtime_env_yaml: Option<String>,
    /// The Ray submission ID; generated when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = "K8sJobMode")))]
    pub submission_mode: Option<JobSubmissionMode>,
    /// Custom Ray resources reserved for the entrypoint, as a JSON object in a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_resources: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_cpus: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_gpus: Option<f32>,
    /// Delay before the cluster is deleted; only with `shutdownAfterJobFinishes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 0)))]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Seconds from initialization until the job must be running, or it fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub pre_running_deadline_seconds: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_after_job_finishes: Option<bool>,
    /// While `true` the RayJob has no cluster (an existing one is deleted); queueing systems such as Kueue
    /// admit a job by setting it to `false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// What the operator observed of the job and its cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayJobStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_job_info: Option<RayJobStatusInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_cluster_name: Option<String>,
    #[serde(rename = "dashboardURL", skip_serializing_if = "Option::is_none")]
    pub dashboard_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_status: Option<JobStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_deployment_status: Option<JobDeploymentStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<JobFailedReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the deployment status left `New`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the deployment status became `Complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 0)))]
    pub succeeded: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 0)))]
    pub failed: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_cluster_status: Option<RayClusterStatus>,
    /// Since when the dashboard has not answered status queries; cleared by a successful one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_status_check_failure_start_time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
