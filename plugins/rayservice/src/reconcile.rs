//! One reconcile of a RayService, in KubeRay's order: hand off RayServices another controller manages,
//! delete clusters no longer used, keep the finalizer, validate, suspend, then the clusters, the head Pods'
//! serve labels, the Serve applications, the Services and the status. Each reconcile runs in a fresh
//! instance: everything it knows comes from the RayService, what it owns, and the Ray heads.

use kuberay_crds::{
    RayCluster, RayService, RayServiceStatuses, constants::conditions as types, constants::finalizers,
    reasons,
};
use kuberay_plugin_sdk::{Event, Host, LogLevel, Outcome, ReconcileError, Request, TypedHost};
use kuberay_rules::consts::action;

use crate::{
    cluster, conditions,
    consts::{GATEWAY_API_RETRY, REQUEUE, reason},
    context::Ctx,
    dangling, incremental, proxy_health,
    serve::{self, ServeState},
    service::cluster_name,
    services,
    status::{self, Observed},
    suspend,
    validation::{self, Invalid},
};

fn transient(e: impl ToString) -> ReconcileError {
    ReconcileError::Transient(e.to_string())
}

pub fn reconcile<H: Host>(host: &H, request: Request) -> Result<Outcome, ReconcileError> {
    let service: RayService = request
        .object
        .into_typed()
        .map_err(|e| ReconcileError::InvalidObject(format!("the RayService could not be read: {e}")))?;
    if let Some(manager) = service
        .spec
        .managed_by
        .as_deref()
        .filter(|m| *m != kuberay_crds::MANAGED_BY_KUBERAY)
    {
        host.log(
            LogLevel::Info,
            "skipping RayService managed by another controller",
            &[("managed-by", manager)],
        );
        return Ok(Outcome::done());
    }
    let ctx = Ctx::new(host, service);
    let old = ctx.status();
    let has_to_clean = dangling::cleanup(&ctx, &old)?;
    if ctx.service.metadata.deletion_timestamp.is_some() {
        return finish_deletion(&ctx, has_to_clean);
    }
    let has_finalizer = ctx
        .service
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizers::RAY_SERVICE);
    if !has_finalizer {
        host.add_finalizer(finalizers::RAY_SERVICE)?;
        return Ok(Outcome::requeue_after(REQUEUE));
    }
    if let Err(invalid) = validation::validate(&ctx.service, ctx.gates) {
        return validation_failed(&ctx, &old, &invalid);
    }
    if crate::service::incremental(&ctx.service)
        && let Err(message) = incremental::read_gateway(&ctx)?
    {
        return gateway_api_missing(&ctx, &old, &message);
    }
    let mut new = old.clone();
    suspend::handle(&ctx, &mut new)?;
    status::write(&ctx, &old, new.clone())?;
    if suspend::operative(&new) {
        let suspended = conditions::is_true(&new, types::RAY_SERVICE_SUSPENDED);
        return Ok(if suspended {
            Outcome::done()
        } else {
            Outcome::requeue_after(REQUEUE)
        });
    }
    if status::timed_out(&new) {
        return Ok(if has_to_clean {
            Outcome::requeue_after(REQUEUE)
        } else {
            Outcome::done()
        });
    }
    run(&ctx, &old, new)
}

/// The clusters, Serve, the Services and the status.
fn run<H: Host>(
    ctx: &Ctx<'_, H>,
    old: &RayServiceStatuses,
    mut new: RayServiceStatuses,
) -> Result<Outcome, ReconcileError> {
    let (active, pending) = clusters(ctx, &new)?;
    let incremental = crate::service::incremental(&ctx.service);
    if incremental {
        incremental::rollback_state(ctx, &mut new, active.as_ref(), pending.as_ref());
    } else {
        incremental::remove_gateway(ctx)?;
    }
    for cluster in [active.as_ref(), pending.as_ref()] {
        proxy_health::reconcile(ctx, cluster)?;
    }
    // The Gateway and HTTPRoute as the previous reconcile left them: their readiness gates the capacity steps.
    let (gateway, route) = if incremental {
        let gateway = incremental::read_gateway(ctx)?.map_err(transient)?;
        (gateway, incremental::read_route(ctx)?)
    } else {
        (None, None)
    };
    let mut seen = Observed {
        active: active.as_ref(),
        pending: pending.as_ref(),
        active_apps: None,
        pending_apps: None,
        services: None,
        taken: dangling::owned_clusters(ctx)?
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect(),
        route: None,
    };
    let (mut active_ready, mut pending_ready) = (false, false);
    // Serve on one cluster; during an incremental upgrade, then its `target_capacity` step.
    let serve_on =
        |new: &mut RayServiceStatuses, cluster: &RayCluster| -> Result<ServeState, ReconcileError> {
            let name = cluster.metadata.name.clone().unwrap_or_default();
            let (allowed, target_capacity) = incremental::submit_plan(&ctx.service, new, &name);
            let submit = serve::Submit {
                allowed,
                target_capacity,
            };
            let state = serve::reconcile(ctx, cluster, submit).map_err(transient)?;
            if incremental && serve::head_ready(cluster) {
                incremental::step_capacity(
                    ctx,
                    new,
                    &name,
                    state.running.as_ref(),
                    gateway.as_ref(),
                    route.as_ref(),
                )
                .map_err(transient)?;
            }
            Ok(state)
        };
    if let Some(pending) = &pending {
        let state = serve_on(&mut new, pending)?;
        (pending_ready, seen.pending_apps) = (state.ready, state.applications);
    }
    if let Some(active) = &active
        && ((pending.is_none()
            && !cluster::should_prepare(&ctx.service, &ctx.env, &new, Some(active), None, false))
            || (pending.is_some() && incremental))
    {
        let state = serve_on(&mut new, active)?;
        (active_ready, seen.active_apps) = (state.ready, state.applications);
    }
    if incremental {
        for cluster in [active.as_ref(), pending.as_ref()].into_iter().flatten() {
            let intent = services::serve_service(ctx, cluster).map_err(transient)?;
            services::reconcile(ctx, &intent)?;
        }
        incremental::reconcile_gateway(ctx, gateway.as_ref())?;
        seen.route = incremental::reconcile_route(
            ctx,
            &new,
            active.as_ref(),
            pending.as_ref(),
            pending_ready,
            route.as_ref(),
        )?;
    }
    let upgrading_incrementally = incremental::in_progress(&ctx.service, &new);
    let target = if pending_ready && !upgrading_incrementally {
        pending.as_ref()
    } else if active_ready || pending_ready {
        active.as_ref()
    } else {
        None
    };
    if let Some(target) = target {
        let head = services::reconcile(ctx, &services::head_service(ctx, target))?;
        let intent = services::serve_service(ctx, target).map_err(transient)?;
        let serve = services::reconcile(ctx, &intent)?;
        seen.services = Some((head, serve));
    }
    status::calculate(ctx, &mut new, seen)?;
    status::write(ctx, old, new)?;
    Ok(Outcome::requeue_after(REQUEUE))
}

/// The active and pending clusters named in the status; creates the pending one if it is missing and
/// updates either in place when only worker groups were appended (KubeRay's `reconcileRayCluster`).
fn clusters<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &RayServiceStatuses,
) -> Result<(Option<RayCluster>, Option<RayCluster>), ReconcileError> {
    let get = |name: String| -> Result<Option<RayCluster>, ReconcileError> {
        if name.is_empty() {
            Ok(None)
        } else {
            Ok(ctx.host.get_as::<RayCluster>(&name)?)
        }
    };
    let active = get(cluster_name(&status.active_service_status))?;
    let pending_name = cluster_name(&status.pending_service_status);
    let pending = get(pending_name.clone())?;
    if !pending_name.is_empty() && pending.is_none() {
        let created = cluster::create(ctx, &pending_name)?;
        return Ok((active, Some(created)));
    }
    let active = match active {
        Some(c) if cluster::should_update(&ctx.service, status, Some(&c), true) => {
            Some(cluster::update(ctx, &c, "active")?)
        }
        other => other,
    };
    let pending = match pending {
        Some(c) if cluster::should_update(&ctx.service, status, Some(&c), false) => {
            Some(cluster::update(ctx, &c, "pending")?)
        }
        other => other,
    };
    Ok((active, pending))
}

/// While the RayService is being deleted: its clusters go first, then the finalizer.
fn finish_deletion<H: Host>(ctx: &Ctx<'_, H>, has_to_clean: bool) -> Result<Outcome, ReconcileError> {
    let has_finalizer = ctx
        .service
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizers::RAY_SERVICE);
    if has_to_clean {
        ctx.log(
            LogLevel::Info,
            "waiting for the RayService's RayClusters to be deleted",
        );
        return Ok(Outcome::requeue_after(REQUEUE));
    }
    if has_finalizer {
        ctx.host.remove_finalizer(finalizers::RAY_SERVICE)?;
    }
    Ok(Outcome::done())
}

/// `Plugin::cleanup`: the RayService is being deleted and still has the finalizer.
pub fn cleanup<H: Host>(host: &H, request: Request) -> Result<Outcome, ReconcileError> {
    match request.object.into_typed::<RayService>() {
        Ok(service) => {
            let ctx = Ctx::new(host, service);
            let has_to_clean = dangling::cleanup(&ctx, &ctx.status())?;
            finish_deletion(&ctx, has_to_clean)
        }
        Err(e) => {
            host.log(
                LogLevel::Warn,
                &format!("the RayService could not be read ({e}); removing the finalizer"),
                &[],
            );
            host.remove_finalizer(finalizers::RAY_SERVICE)?;
            Ok(Outcome::done())
        }
    }
}

/// `NewClusterWithIncrementalUpgrade` on an API server without the Gateway API: `Ready=False` with the
/// reason, a Warning event, and another look later (the CRDs may be installed meanwhile). Nothing is
/// created or deleted.
fn gateway_api_missing<H: Host>(
    ctx: &Ctx<'_, H>,
    old: &RayServiceStatuses,
    message: &str,
) -> Result<Outcome, ReconcileError> {
    ctx.log(LogLevel::Warn, message);
    let mut new = old.clone();
    conditions::set(
        &mut new,
        types::RAY_SERVICE_READY,
        conditions::FALSE,
        reasons::RAY_SERVICE_VALIDATION_FAILED,
        message,
        ctx.now,
    );
    if status::write(ctx, old, new)? {
        ctx.event(&Event::warning(
            reason::GATEWAY_API_NOT_INSTALLED,
            action::VALIDATE,
            format!("{}: {message}", ctx.key(&ctx.name)),
        ));
    }
    Ok(Outcome::requeue_after(GATEWAY_API_RETRY))
}

/// KubeRay marks an invalid RayService `Ready=False/ValidationFailed` and waits for a change.
fn validation_failed<H: Host>(
    ctx: &Ctx<'_, H>,
    old: &RayServiceStatuses,
    invalid: &Invalid,
) -> Result<Outcome, ReconcileError> {
    ctx.log(LogLevel::Warn, &invalid.message);
    let mut new = old.clone();
    let validation = reasons::RAY_SERVICE_VALIDATION_FAILED;
    conditions::set(
        &mut new,
        types::RAY_SERVICE_READY,
        conditions::FALSE,
        validation,
        &invalid.message,
        ctx.now,
    );
    if status::write(ctx, old, new)? {
        ctx.event(&Event::warning(
            invalid.reason,
            action::VALIDATE,
            format!("{}: {}", ctx.key(&ctx.name), invalid.message),
        ));
    }
    Ok(Outcome::done())
}
