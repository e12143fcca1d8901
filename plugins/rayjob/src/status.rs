//! The RayJob's status: read with KubeRay's defaults (an absent field is the Go zero value), written only
//! through `apply_status` and only when something changed. Because a server-side apply of the status removes
//! what it leaves out, every write carries the whole status, normalized so that what the plugin computes and
//! what it reads back compare equal: empty values are left out (Go's `omitempty`) and times are whole seconds.

use kuberay_crds::{
    JobDeploymentStatus, JobFailedReason, JobStatus, RayClusterStatus, RayJob, RayJobStatus, RayJobStatusInfo,
};
use kuberay_plugin_sdk::{Host, ReconcileError};
use kuberay_rules::time;

use crate::context::Ctx;

pub fn deployment(status: &RayJobStatus) -> JobDeploymentStatus {
    status
        .job_deployment_status
        .clone()
        .unwrap_or(JobDeploymentStatus::New)
}

pub fn job_status(status: &RayJobStatus) -> JobStatus {
    status.job_status.clone().unwrap_or(JobStatus::New)
}

pub fn job_id(status: &RayJobStatus) -> &str {
    status.job_id.as_deref().unwrap_or_default()
}

pub fn cluster_name(status: &RayJobStatus) -> &str {
    status.ray_cluster_name.as_deref().unwrap_or_default()
}

pub fn dashboard_url(status: &RayJobStatus) -> &str {
    status.dashboard_url.as_deref().unwrap_or_default()
}

/// Ends the RayJob (for now: a retry may follow) with a reason and message.
pub fn fail(status: &mut RayJobStatus, reason: JobFailedReason, message: String) {
    status.job_deployment_status = Some(JobDeploymentStatus::Failed);
    status.reason = Some(reason);
    status.message = Some(message);
}

/// The status as the plugin writes it: Go's zero values left out.
pub fn normalized(mut status: RayJobStatus) -> RayJobStatus {
    let empty = |s: &mut Option<String>| {
        if s.as_deref() == Some("") {
            *s = None;
        }
    };
    empty(&mut status.job_id);
    empty(&mut status.ray_cluster_name);
    empty(&mut status.dashboard_url);
    empty(&mut status.message);
    if status.job_status == Some(JobStatus::New) {
        status.job_status = None;
    }
    if status.job_deployment_status == Some(JobDeploymentStatus::New) {
        status.job_deployment_status = None;
    }
    if status.reason.as_ref().is_some_and(|r| r.as_str().is_empty()) {
        status.reason = None;
    }
    if status.ray_cluster_status == Some(RayClusterStatus::default()) {
        status.ray_cluster_status = None;
    }
    if status.ray_job_info == Some(RayJobStatusInfo::default()) {
        status.ray_job_info = None;
    }
    status
}

/// Whether the copy of the cluster's status changed in a way worth recording (KubeRay's rule: not when only
/// its timestamps or observed generation moved, which they do on every cluster status update).
fn cluster_status_changed(old: &RayClusterStatus, new: &RayClusterStatus) -> bool {
    old.state != new.state
        || old.reason != new.reason
        || old.ready_worker_replicas != new.ready_worker_replicas
        || old.available_worker_replicas != new.available_worker_replicas
        || old.desired_worker_replicas != new.desired_worker_replicas
        || old.min_worker_replicas != new.min_worker_replicas
        || old.max_worker_replicas != new.max_worker_replicas
        || old.endpoints != new.endpoints
        || old.head != new.head
        || old.conditions != new.conditions
}

/// Finishes a status computed from `old`: keeps the old cluster copy unless it changed meaningfully,
/// stamps `endTime` when the RayJob has just ended, and records the generation that was acted on.
pub fn settle(job: &RayJob, old: &RayJobStatus, new: &mut RayJobStatus, now: i64) {
    let old_cluster = old.ray_cluster_status.clone().unwrap_or_default();
    let new_cluster = new.ray_cluster_status.clone().unwrap_or_default();
    if !cluster_status_changed(&old_cluster, &new_cluster) {
        new.ray_cluster_status = old.ray_cluster_status.clone();
    }
    let ended = deployment(new);
    if ended.is_terminal() && ended != deployment(old) {
        new.end_time = Some(time::from_seconds(now));
    }
    new.observed_generation = job.metadata.generation;
}

/// Writes `new` unless the RayJob already has exactly this status; returns whether it wrote.
pub fn write<H: Host>(ctx: &Ctx<'_, H>, new: RayJobStatus) -> Result<bool, ReconcileError> {
    let new = normalized(new);
    if let Some(current) = &ctx.job.status
        && normalized(current.clone()) == new
    {
        return Ok(false);
    }
    let json = serde_json::to_value(&new)?;
    ctx.host.apply_status(&json)?;
    Ok(true)
}
