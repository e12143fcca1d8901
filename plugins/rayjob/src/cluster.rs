//! The RayCluster a RayJob runs on: created from `spec.rayClusterSpec` under the name recorded in the status,
//! or an existing one named by `spec.clusterSelector`. KubeRay creates it once and then leaves its spec alone
//! (later edits of `rayClusterSpec` do not reach a running cluster), so this module only ever creates.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kuberay_crds::{
    JobSubmissionMode, RayCluster, RayJob, RayJobStatus,
    constants::{annotations, labels},
};
use kuberay_plugin_sdk::{Event, Host, Kind, ReconcileError, TypedHost};

use crate::{
    batch,
    consts::{action, crd, reason},
    context::Ctx,
    spec, status,
    submitter::sidecar,
};
use kuberay_rules::{cluster_spec::Gates, operator_env::OperatorEnv};

/// KubeRay's cluster for a RayJob: the RayJob's labels and annotations, plus where it came from; in
/// `SidecarMode` also the submitter container in the head Pod, which must then never restart.
pub fn build(
    job: &RayJob,
    job_status: &RayJobStatus,
    name: &str,
    (env, gates): (&OperatorEnv, Gates),
) -> Result<RayCluster, String> {
    let mode = spec::submission_mode(&job.spec);
    let job_name = job.metadata.name.clone().unwrap_or_default();
    let mut cluster_labels: BTreeMap<String, String> = job.metadata.labels.clone().unwrap_or_default();
    cluster_labels.insert(labels::RAY_ORIGINATED_FROM_CR_NAME.into(), job_name);
    cluster_labels.insert(labels::RAY_ORIGINATED_FROM_CRD.into(), crd::RAY_JOB.into());
    cluster_labels.insert(labels::RAY_JOB_SUBMISSION_MODE.into(), mode.as_str().into());
    let mut cluster_annotations = job.metadata.annotations.clone().unwrap_or_default();
    let mut cluster_spec = job
        .spec
        .ray_cluster_spec
        .clone()
        .ok_or("the RayJob has no rayClusterSpec to create a cluster from")?;
    if mode == JobSubmissionMode::SidecarMode {
        cluster_annotations.insert(
            annotations::RAY_DISABLE_PROVISIONED_HEAD_RESTART.into(),
            "true".into(),
        );
        let container = sidecar::container(
            job,
            job_status,
            (name, &cluster_spec),
            env,
            gates.sidecar_submitter_restart,
        )?;
        let pod = cluster_spec
            .head_group_spec
            .template
            .spec
            .get_or_insert_with(Default::default);
        pod.containers.push(container);
        pod.restart_policy = Some("Never".into());
    }
    Ok(RayCluster {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(cluster_labels),
            annotations: (!cluster_annotations.is_empty()).then_some(cluster_annotations),
            ..ObjectMeta::default()
        },
        spec: cluster_spec,
        status: None,
    })
}

/// The cluster named in the status, created if it is missing and the RayJob brings its own.
pub fn get_or_create<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &RayJobStatus,
) -> Result<RayCluster, ReconcileError> {
    let name = status::cluster_name(job_status);
    if let Some(cluster) = ctx.get::<RayCluster>(name)? {
        return Ok(cluster);
    }
    let key = ctx.key(name);
    if spec::uses_cluster_selector(ctx.spec()) {
        ctx.event(Event::warning(
            reason::RAYCLUSTER_NOT_FOUND,
            action::VALIDATE,
            format!("RayCluster {key} set in the clusterSelector is not found. It must be created manually"),
        ));
        return Err(ReconcileError::Transient(format!(
            "clusterSelector mode is enabled, but RayCluster {key} is not found"
        )));
    }
    let mut cluster =
        build(&ctx.job, job_status, name, (&ctx.env, ctx.gates)).map_err(ReconcileError::InvalidObject)?;
    batch::decorate_cluster(ctx, &mut cluster);
    match ctx.host.create_as(&cluster) {
        Ok(created) => {
            ctx.event(
                Event::normal(
                    reason::CREATED_RAYCLUSTER,
                    action::CREATE,
                    format!("Created RayCluster {key}"),
                )
                .about(Kind::of::<RayCluster>(), name),
            );
            Ok(created)
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_RAYCLUSTER,
                action::CREATE,
                format!("Failed to create RayCluster {key}: {}", e.message()),
            ));
            Err(e.into())
        }
    }
}

/// Deletes the RayJob's cluster (never a selected one); returns whether it is gone.
pub fn delete<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) -> Result<bool, ReconcileError> {
    if spec::uses_cluster_selector(ctx.spec()) {
        return Ok(true);
    }
    let name = status::cluster_name(job_status);
    if name.is_empty() {
        return Ok(true);
    }
    let Some(cluster) = ctx.get::<RayCluster>(name)? else {
        return Ok(true);
    };
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(false);
    }
    let key = ctx.key(name);
    let uid = cluster.metadata.uid.as_deref();
    match ctx.host.delete(&Kind::of::<RayCluster>(), name, uid) {
        Ok(()) => {
            ctx.event(
                Event::normal(
                    reason::DELETED_RAYCLUSTER,
                    action::DELETE,
                    format!("Deleted cluster {key}"),
                )
                .about(Kind::of::<RayCluster>(), name),
            );
            Ok(false)
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_DELETE_RAYCLUSTER,
                action::DELETE,
                format!("Failed to delete cluster {key}: {}", e.message()),
            ));
            Err(e.into())
        }
    }
}
