//! `New`: claim the RayJob with the finalizer and fix the names of the cluster and of the Ray submission in
//! the status before anything exists under them. Recording them first is what makes the rest restart-safe:
//! a later reconcile (in this instance or after an operator restart) finds the same names, looks the cluster
//! and the job up under them, and never creates or submits twice.

use kuberay_crds::{JobDeploymentStatus, JobStatus, JobSubmissionMode, RayJobStatus, constants::finalizers};
use kuberay_plugin_sdk::{Host, ReconcileError};
use kuberay_rules::{names, time};

use super::Step;
use crate::{context::Ctx, spec, status};

pub fn run<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> Result<Step, ReconcileError> {
    let has_finalizer = ctx
        .job
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizers::RAY_JOB_STOP_JOB);
    if !has_finalizer {
        ctx.host.add_finalizer(finalizers::RAY_JOB_STOP_JOB)?;
    }
    initialize(ctx, job_status);
    Ok(Step::Record)
}

/// KubeRay's `initRayJobStatusIfNeed`: fills in what is missing and starts the clock.
fn initialize<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) {
    let needed = status::job_id(job_status).is_empty()
        || status::cluster_name(job_status).is_empty()
        || status::job_status(job_status) == JobStatus::New;
    if !needed {
        return;
    }
    let s = ctx.spec();
    // Attempts are told apart so that a retry gets a new cluster and submission even at the same instant.
    let attempt = job_status.failed.unwrap_or(0).to_string();
    let seed = |what: &str| {
        let uid = ctx.job.metadata.uid.clone().unwrap_or_default();
        names::with_random_suffix(&ctx.name, &[&uid, what, &attempt, &ctx.now.to_string()])
    };
    if ctx.mode() != JobSubmissionMode::InteractiveMode && status::job_id(job_status).is_empty() {
        job_status.job_id = Some(spec::job_id(s).map_or_else(|| seed("job"), str::to_string));
    }
    if status::cluster_name(job_status).is_empty() {
        job_status.ray_cluster_name =
            Some(spec::selected_cluster(s).map_or_else(|| seed("cluster"), str::to_string));
    }
    job_status.job_status = None;
    job_status.job_deployment_status = Some(JobDeploymentStatus::Initializing);
    job_status.start_time = Some(time::from_seconds(ctx.now));
}
