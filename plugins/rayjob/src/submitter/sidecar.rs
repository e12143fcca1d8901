//! `SidecarMode`: the submitter runs as a container of the head Pod and talks to the dashboard on
//! localhost. The head Pod never restarts (a restarted head would submit again into a fresh GCS), so a
//! submitter that exits non-zero, or a head Pod that is gone, fails the RayJob. With the
//! `SidecarSubmitterRestart` gate (KubeRay v1.7) the submitter container alone restarts on failure (its own
//! `restartPolicy: OnFailure`, Kubernetes 1.35's container restart rules; its script then checks for the
//! earlier submission first), and the RayJob fails once it has restarted `submitterConfig.backoffLimit`
//! times (2 by default) and is not done.

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};
use kuberay_crds::{
    JobDeploymentStatus, JobFailedReason, JobStatus, JobSubmissionMode, RayClusterSpec, RayJob, RayJobStatus,
    constants::{labels, node_type},
};
use kuberay_plugin_sdk::{Host, ReconcileError, TypedHost};
use kuberay_rules::time;

use super::{Check, configure, default_container};
use crate::{consts::SUBMITTER_CONTAINER_NAME, context::Ctx, status};
use kuberay_rules::operator_env::OperatorEnv;

/// KubeRay's restart budget of a restarting submitter container without `submitterConfig.backoffLimit`.
const DEFAULT_RESTART_BUDGET: i32 = 2;

/// The submitter container added to the head Pod of the cluster `cluster_name`; `restarts`: the
/// `SidecarSubmitterRestart` gate.
pub fn container(
    job: &RayJob,
    job_status: &RayJobStatus,
    (cluster_name, cluster): (&str, &RayClusterSpec),
    env: &OperatorEnv,
    restarts: bool,
) -> Result<Container, String> {
    let mut container = default_container(cluster);
    configure(
        &mut container,
        job,
        job_status,
        &JobSubmissionMode::SidecarMode,
        (cluster_name, cluster),
        env,
        restarts,
    )?;
    if restarts {
        container.restart_policy = Some("OnFailure".into());
    }
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
    let failure = match ctx.gates.sidecar_submitter_restart {
        false => terminated.filter(|t| t.exit_code != 0).map(|t| {
            format!(
                "Ray head pod container {SUBMITTER_CONTAINER_NAME} terminated with exit code {}: {}",
                t.exit_code,
                t.reason.as_deref().unwrap_or_default()
            )
        }),
        true => submitter.filter(|c| out_of_restarts(c, restart_budget(ctx))).map(|_| {
            format!(
                "Ray head pod submitter container {SUBMITTER_CONTAINER_NAME} terminated after exceeding the \
                 maximum restart count"
            )
        }),
    };
    if let Some(message) = failure {
        check.failed = true;
        if status::job_status(job_status) == JobStatus::Failed {
            job_status.job_deployment_status = Some(JobDeploymentStatus::Failed);
            job_status.reason = Some(JobFailedReason::AppFailed);
        } else {
            status::fail(job_status, JobFailedReason::SubmissionFailed, message);
        }
    }
    Ok(check)
}

/// How often a restarting submitter container may restart: `submitterConfig.backoffLimit`, or KubeRay's 2.
fn restart_budget<H: Host>(ctx: &Ctx<'_, H>) -> i32 {
    ctx.spec()
        .submitter_config
        .as_ref()
        .and_then(|c| c.backoff_limit)
        .unwrap_or(DEFAULT_RESTART_BUDGET)
}

/// KubeRay's `checkIsRestartCountExceeded`: a submitter container that has terminated at least once (its
/// last state) has used up `budget` restarts, unless it has now exited successfully.
fn out_of_restarts(submitter: &ContainerStatus, budget: i32) -> bool {
    let failed_before = submitter
        .last_state
        .as_ref()
        .is_some_and(|s| s.terminated.is_some());
    let succeeded = submitter
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some_and(|t| t.exit_code == 0);
    failed_before && !succeeded && submitter.restart_count >= budget
}
