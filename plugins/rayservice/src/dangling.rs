//! Clusters the RayService no longer uses (neither active nor pending) are deleted after
//! `rayClusterDeletionDelaySeconds` (default 60), so requests in flight can finish; all of them at once when
//! the RayService is being deleted (KubeRay's `cleanUpRayClusterInstance`).
//!
//! KubeRay schedules the deletion in memory when it first sees a cluster unused, and forgets it on restart
//! (the delay starts again). Here the time is derived from the objects, so a restart changes nothing: a
//! cluster becomes unused when the RayService's `UpgradeInProgress` condition last changed (a promotion
//! ends an upgrade, a new pending cluster starts one), and not before the cluster was created; it is
//! deleted `delay` seconds after the later of the two. A cluster that a Service of the RayService still
//! selects, or that the HTTPRoute of an incremental upgrade still sends traffic to, is never deleted while
//! the RayService lives.

use k8s_openapi::api::core::v1::Service;
use kuberay_crds::{RayCluster, RayServiceStatuses, constants::conditions as types};
use kuberay_plugin_sdk::{Host, HostError, Kind, LogLevel, TypedHost};
use kuberay_rules::{consts::action, report::Report, time};

use crate::{
    cluster::owned_selector,
    conditions,
    consts::{DEFAULT_DELETION_DELAY_SECONDS, reason},
    context::Ctx,
    incremental, services,
};

/// The clusters this RayService controls.
pub fn owned_clusters<H: Host>(ctx: &Ctx<'_, H>) -> Result<Vec<RayCluster>, HostError> {
    let uid = ctx.service.metadata.uid.clone().unwrap_or_default();
    let clusters: Vec<RayCluster> = ctx.host.list_as(&owned_selector(&ctx.name))?;
    Ok(clusters
        .into_iter()
        .filter(|c| {
            c.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == uid && r.controller == Some(true))
        })
        .collect())
}

/// Deletes unused clusters whose time has come; returns whether any unused cluster is left.
pub fn cleanup<H: Host>(ctx: &Ctx<'_, H>, status: &RayServiceStatuses) -> Result<bool, HostError> {
    let deleting = ctx.service.metadata.deletion_timestamp.is_some();
    let in_use = |name: &str| {
        [&status.active_service_status, &status.pending_service_status]
            .iter()
            .any(|s| s.as_ref().and_then(|s| s.ray_cluster_name.as_deref()) == Some(name))
    };
    let selected = if deleting {
        Vec::new()
    } else {
        selected_clusters(ctx)?
    };
    let mut left = false;
    for cluster in owned_clusters(ctx)? {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        if !deleting && in_use(&name) {
            continue;
        }
        left = true;
        if cluster.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if !deleting {
            let due = due(ctx, status, &cluster);
            if ctx.now < due {
                continue;
            }
            if selected.contains(&name) {
                ctx.log(
                    LogLevel::Info,
                    &format!("RayCluster {name} still serves traffic; not deleting it"),
                );
                continue;
            }
        }
        delete(ctx, &cluster)?;
    }
    Ok(left)
}

/// When an unused cluster is deleted, in Unix seconds.
fn due<H: Host>(ctx: &Ctx<'_, H>, status: &RayServiceStatuses, cluster: &RayCluster) -> i64 {
    let delay = ctx
        .spec()
        .ray_cluster_deletion_delay_seconds
        .map_or(DEFAULT_DELETION_DELAY_SECONDS, i64::from);
    let created = cluster
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(0, time::seconds);
    let changed = conditions::find(status, types::UPGRADE_IN_PROGRESS)
        .map_or(0, |c| time::seconds(&c.last_transition_time));
    created.max(changed) + delay
}

/// Clusters the RayService's Services point at.
fn selected_clusters<H: Host>(ctx: &Ctx<'_, H>) -> Result<Vec<String>, HostError> {
    let mut names = Vec::new();
    for service in [
        kuberay_rules::names::default_head_service(&ctx.name),
        services::serve_service_name(ctx),
    ] {
        if let Some(service) = ctx.host.get_as::<Service>(&service)?
            && let Some(cluster) = services::selected_cluster(&service)
        {
            names.push(cluster.to_string());
        }
    }
    if crate::service::incremental(&ctx.service) {
        names.extend(incremental::routed_clusters(ctx)?);
    }
    Ok(names)
}

/// Deletes one cluster and reports it.
pub fn delete<H: Host>(ctx: &Ctx<'_, H>, cluster: &RayCluster) -> Result<(), HostError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let kind = Kind::of::<RayCluster>();
    let key = ctx.key(&name);
    let report = Report {
        action: action::DELETE,
        done: reason::DELETED_RAYCLUSTER,
        failed: reason::FAILED_TO_DELETE_RAYCLUSTER,
        what: "the RayCluster",
        kind: &kind,
        name: &name,
        key: &key,
    };
    // An incremental upgrade's per-cluster serve Service is controlled by the cluster and goes with it.
    report.run(ctx.host, || ctx.host.delete_object(cluster))
}
