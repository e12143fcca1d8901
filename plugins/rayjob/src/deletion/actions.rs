//! The deletion policies themselves, and whether each one's effect is already there (so that a reconcile
//! after the deletion does nothing, and writes nothing).
//!
//! `DeleteSelf` deletes the RayJob itself (the host lets a plugin delete its own object); its cluster and
//! submitter go with it through their owner references.

use kuberay_crds::{DeletionPolicyType, RayCluster, RayJob, RayJobStatus};
use kuberay_plugin_sdk::{Event, Host, Kind, LogLevel, ReconcileError, serde_json::json};

use crate::{
    cluster,
    consts::{action, reason},
    context::Ctx,
    spec, status,
};

/// Whether the policy's effect is already in place.
pub fn completed<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &RayJobStatus,
    policy: DeletionPolicyType,
) -> Result<bool, ReconcileError> {
    if policy == DeletionPolicyType::DeleteNone {
        return Ok(true);
    }
    if spec::uses_cluster_selector(ctx.spec()) {
        // A selected cluster is never the RayJob's to delete or shrink.
        return Ok(true);
    }
    let Some(cluster) = ctx.get::<RayCluster>(status::cluster_name(job_status))? else {
        return Ok(true);
    };
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(true);
    }
    Ok(match policy {
        DeletionPolicyType::DeleteWorkers => cluster
            .spec
            .worker_group_specs
            .iter()
            .flatten()
            .all(|g| g.suspend == Some(true)),
        _ => false,
    })
}

pub fn execute<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &RayJobStatus,
    policy: DeletionPolicyType,
) -> Result<(), ReconcileError> {
    match policy {
        DeletionPolicyType::DeleteNone => Ok(()),
        DeletionPolicyType::DeleteCluster => cluster::delete(ctx, job_status).map(|_| ()),
        DeletionPolicyType::DeleteWorkers => suspend_workers(ctx, job_status),
        DeletionPolicyType::DeleteSelf => {
            let uid = ctx.job.metadata.uid.clone();
            ctx.log(
                LogLevel::Info,
                &format!("deleting RayJob {} (DeleteSelf)", ctx.key(&ctx.name)),
            );
            ctx.host
                .delete(&Kind::of::<RayJob>(), &ctx.name, uid.as_deref())
                .map_err(ReconcileError::from)
        }
    }
}

/// `DeleteWorkers`: every worker group suspended, the head kept for inspection. Only the worker groups are
/// applied (the list is atomic, so it is sent whole, as read, with `suspend` set), so nothing else of the
/// cluster changes hands.
fn suspend_workers<H: Host>(ctx: &Ctx<'_, H>, job_status: &RayJobStatus) -> Result<(), ReconcileError> {
    let name = status::cluster_name(job_status);
    let Some(cluster) = ctx.get::<RayCluster>(name)? else {
        return Ok(());
    };
    let mut groups = cluster.spec.worker_group_specs.clone().unwrap_or_default();
    for group in &mut groups {
        group.suspend = Some(true);
    }
    let patch = json!({
        "apiVersion": kuberay_crds::API_VERSION,
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"workerGroupSpecs": groups},
    });
    let key = ctx.key(name);
    match ctx.host.apply(&patch) {
        Ok(_) => {
            ctx.event(
                Event::normal(
                    reason::UPDATED_RAYCLUSTER,
                    action::UPDATE,
                    format!("Set the `suspend` field to true for all worker groups in cluster {key}"),
                )
                .about(Kind::of::<RayCluster>(), name),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_UPDATE_RAYCLUSTER,
                action::UPDATE,
                format!(
                    "Failed to suspend worker groups in cluster {key}: {}",
                    e.message()
                ),
            ));
            Err(e.into())
        }
    }
}
