//! `Initializing`: bring up the cluster (or find the selected one), wait until it is ready, record its
//! dashboard, and start the submission: a submitter Job in `K8sJobMode`, nothing in `HTTPMode` (the plugin
//! submits from `Running`) and `SidecarMode` (the head Pod submits), `Waiting` for the user in
//! `InteractiveMode`.

use kuberay_crds::{ClusterState, JobDeploymentStatus, JobSubmissionMode, RayJobStatus};
use kuberay_plugin_sdk::{Host, LogLevel, ReconcileError};

use super::{Step, suspend};
use crate::{batch, cluster, context::Ctx, dashboard, deadlines, status, submitter::k8s_job};

pub fn run<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> Result<Step, ReconcileError> {
    if suspend::requested(ctx, job_status)
        || deadlines::active(ctx, job_status)
        || deadlines::pre_running(ctx, job_status)
    {
        return Ok(Step::Record);
    }
    batch::submit(ctx)?;
    let cluster = cluster::get_or_create(ctx, job_status)?;
    if status::dashboard_url(job_status).is_empty() {
        let ready = cluster.status.as_ref().and_then(|s| s.state.as_ref()) == Some(&ClusterState::Ready);
        if !ready {
            ctx.log(
                LogLevel::Info,
                &format!(
                    "waiting for RayCluster {} to be ready before submitting the job",
                    status::cluster_name(job_status)
                ),
            );
            job_status.ray_cluster_status = cluster.status.clone();
            return Ok(Step::Record);
        }
        job_status.dashboard_url = Some(dashboard::url(ctx, &cluster)?);
    }
    match ctx.mode() {
        JobSubmissionMode::InteractiveMode => {
            job_status.job_deployment_status = Some(JobDeploymentStatus::Waiting);
            return Ok(Step::Record);
        }
        JobSubmissionMode::K8sJobMode => k8s_job::create_if_needed(ctx, job_status, &cluster)?,
        _ => {}
    }
    job_status.job_deployment_status = Some(JobDeploymentStatus::Running);
    Ok(Step::Record)
}
