//! Whoever runs `ray job submit` when the plugin does not submit itself: a Kubernetes Job ([`k8s_job`],
//! `K8sJobMode`) or a container in the head Pod ([`sidecar`], `SidecarMode`). Both get the same container
//! set-up: KubeRay's script ([`command`]) and environment.

pub mod command;
pub mod k8s_job;
mod quote;
pub mod sidecar;

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, ResourceRequirements},
    apimachinery::pkg::api::resource::Quantity,
};
use kuberay_crds::{JobSubmissionMode, RayClusterSpec, RayJob, RayJobStatus};
use kuberay_plugin_sdk::{Host, ReconcileError};
use kuberay_rules::{auth, env as env_var};

use crate::{
    consts::{SUBMITTER_CONTAINER_NAME, env},
    context::Ctx,
    status,
};
use kuberay_rules::operator_env::OperatorEnv;

/// The projected ServiceAccount token volume a submitter Pod needs for Kubernetes token authentication.
pub use kuberay_rules::auth::add_token_volume;

/// What the submitter tells about the RayJob's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Check {
    /// The submitter failed and the status now says so.
    pub failed: bool,
    /// When the submitter finished (successfully or not), in Unix seconds.
    pub finished_at: Option<i64>,
}

/// Looks at the submitter of a RayJob that has one.
pub fn check<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &mut RayJobStatus,
    cluster: &str,
) -> Result<Check, ReconcileError> {
    match ctx.mode() {
        JobSubmissionMode::SidecarMode => sidecar::check(ctx, job_status, cluster),
        _ => k8s_job::check(ctx, job_status),
    }
}

/// The submitter container KubeRay uses when the user gives none: the head's image (so `ray` matches the
/// cluster's version) with modest resources.
pub fn default_container(cluster: &RayClusterSpec) -> Container {
    let image = cluster
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone());
    let quantities = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(memory.into())),
        ])
    };
    Container {
        name: SUBMITTER_CONTAINER_NAME.into(),
        image,
        resources: Some(ResourceRequirements {
            limits: Some(quantities("1", "1Gi")),
            requests: Some(quantities("500m", "200Mi")),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    }
}

/// KubeRay's set-up of a submitter container: its script (unless a K8sJobMode user brought their own
/// command), unbuffered Python output, the dashboard address and submission id for users' own scripts, and
/// the cluster's token if it requires one (`sidecar_restarts`: see [`command::build`]).
pub fn configure(
    container: &mut Container,
    job: &RayJob,
    job_status: &RayJobStatus,
    mode: &JobSubmissionMode,
    cluster: (&str, &RayClusterSpec),
    env: &OperatorEnv,
    sidecar_restarts: bool,
) -> Result<(), String> {
    let script = command::build(job, job_status, mode, sidecar_restarts)?;
    if container.command.as_ref().is_none_or(Vec::is_empty) || *mode == JobSubmissionMode::SidecarMode {
        container.command = Some(env.shell_command("e"));
        container.args = Some(vec![script.join(" ")]);
    }
    let vars = container.env.get_or_insert_with(Vec::new);
    vars.push(env_var::value(env::PYTHONUNBUFFERED, "1"));
    vars.push(env_var::value(
        env::RAY_DASHBOARD_ADDRESS,
        status::dashboard_url(job_status),
    ));
    vars.push(env_var::value(
        env::RAY_JOB_SUBMISSION_ID,
        status::job_id(job_status),
    ));
    let (cluster_name, cluster_spec) = cluster;
    if auth::enabled(cluster_spec) {
        auth::configure_container(container, cluster_name, cluster_spec);
    }
    Ok(())
}
