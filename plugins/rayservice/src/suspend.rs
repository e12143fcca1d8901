//! `suspend` (KubeRay v1.7's `handleSuspend`): `spec.suspend: true` first commits `Suspending` to the status
//! (clearing the clusters from it), then deletes every cluster and Service the RayService owns, then ends in
//! `Suspended`; `suspend: false` on a suspended RayService starts it again from scratch. Once `Suspending`
//! is written the deletion runs to its end whatever the spec says.

use k8s_openapi::api::core::v1::Service;
use kuberay_crds::{RayServiceStatus, RayServiceStatuses, constants::conditions as types, reasons};
use kuberay_plugin_sdk::{Host, HostError, TypedHost};

use crate::{
    cluster::owned_selector,
    conditions::{self, FALSE, TRUE},
    context::Ctx,
    dangling, services,
};

/// Whether suspend drives this reconcile (nothing else may run).
pub fn operative(status: &RayServiceStatuses) -> bool {
    conditions::is_true(status, types::RAY_SERVICE_SUSPENDING)
        || conditions::is_true(status, types::RAY_SERVICE_SUSPENDED)
}

/// Advances the suspend state machine in `status`.
pub fn handle<H: Host>(ctx: &Ctx<'_, H>, status: &mut RayServiceStatuses) -> Result<(), HostError> {
    let suspend = ctx.spec().suspend == Some(true);
    let now = ctx.now;
    if conditions::is_true(status, types::RAY_SERVICE_SUSPENDED) {
        if !suspend {
            status.observed_generation = ctx.service.metadata.generation;
            let resumed = "Spec.Suspend is false; RayService has resumed.";
            conditions::set(
                status,
                types::RAY_SERVICE_SUSPENDED,
                FALSE,
                reasons::RAY_SERVICE_RESUMED,
                resumed,
                now,
            );
            let init = "RayService is initializing after resuming from suspend.";
            conditions::remove(status, types::RAY_SERVICE_READY);
            conditions::set(
                status,
                types::RAY_SERVICE_READY,
                FALSE,
                reasons::RAY_SERVICE_INITIALIZING,
                init,
                now,
            );
            conditions::remove(status, types::UPGRADE_IN_PROGRESS);
            conditions::set(
                status,
                types::UPGRADE_IN_PROGRESS,
                FALSE,
                reasons::RAY_SERVICE_INITIALIZING,
                init,
                now,
            );
        }
        return Ok(());
    }
    if !conditions::is_true(status, types::RAY_SERVICE_SUSPENDING) {
        if suspend {
            start(ctx, status);
        }
        return Ok(());
    }
    if delete_owned(ctx)? {
        let done = "All owned resources have been deleted.";
        let complete = reasons::SUSPEND_COMPLETE;
        conditions::set(status, types::RAY_SERVICE_SUSPENDING, FALSE, complete, done, now);
        conditions::set(status, types::RAY_SERVICE_SUSPENDED, TRUE, complete, done, now);
        conditions::set(
            status,
            types::RAY_SERVICE_READY,
            FALSE,
            complete,
            "RayService is suspended.",
            now,
        );
        conditions::set(
            status,
            types::UPGRADE_IN_PROGRESS,
            FALSE,
            complete,
            "No upgrade in progress.",
            now,
        );
        conditions::set(
            status,
            types::ROLLBACK_IN_PROGRESS,
            FALSE,
            complete,
            "No rollback in progress.",
            now,
        );
    } else {
        let waiting = "Waiting for all Kubernetes resources owned by this RayService to be deleted.";
        conditions::set(
            status,
            types::RAY_SERVICE_SUSPENDING,
            TRUE,
            reasons::SUSPEND_IN_PROGRESS,
            waiting,
            now,
        );
    }
    Ok(())
}

fn start<H: Host>(ctx: &Ctx<'_, H>, status: &mut RayServiceStatuses) {
    let now = ctx.now;
    let progress = reasons::SUSPEND_IN_PROGRESS;
    status.observed_generation = ctx.service.metadata.generation;
    let requested = "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.";
    conditions::set(
        status,
        types::RAY_SERVICE_SUSPENDING,
        TRUE,
        reasons::SUSPEND_REQUESTED,
        requested,
        now,
    );
    conditions::set(
        status,
        types::RAY_SERVICE_READY,
        FALSE,
        progress,
        "RayService is suspending.",
        now,
    );
    conditions::set(
        status,
        types::UPGRADE_IN_PROGRESS,
        FALSE,
        progress,
        "No upgrade in progress.",
        now,
    );
    conditions::set(
        status,
        types::ROLLBACK_IN_PROGRESS,
        FALSE,
        progress,
        "No rollback in progress.",
        now,
    );
    status.active_service_status = Some(RayServiceStatus::default());
    status.pending_service_status = Some(RayServiceStatus::default());
    status.num_serve_endpoints = Some(0);
    // KubeRay's `NotRunning`, the empty string its JSON leaves out.
    status.service_status = None;
}

/// Deletes the owned clusters and Services; true when none was left to delete.
fn delete_owned<H: Host>(ctx: &Ctx<'_, H>) -> Result<bool, HostError> {
    let mut none_left = true;
    for cluster in dangling::owned_clusters(ctx)? {
        none_left = false;
        if cluster.metadata.deletion_timestamp.is_none() {
            dangling::delete(ctx, &cluster)?;
        }
    }
    let uid = ctx.service.metadata.uid.clone().unwrap_or_default();
    let services: Vec<Service> = ctx.host.list_as(&owned_selector(&ctx.name))?;
    for service in services {
        let ours = service
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.uid == uid);
        if !ours {
            continue;
        }
        none_left = false;
        if service.metadata.deletion_timestamp.is_some() {
            continue;
        }
        services::delete(ctx, &service)?;
    }
    Ok(none_left)
}
