//! The cluster's dashboard as KubeRay records it (`status.dashboardURL`, which the submitter uses) and the
//! submission the plugin itself makes in `HTTPMode`.

use k8s_openapi::api::core::v1::Service;
use kuberay_crds::{RayCluster, RayJob, RayJobStatus};
use kuberay_plugin_sdk::{Host, ReconcileError, ray::jobs::JobSubmitRequest};
use kuberay_rules::names;

use crate::{
    consts::{CLUSTER_DOMAIN, DASHBOARD_PORT_NAME},
    context::Ctx,
    spec, status,
};

/// `<head service>.<namespace>.svc.cluster.local:<dashboard port>`, from the cluster's head Service as it
/// exists (so a custom Service name or port is honoured).
pub fn url<H: Host>(ctx: &Ctx<'_, H>, cluster: &RayCluster) -> Result<String, ReconcileError> {
    let name = names::cluster_head_service(cluster);
    let service = ctx.get::<Service>(&name)?.ok_or_else(|| {
        ReconcileError::Transient(format!("the head Service {} is not found", ctx.key(&name)))
    })?;
    let port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p.name.as_deref() == Some(DASHBOARD_PORT_NAME))
        })
        .map(|p| p.port)
        .ok_or_else(|| ReconcileError::Transient(format!("{DASHBOARD_PORT_NAME} port is not found")))?;
    let domain = ctx
        .host
        .config_str(kuberay_rules::config::CLUSTER_DOMAIN)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| CLUSTER_DOMAIN.to_string());
    Ok(format!("{name}.{}.svc.{domain}:{port}", ctx.namespace))
}

/// What KubeRay's `HTTPMode` sends to `POST /api/jobs/`.
pub fn submit_request(job: &RayJob, job_status: &RayJobStatus) -> Result<JobSubmitRequest, String> {
    let s = &job.spec;
    JobSubmitRequest::new(spec::entrypoint(s))
        .submission_id(status::job_id(job_status))
        .metadata(s.metadata.as_ref())
        .runtime_env_yaml(s.runtime_env_yaml.as_deref())?
        .entrypoint_num_cpus(s.entrypoint_num_cpus)
        .entrypoint_num_gpus(s.entrypoint_num_gpus)
        .entrypoint_resources_json(s.entrypoint_resources.as_deref())
}
