//! The RayJob's status: read with KubeRay's defaults (an absent field is the Go zero value), written only
//! through `apply_status` and only when something changed. Because a server-side apply of the status removes
//! what it leaves out, every write carries the whole status, normalized so that what the plugin computes and
//! what it reads back compare equal, and shaped as Go's `json.Marshal` of KubeRay's `RayJobStatus` writes it:
//! empty values are left out (`omitempty`) and times are whole seconds, except the two fields that are Go
//! structs rather than pointers, which `omitempty` never leaves out: `rayJobInfo` is `{}` until Ray reports
//! the job's times, and `rayClusterStatus` has its four resource quantities (`"0"` when unknown) and `head`
//! (`{}`), from KubeRay's very first status write on (before the cluster has a status, and again after a
//! suspension or a retry resets it).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kuberay_crds::{
    HeadInfo, JobDeploymentStatus, JobFailedReason, JobStatus, RayClusterStatus, RayJob, RayJobStatus,
    RayJobStatusInfo,
};
use kuberay_plugin_sdk::{Host, ReconcileError};
use kuberay_rules::time;
use serde_json::Value;

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

/// The status as the plugin writes it: Go's zero values left out, Go's struct fields always there.
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
    status.ray_cluster_status = Some(go_cluster_status(status.ray_cluster_status.unwrap_or_default()));
    status.ray_job_info.get_or_insert_with(RayJobStatusInfo::default);
    status
}

/// A copy of a cluster's status as Go writes KubeRay's `RayClusterStatus`: the resource quantities are
/// Go structs (`"0"` when zero) and `head` one too (`{}`); everything else is `omitempty` already.
fn go_cluster_status(mut status: RayClusterStatus) -> RayClusterStatus {
    for quantity in [
        &mut status.desired_cpu,
        &mut status.desired_memory,
        &mut status.desired_gpu,
        &mut status.desired_tpu,
    ] {
        quantity.get_or_insert_with(|| Quantity("0".into()));
    }
    status.head.get_or_insert_with(HeadInfo::default);
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
    // A status without the fields Go always writes (one an earlier version of this plugin wrote) is
    // rewritten once, although it means the same.
    if let Some(current) = &ctx.job.status
        && current.ray_job_info.is_some()
        && current.ray_cluster_status.is_some()
        && normalized(current.clone()) == new
    {
        return Ok(false);
    }
    let json = serde_json::to_value(&new)?;
    let emptied = emptied(ctx.job.status.as_ref(), &new);
    if !emptied.is_empty() {
        // Server-side apply turns `{}` written over an object whose fields it wrote before into `null`,
        // which the schema refuses (kubernetes/kubernetes#104694); KubeRay's update has no such problem.
        // So such an object is removed first and then written empty.
        let mut without = json.clone();
        for (parent, field) in emptied {
            if let Some(object) = without.pointer_mut(parent).and_then(Value::as_object_mut) {
                object.remove(field);
            }
        }
        ctx.host.apply_status(&without)?;
    }
    ctx.host.apply_status(&json)?;
    Ok(true)
}

/// The always-written objects (as the parent's JSON pointer and the field) that `new` empties where
/// `current` has something in them.
fn emptied(current: Option<&RayJobStatus>, new: &RayJobStatus) -> Vec<(&'static str, &'static str)> {
    let Some(current) = current else {
        return Vec::new();
    };
    let filled = |info: Option<&RayJobStatusInfo>| info.is_some_and(|i| *i != RayJobStatusInfo::default());
    let head_filled = |status: Option<&RayClusterStatus>| {
        status
            .and_then(|s| s.head.as_ref())
            .is_some_and(|h| *h != HeadInfo::default())
    };
    let mut fields = Vec::new();
    if filled(current.ray_job_info.as_ref()) && !filled(new.ray_job_info.as_ref()) {
        fields.push(("", "rayJobInfo"));
    }
    if head_filled(current.ray_cluster_status.as_ref()) && !head_filled(new.ray_cluster_status.as_ref()) {
        fields.push(("/rayClusterStatus", "head"));
    }
    fields
}
