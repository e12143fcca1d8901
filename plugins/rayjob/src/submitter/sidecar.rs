//! `SidecarMode`: the submitter runs as a container of the head Pod and talks to the dashboard on
//! localhost. The head Pod never restarts (a restarted head would submit again into a fresh GCS), so a
//! submitter that exits non-zero, or a head Pod that is gone, fails the RayJob.

use k8s_openapi::api::core::v1::{Container, Pod};
use kuberay_crds::{
    JobDeploymentStatus, JobFailedReason, JobStatus, JobSubmissionMode, RayClusterSpec, RayJob, RayJobStatus,
    constants::{labels, node_type},
};
use kuberay_plugin_sdk::{Host, ReconcileError, TypedHost};
use kuberay_rules::time;

use super::{Check, configure, default_container};
use crate::{consts::SUBMITTER_CONTAINER_NAME, context::Ctx, status};
use kuberay_rules::operator_env::OperatorEnv;

/// The submitter container added to the head Pod of the cluster `cluster_name`.
pub fn container(
    job: &RayJob,
    job_status: &RayJobStatus,
    cluster_name: &str,
    cluster: &RayClusterSpec,
    env: &OperatorEnv,
) -> Result<Container, String> {
    let mut container = default_container(cluster);
    configure(
        &mut container,
        job,
        job_status,
        &JobSubmissionMode::SidecarMode,
        (cluster_name, cluster),
        env,
    )?;
    Ok(container)
}

/// Looks at the submitter container in the cluster's head Pod.
pub fn check<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &mut RayJobStatus,
    cluster: &str,
) -> Result<Check, ReconcileError> {
    let selector = format!(
        "{}={cluster},{}={}",
        labels::RAY_CLUSTER,
        labels::RAY_NODE_TYPE,
        node_type::HEAD
    );
    let heads: Vec<Pod> = ctx.host.list_as(&selector)?;
    let head = match heads.as_slice() {
        [] => {
            status::fail(
                job_status,
                JobFailedReason::AppFailed,
                "Ray head pod not found.".into(),
            );
            return Ok(Check {
                failed: true,
                finished_at: None,
            });
        }
        [head] => head,
        _ => {
            return Err(ReconcileError::Transient(format!(
                "found multiple heads. filter labels {selector}"
            )));
        }
    };
    let submitter = head
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == SUBMITTER_CONTAINER_NAME));
    let terminated = submitter
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    let mut check = Check {
        failed: false,
        finished_at: terminated.and_then(|t| t.finished_at.as_ref()).map(time::seconds),
    };
    if let Some(t) = terminated.filter(|t| t.exit_code != 0) {
        check.failed = true;
        if status::job_status(job_status) == JobStatus::Failed {
            job_status.job_deployment_status = Some(JobDeploymentStatus::Failed);
            job_status.reason = Some(JobFailedReason::AppFailed);
        } else {
            status::fail(
                job_status,
                JobFailedReason::SubmissionFailed,
                format!(
                    "Ray head pod container {SUBMITTER_CONTAINER_NAME} terminated with exit code {}: {}",
                    t.exit_code,
                    t.reason.as_deref().unwrap_or_default()
                ),
            );
        }
    }
    Ok(check)
}
