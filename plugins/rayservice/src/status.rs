//! The RayService's status (KubeRay's `calculateStatus` and `calculateConditions`): the clusters' statuses
//! and applications, the promotion of the pending cluster once the Services point at it, the name of a new
//! pending cluster when the spec needs one, `numServeEndpoints`, the conditions and the initializing
//! timeout. [`write`] is the only writer of the status.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use kuberay_crds::{
    AppStatus, RayCluster, RayServiceStatus, RayServiceStatuses, ServiceStatus, constants::annotations,
    constants::conditions as types, reasons,
};
use kuberay_plugin_sdk::{Event, Host, HostError};
use kuberay_rules::time;

use crate::{
    cluster,
    conditions::{self, FALSE, TRUE, UNKNOWN},
    consts::{RECONCILE_ACTION, reason},
    context::Ctx,
    duration, endpoints, incremental,
    service::cluster_name,
    services,
};

/// What one reconcile found out about the clusters.
pub struct Observed<'a> {
    pub active: Option<&'a RayCluster>,
    pub pending: Option<&'a RayCluster>,
    pub active_apps: Option<BTreeMap<String, AppStatus>>,
    pub pending_apps: Option<BTreeMap<String, AppStatus>>,
    /// The head and serve Services, when a cluster is ready to serve.
    pub services: Option<(Service, Service)>,
    /// Names of the clusters the RayService has, so a new one gets another.
    pub taken: Vec<String>,
    /// The HTTPRoute of an incremental upgrade, as written in this reconcile.
    pub route: Option<serde_json::Value>,
}

/// Computes the status from what was observed.
pub fn calculate<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &mut RayServiceStatuses,
    seen: Observed<'_>,
) -> Result<(), HostError> {
    status.observed_generation = ctx.service.metadata.generation;
    let active = status
        .active_service_status
        .get_or_insert_with(RayServiceStatus::default);
    active.ray_cluster_status = seen.active.map(|c| c.status.clone().unwrap_or_default());
    active.application_statuses = seen.active_apps;
    let pending = status
        .pending_service_status
        .get_or_insert_with(RayServiceStatus::default);
    pending.ray_cluster_status = seen.pending.map(|c| c.status.clone().unwrap_or_default());
    pending.application_statuses = seen.pending_apps;

    let incremental = crate::service::incremental(&ctx.service);
    let mut pending_serving = false;
    let mut pending_cluster = seen.pending;
    if let Some((head, _)) = &seen.services {
        let points_to = services::selected_cluster(head).unwrap_or_default().to_string();
        let pending_name = cluster_name(&status.pending_service_status);
        let promote = if incremental {
            incremental::record_traffic(ctx, status, seen.route.as_ref(), seen.pending.is_some());
            incremental::should_promote(status, seen.pending.is_some())
        } else {
            cluster_name(&status.active_service_status) != points_to
        };
        if promote {
            status.active_service_status = status.pending_service_status.take();
            status.pending_service_status = Some(RayServiceStatus::default());
        }
        pending_serving = points_to == pending_name;
    }
    if incremental::finish_rollback(ctx, status, seen.pending) {
        pending_cluster = None;
    }
    if cluster::should_prepare(
        &ctx.service,
        &ctx.env,
        status,
        seen.active,
        pending_cluster,
        pending_serving,
    ) {
        let name = cluster::new_name(ctx, &seen.taken);
        status.pending_service_status = Some(RayServiceStatus {
            ray_cluster_name: Some(name),
            target_capacity: incremental
                .then(|| incremental::initial_capacity(status))
                .flatten(),
            ..RayServiceStatus::default()
        });
    }
    status.num_serve_endpoints = Some(if incremental {
        // Both clusters serve during an incremental upgrade, each behind its own Service.
        let active = seen.active.and_then(|c| c.metadata.name.as_deref()).map_or_else(
            || services::serve_service_name(ctx),
            incremental::cluster_serve_service,
        );
        let mut count = endpoints::count(ctx.host, &active)?;
        if let Some(name) = pending_cluster.and_then(|c| c.metadata.name.as_deref()) {
            count += endpoints::count(ctx.host, &incremental::cluster_serve_service(name))?;
        }
        count
    } else {
        endpoints::count(ctx.host, &services::serve_service_name(ctx))?
    });
    conditions_of(ctx, status);
    // KubeRay's `NotRunning` is the empty string, which its JSON leaves out.
    status.service_status =
        conditions::is_true(status, types::RAY_SERVICE_READY).then_some(ServiceStatus::Running);
    Ok(())
}

fn conditions_of<H: Host>(ctx: &Ctx<'_, H>, status: &mut RayServiceStatuses) {
    let now = ctx.now;
    if status.conditions.as_ref().is_none_or(Vec::is_empty) {
        let message = "RayService is initializing";
        let init = reasons::RAY_SERVICE_INITIALIZING;
        conditions::set(status, types::RAY_SERVICE_READY, FALSE, init, message, now);
        conditions::set(status, types::UPGRADE_IN_PROGRESS, FALSE, init, message, now);
    }
    if status.num_serve_endpoints.unwrap_or_default() > 0 {
        let message = "Number of serve endpoints is greater than 0";
        conditions::set(
            status,
            types::RAY_SERVICE_READY,
            TRUE,
            reasons::NON_ZERO_SERVE_ENDPOINTS,
            message,
            now,
        );
    } else if conditions::is_true(status, types::RAY_SERVICE_READY) {
        let message = "Number of serve endpoints dropped to 0";
        conditions::set(
            status,
            types::RAY_SERVICE_READY,
            FALSE,
            reasons::ZERO_SERVE_ENDPOINTS,
            message,
            now,
        );
    } else {
        initializing_timeout(ctx, status);
    }
    let active = cluster_name(&status.active_service_status);
    let pending = cluster_name(&status.pending_service_status);
    let upgrade = types::UPGRADE_IN_PROGRESS;
    if !active.is_empty() && !pending.is_empty() {
        let message = "Both active and pending Ray clusters exist";
        conditions::set(
            status,
            upgrade,
            TRUE,
            reasons::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            message,
            now,
        );
    } else if !active.is_empty() {
        let message = "Active Ray cluster exists and no pending Ray cluster";
        conditions::set(status, upgrade, FALSE, reasons::NO_PENDING_CLUSTER, message, now);
    } else {
        let keep = conditions::find(status, upgrade).is_some_and(|c| {
            c.reason == reasons::RAY_SERVICE_INITIALIZING
                || c.reason == reasons::RAY_SERVICE_INITIALIZING_TIMEOUT
        });
        if !keep {
            let message = "No active Ray cluster exists, and the RayService is not initializing.";
            conditions::set(status, upgrade, UNKNOWN, reasons::NO_ACTIVE_CLUSTER, message, now);
        }
    }
}

/// The timeout of `ray.io/initializing-timeout` in whole seconds, if set and valid.
fn timeout_seconds<H: Host>(ctx: &Ctx<'_, H>) -> Option<i64> {
    let text = ctx
        .service
        .metadata
        .annotations
        .as_ref()?
        .get(annotations::RAY_SERVICE_INITIALIZING_TIMEOUT)?;
    duration::parse_timeout(text)
        .ok()
        .filter(|s| *s > 0.0)
        .map(|s| s.ceil() as i64)
}

/// KubeRay's `markFailedOnInitializingTimeout`: a RayService still initializing after the timeout fails
/// for good and lets its clusters go.
fn initializing_timeout<H: Host>(ctx: &Ctx<'_, H>, status: &mut RayServiceStatuses) {
    let Some(timeout) = timeout_seconds(ctx) else {
        return;
    };
    let Some(ready) = conditions::find(status, types::RAY_SERVICE_READY) else {
        return;
    };
    if ready.status != FALSE || ready.reason != reasons::RAY_SERVICE_INITIALIZING {
        return;
    }
    let spent = ctx.now - time::seconds(&ready.last_transition_time);
    if spent < timeout {
        return;
    }
    for s in [
        &mut status.active_service_status,
        &mut status.pending_service_status,
    ] {
        if let Some(s) = s.as_mut() {
            s.ray_cluster_name = None;
        }
    }
    let (spent, timeout) = (duration::go_format(spent), duration::go_format(timeout));
    let message = format!(
        "RayService failed to become ready within the configured timeout of {timeout}. Time spent initializing: {spent}"
    );
    let reason_ = reasons::RAY_SERVICE_INITIALIZING_TIMEOUT;
    conditions::set(
        status,
        types::RAY_SERVICE_READY,
        FALSE,
        reason_,
        &message,
        ctx.now,
    );
    ctx.event(&Event::warning(
        reason::INITIALIZING_TIMEOUT,
        RECONCILE_ACTION,
        format!("RayService initializing timeout exceeded after {spent} (configured timeout: {timeout})"),
    ));
}

/// Whether the RayService failed its initializing timeout (a terminal state).
pub fn timed_out(status: &RayServiceStatuses) -> bool {
    conditions::find(status, types::RAY_SERVICE_READY)
        .is_some_and(|c| c.status == FALSE && c.reason == reasons::RAY_SERVICE_INITIALIZING_TIMEOUT)
}

/// Writes `new` if it differs from `old` (the update time aside); returns whether it wrote.
pub fn write<H: Host>(
    ctx: &Ctx<'_, H>,
    old: &RayServiceStatuses,
    mut new: RayServiceStatuses,
) -> Result<bool, HostError> {
    // An empty cluster status is left out rather than written as `{}` (which the API server saw as null).
    for s in [&mut new.active_service_status, &mut new.pending_service_status] {
        if s.as_ref().is_some_and(|s| *s == RayServiceStatus::default()) {
            *s = None;
        }
    }
    let mut compared = new.clone();
    compared.last_update_time = old.last_update_time.clone();
    if compared == *old {
        return Ok(false);
    }
    new.last_update_time = Some(time::from_seconds(ctx.now));
    let value = serde_json::to_value(&new).map_err(|e| HostError::Invalid(e.to_string()))?;
    ctx.host.apply_status(&value)?;
    Ok(true)
}
