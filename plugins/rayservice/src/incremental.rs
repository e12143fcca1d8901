//! `NewClusterWithIncrementalUpgrade` (KubeRay v1.7, Gateway API): the RayService's traffic goes through a
//! Gateway `<name>-gateway` (an HTTP listener on port 80 of `gatewayClassName`) and an HTTPRoute
//! `<name>-httproute` whose weighted backends are the per-cluster serve Services `<cluster>-serve-svc`.
//! A new cluster starts with Serve `target_capacity` 0; then, in turns, its capacity rises by
//! `maxSurgePercent`, the traffic follows `stepSizePercent` at a time every `intervalSeconds` up to that
//! capacity, and the old cluster's capacity falls by `maxSurgePercent`, until the old cluster has capacity 0
//! and the new one all the traffic; then the new cluster is promoted. Reverting the spec mid-upgrade (or
//! changing it to a third spec) rolls back the same way in the other direction (`RollbackInProgress`).
//!
//! Everything is read from what is stored: the traffic split from the HTTPRoute's weights, the capacities
//! and the time of the last traffic step from the RayService's status, the readiness of the Gateway and the
//! HTTPRoute from their status (written by the Gateway controller). Nothing is kept between reconciles.

use kuberay_crds::{
    RayCluster, RayService, RayServiceStatus, RayServiceStatuses,
    constants::{annotations, conditions as types},
    reasons,
};
use kuberay_plugin_sdk::{Event, Host, HostError, Kind, LogLevel, ownership};
use kuberay_rules::{
    consts::{self as rules, action},
    hash,
    report::Report,
    time,
};
use serde_json::{Value, json};

use crate::{
    cluster,
    conditions::{self, TRUE},
    consts::{RECONCILE_ACTION, reason},
    context::Ctx,
    service::cluster_name,
};

pub const GATEWAY_API_GROUP: &str = "gateway.networking.k8s.io";
const GATEWAY_API_VERSION: &str = "v1";
/// KubeRay's listener: `http`, HTTP on port 80.
const LISTENER_NAME: &str = "http";
const LISTENER_PORT: i64 = 80;

pub fn gateway_kind() -> Kind {
    Kind::new(GATEWAY_API_GROUP, GATEWAY_API_VERSION, "Gateway")
}

pub fn route_kind() -> Kind {
    Kind::new(GATEWAY_API_GROUP, GATEWAY_API_VERSION, "HTTPRoute")
}

pub fn gateway_name(service: &str) -> String {
    format!("{service}-gateway")
}

pub fn route_name(service: &str) -> String {
    format!("{service}-httproute")
}

/// The per-cluster serve Service of `cluster`.
pub fn cluster_serve_service(cluster: &str) -> String {
    kuberay_rules::names::serve_service_name(cluster)
}

/// `clusterUpgradeOptions` with KubeRay's defaults (validation made sure the required ones are set).
struct Options {
    max_surge: i32,
    step: i32,
    interval: i64,
    class: String,
}

fn options(service: &RayService) -> Options {
    let options = service
        .spec
        .upgrade_strategy
        .as_ref()
        .and_then(|s| s.cluster_upgrade_options.clone())
        .unwrap_or_default();
    Options {
        max_surge: options.max_surge_percent.unwrap_or(100),
        step: options.step_size_percent.unwrap_or(0),
        interval: options.interval_seconds.map_or(0, i64::from),
        class: options.gateway_class_name,
    }
}

fn active(status: &RayServiceStatuses) -> RayServiceStatus {
    status.active_service_status.clone().unwrap_or_default()
}

fn pending(status: &RayServiceStatuses) -> RayServiceStatus {
    status.pending_service_status.clone().unwrap_or_default()
}

fn rolling_back(status: &RayServiceStatuses) -> bool {
    conditions::is_true(status, types::ROLLBACK_IN_PROGRESS)
}

fn upgrading(status: &RayServiceStatuses) -> bool {
    conditions::is_true(status, types::UPGRADE_IN_PROGRESS)
}

/// Whether an incremental upgrade is under way (its rules replace blue/green's).
pub fn in_progress(service: &RayService, status: &RayServiceStatuses) -> bool {
    crate::service::incremental(service) && upgrading(status)
}

/// Reads the Gateway; `Err` with a message when the API server does not serve the Gateway API at all.
pub fn read_gateway<H: Host>(ctx: &Ctx<'_, H>) -> Result<Result<Option<Value>, String>, HostError> {
    match ctx.host.get(&gateway_kind(), &gateway_name(&ctx.name)) {
        Ok(gateway) => Ok(Ok(gateway)),
        Err(HostError::NotFound(message)) => Ok(Err(format!(
            "NewClusterWithIncrementalUpgrade needs the Gateway API (gateway.networking.k8s.io/v1 Gateway and \
             HTTPRoute), which the API server does not serve; install its CRDs ({message})"
        ))),
        Err(e) => Err(e),
    }
}

pub fn read_route<H: Host>(ctx: &Ctx<'_, H>) -> Result<Option<Value>, HostError> {
    ctx.host.get(&route_kind(), &route_name(&ctx.name))
}

/// Deletes the Gateway and HTTPRoute this RayService made for incremental upgrades once its strategy is
/// another: nothing routes through them any more. Where the Gateway API is not served there is nothing to
/// delete; objects of those names that another controller made are left alone.
pub fn remove_gateway<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), HostError> {
    let Some(uid) = ctx.service.metadata.uid.as_deref() else {
        return Ok(());
    };
    let owned = [
        (route_kind(), route_name(&ctx.name)),
        (gateway_kind(), gateway_name(&ctx.name)),
    ];
    for (kind, name) in owned {
        let object = match ctx.host.get(&kind, &name) {
            Ok(Some(object)) => object,
            Ok(None) | Err(HostError::NotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        if !ownership::controlled_by(&object, uid) {
            continue;
        }
        let object_uid = object.pointer("/metadata/uid").and_then(Value::as_str);
        ctx.host.delete(&kind, &name, object_uid)?;
        ctx.log(
            LogLevel::Info,
            &format!(
                "deleted {} {name}: the upgrade strategy is no longer NewClusterWithIncrementalUpgrade",
                kind.kind
            ),
        );
    }
    Ok(())
}

/// KubeRay's `reconcileRollbackState`: during an upgrade, a goal spec equal to the active cluster's (the
/// user reverted) or equal to neither cluster's (a third spec) starts a rollback; a goal equal to the
/// pending cluster's cancels one.
pub fn rollback_state<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &mut RayServiceStatuses,
    active_cluster: Option<&RayCluster>,
    pending_cluster: Option<&RayCluster>,
) {
    if !upgrading(status) {
        return;
    }
    let Some(active_cluster) = active_cluster else {
        ctx.event(&Event::warning(
            reason::ROLLBACK_IMPOSSIBLE,
            RECONCILE_ACTION,
            "Active cluster not found, rollback cannot be initiated".to_string(),
        ));
        return;
    };
    let Some(pending_cluster) = pending_cluster else {
        return;
    };
    let goal = hash::rayservice_hash(&ctx.service.spec.ray_cluster_config);
    let hash_of = |c: &RayCluster| {
        cluster::annotation(c, annotations::RAY_HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE)
            .unwrap_or_default()
            .to_string()
    };
    let rolling = rolling_back(status);
    let changed = reasons::DESIRED_CLUSTER_SPEC_CHANGED;
    if goal == hash_of(active_cluster) {
        if !rolling {
            ctx.log(
                LogLevel::Info,
                "the goal spec is the active cluster's again; rolling the upgrade back",
            );
            let message = "Goal state reverted to original cluster, rolling back.";
            conditions::set(
                status,
                types::ROLLBACK_IN_PROGRESS,
                TRUE,
                changed,
                message,
                ctx.now,
            );
        }
    } else if goal == hash_of(pending_cluster) {
        if rolling {
            ctx.log(
                LogLevel::Info,
                "the goal spec is the pending cluster's again; resuming the upgrade",
            );
            conditions::remove(status, types::ROLLBACK_IN_PROGRESS);
        }
    } else if !rolling {
        ctx.log(
            LogLevel::Info,
            "the goal spec changed during the upgrade; rolling back to the active cluster first",
        );
        let message = "Goal state changed mid-upgrade, rolling back to original cluster.";
        conditions::set(
            status,
            types::ROLLBACK_IN_PROGRESS,
            TRUE,
            changed,
            message,
            ctx.now,
        );
    }
}

/// How Serve is reconciled on `cluster` during an incremental upgrade: whether `serveConfigV2` may be
/// (re)deployed there, and the `target_capacity` a deploy carries.
pub fn submit_plan(service: &RayService, status: &RayServiceStatuses, cluster: &str) -> (bool, Option<i32>) {
    if !crate::service::incremental(service) {
        return (true, None);
    }
    let (active, pending) = (active(status), pending(status));
    let is_active = active.ray_cluster_name.as_deref() == Some(cluster);
    let upgrading = upgrading(status);
    let rolling = rolling_back(status);
    // The new config goes to the new cluster; the one being phased out keeps what it runs.
    let allowed = if is_active {
        !upgrading || rolling
    } else {
        !rolling
    };
    let target = if is_active {
        active.target_capacity
    } else if pending.ray_cluster_name.as_deref() == Some(cluster) {
        pending.target_capacity
    } else {
        None
    };
    (allowed, target)
}

/// Whether a condition of `type_` in a Gateway API status list is `True`.
fn condition_true(conditions: Option<&Value>, type_: &str) -> bool {
    conditions
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == type_ && c["status"] == "True"))
}

/// KubeRay's `IsGatewayReady`: `Accepted` and `Programmed`.
pub fn gateway_ready(gateway: Option<&Value>) -> bool {
    let conditions = gateway.and_then(|g| g.pointer("/status/conditions"));
    condition_true(conditions, "Accepted") && condition_true(conditions, "Programmed")
}

/// KubeRay's `IsHTTPRouteReady`: the route's status for the Gateway is `Accepted` and `ResolvedRefs`.
pub fn route_ready(namespace: &str, gateway: &str, route: Option<&Value>) -> bool {
    route
        .and_then(|r| r.pointer("/status/parents"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p["parentRef"]["name"] == gateway)
        .filter(|p| {
            p["parentRef"]["namespace"]
                .as_str()
                .is_none_or(|n| n == namespace)
        })
        .any(|p| {
            condition_true(p.get("conditions"), "Accepted")
                && condition_true(p.get("conditions"), "ResolvedRefs")
        })
}

/// KubeRay's `checkIfNeedTargetCapacityUpdate`.
fn capacity_needs_update<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &RayServiceStatuses,
    gateway: Option<&Value>,
    route: Option<&Value>,
) -> Result<(), &'static str> {
    let (active, pending) = (active(status), pending(status));
    if active.ray_cluster_name.is_none() || pending.ray_cluster_name.is_none() {
        return Err(
            "Both active and pending RayCluster instances are required for NewClusterWithIncrementalUpgrade.",
        );
    }
    if !gateway_ready(gateway) {
        return Err("Gateway for RayService NewClusterWithIncrementalUpgrade is not ready.");
    }
    if !route_ready(&ctx.namespace, &gateway_name(&ctx.name), route) {
        return Err("HTTPRoute for RayService NewClusterWithIncrementalUpgrade is not ready.");
    }
    let (Some(a), Some(_), Some(p), Some(_)) = (
        active.target_capacity,
        active.traffic_routed_percent,
        pending.target_capacity,
        pending.traffic_routed_percent,
    ) else {
        return Ok(());
    };
    if rolling_back(status) {
        return if a == 100 && p == 0 {
            Err("Rollback complete: all traffic has been restored to the active cluster.")
        } else {
            Ok(())
        };
    }
    if a == 0 && p == 100 {
        return Err(
            "All traffic has migrated to the upgraded cluster and NewClusterWithIncrementalUpgrade is complete.",
        );
    }
    Ok(())
}

/// The next `target_capacity` of `cluster`, if it moves now (KubeRay's `reconcileServeTargetCapacity`):
/// the cluster gaining traffic rises by `maxSurgePercent` once the traffic caught up with its capacity; the
/// other one falls by as much while the two add up to more than 100.
fn next_capacity(status: &mut RayServiceStatuses, cluster: &str, max_surge: i32) -> Option<i32> {
    let rolling = rolling_back(status);
    let active = status
        .active_service_status
        .get_or_insert_with(RayServiceStatus::default);
    let a = *active.target_capacity.get_or_insert(100);
    let a_traffic = active.traffic_routed_percent.unwrap_or(0);
    let is_active = active.ray_cluster_name.as_deref() == Some(cluster);
    let pending = status
        .pending_service_status
        .get_or_insert_with(RayServiceStatus::default);
    let p = *pending.target_capacity.get_or_insert(0);
    let p_traffic = pending.traffic_routed_percent.unwrap_or(0);
    let is_pending = pending.ray_cluster_name.as_deref() == Some(cluster);
    if rolling {
        if a != a_traffic {
            return None;
        }
        return if a + p > 100 {
            is_pending.then(|| (p - max_surge).max(0))
        } else {
            is_active.then(|| (a + max_surge).min(100))
        };
    }
    if p != p_traffic {
        return None;
    }
    if is_active && a + p > 100 {
        Some((a - max_surge).max(0))
    } else if is_pending && a + p <= 100 {
        Some((p + max_surge).min(100))
    } else {
        None
    }
}

/// Moves `cluster`'s Serve `target_capacity` one step when it is its turn: sends the config the cluster
/// runs with the new `target_capacity` and records it in the status.
pub fn step_capacity<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &mut RayServiceStatuses,
    cluster: &str,
    running: Option<&Value>,
    gateway: Option<&Value>,
    route: Option<&Value>,
) -> Result<(), String> {
    if !in_progress(&ctx.service, status) {
        return Ok(());
    }
    if let Err(why) = capacity_needs_update(ctx, status, gateway, route) {
        ctx.log(LogLevel::Debug, why);
        return Ok(());
    }
    let Some(goal) = next_capacity(status, cluster, options(&ctx.service).max_surge) else {
        return Ok(());
    };
    let Some(mut config) = running.cloned() else {
        return Ok(());
    };
    if let Some(map) = config.as_object_mut() {
        map.insert("target_capacity".into(), json!(goal));
    }
    let key = ctx.key(cluster);
    let head = kuberay_plugin_sdk::RayHead::new(ctx.host, cluster);
    match head.deploy_serve(&config) {
        Ok(()) => {
            ctx.event(&Event::normal(
                reason::UPDATED_SERVE_TARGET_CAPACITY,
                action::UPDATE,
                format!("Updated target_capacity of serve applications to {goal} on the RayCluster {key}"),
            ));
        }
        Err(e) => {
            let message = format!(
                "Failed to update target_capacity of serve applications to the RayCluster {key}: {e}"
            );
            ctx.event(&Event::warning(
                reason::FAILED_TO_UPDATE_TARGET_CAPACITY,
                action::UPDATE,
                message.clone(),
            ));
            return Err(message);
        }
    }
    for s in [
        &mut status.active_service_status,
        &mut status.pending_service_status,
    ] {
        if let Some(s) = s
            .as_mut()
            .filter(|s| s.ray_cluster_name.as_deref() == Some(cluster))
        {
            s.target_capacity = Some(goal);
        }
    }
    Ok(())
}

/// KubeRay's `calculateTrafficRoutedPercent`: the weights of the active and pending clusters, moved one
/// `stepSizePercent` toward the cluster gaining traffic once `intervalSeconds` passed since its last move,
/// never beyond that cluster's `target_capacity`.
fn next_weights<H: Host>(ctx: &Ctx<'_, H>, status: &RayServiceStatuses, pending_ready: bool) -> (i32, i32) {
    let (active, pending) = (active(status), pending(status));
    let mut active_weight = active.traffic_routed_percent.unwrap_or(100);
    let mut pending_weight = pending.traffic_routed_percent.unwrap_or(0);
    let pending_capacity = pending.target_capacity.unwrap_or(0);
    let active_capacity = active.target_capacity.unwrap_or(100);
    let rolling = rolling_back(status);
    if (!rolling && pending_weight == pending_capacity) || (rolling && active_weight == active_capacity) {
        return (active_weight, pending_weight);
    }
    let options = options(&ctx.service);
    let last = if rolling {
        &active.last_traffic_migrated_time
    } else {
        &pending.last_traffic_migrated_time
    };
    let due = last
        .as_ref()
        .is_none_or(|t| ctx.now - time::seconds(t) >= options.interval);
    if !due {
        return (active_weight, pending_weight);
    }
    if rolling {
        active_weight = (active_weight + options.step).min(100).min(active_capacity);
        pending_weight = 100 - active_weight;
    } else if pending_ready {
        pending_weight = (pending_weight + options.step).min(100).min(pending_capacity);
        active_weight = 100 - pending_weight;
    } else {
        ctx.log(
            LogLevel::Info,
            "incremental upgrade: the pending cluster is not ready; traffic migration paused",
        );
    }
    (active_weight, pending_weight)
}

/// The serve port of a cluster's head container (KubeRay's `GetServePort`).
fn serve_port(cluster: &RayCluster) -> i32 {
    cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.ports.as_ref())
        .into_iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(rules::SERVING_PORT_NAME))
        .map_or(rules::DEFAULT_SERVING_PORT, |p| p.container_port)
}

fn report<'a>(create: bool, what: &'a str, kind: &'a Kind, name: &'a str, key: &'a str) -> Report<'a> {
    let (action, done, failed) = match (create, kind.kind.as_str()) {
        (true, "Gateway") => (
            action::CREATE,
            reason::CREATED_GATEWAY,
            reason::FAILED_TO_CREATE_GATEWAY,
        ),
        (false, "Gateway") => (
            action::UPDATE,
            reason::UPDATED_GATEWAY,
            reason::FAILED_TO_UPDATE_GATEWAY,
        ),
        (true, _) => (
            action::CREATE,
            reason::CREATED_HTTPROUTE,
            reason::FAILED_TO_CREATE_HTTPROUTE,
        ),
        (false, _) => (
            action::UPDATE,
            reason::UPDATED_HTTPROUTE,
            reason::FAILED_TO_UPDATE_HTTPROUTE,
        ),
    };
    Report {
        action,
        done,
        failed,
        what,
        kind,
        name,
        key,
    }
}

/// Creates `intent` when it is missing, applies it when `differs(existing)`; returns the object as stored.
fn write<H: Host>(
    ctx: &Ctx<'_, H>,
    intent: &Value,
    existing: Option<&Value>,
    differs: impl Fn(&Value) -> bool,
    what: &str,
) -> Result<Value, HostError> {
    let kind =
        Kind::of_object(intent).ok_or_else(|| HostError::Invalid("an object without a kind".into()))?;
    let name = intent["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let key = ctx.key(&name);
    match existing {
        None => report(true, what, &kind, &name, &key).run(ctx.host, || ctx.host.create(intent)),
        Some(existing) if differs(existing) => {
            report(false, what, &kind, &name, &key).run(ctx.host, || ctx.host.apply(intent))
        }
        Some(existing) => Ok(existing.clone()),
    }
}

/// The Gateway as KubeRay builds it (`createGateway`).
pub fn gateway_intent<H: Host>(ctx: &Ctx<'_, H>) -> Value {
    json!({
        "apiVersion": format!("{GATEWAY_API_GROUP}/{GATEWAY_API_VERSION}"),
        "kind": "Gateway",
        "metadata": {"name": gateway_name(&ctx.name)},
        "spec": {
            "gatewayClassName": options(&ctx.service).class,
            "listeners": [{"name": LISTENER_NAME, "protocol": "HTTP", "port": LISTENER_PORT}],
        },
    })
}

/// Creates or updates the Gateway.
pub fn reconcile_gateway<H: Host>(ctx: &Ctx<'_, H>, existing: Option<&Value>) -> Result<Value, HostError> {
    let intent = gateway_intent(ctx);
    let differs = |live: &Value| {
        live["spec"]["gatewayClassName"] != intent["spec"]["gatewayClassName"]
            || !kuberay_plugin_sdk::subset::is_subset(
                &intent["spec"]["listeners"],
                &live["spec"]["listeners"],
            )
    };
    write(ctx, &intent, existing, differs, "the Gateway")
}

/// `(name, port, weight)` of the first rule's backends, which is what the RayService decides.
fn backends(route: &Value) -> Vec<(String, i64, i64)> {
    route
        .pointer("/spec/rules/0/backendRefs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|b| {
            (
                b["name"].as_str().unwrap_or_default().to_string(),
                b["port"].as_i64().unwrap_or_default(),
                b["weight"].as_i64().unwrap_or(1),
            )
        })
        .collect()
}

/// Creates or updates the HTTPRoute with the weights of this step (KubeRay's `createHTTPRoute` and
/// `reconcileHTTPRoute`); nothing before the RayService has an active cluster.
pub fn reconcile_route<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &RayServiceStatuses,
    active_cluster: Option<&RayCluster>,
    pending_cluster: Option<&RayCluster>,
    pending_ready: bool,
    existing: Option<&Value>,
) -> Result<Option<Value>, HostError> {
    let Some(active_cluster) = active_cluster else {
        return Ok(None);
    };
    let (active_weight, pending_weight) = next_weights(ctx, status, pending_ready);
    let backend = |cluster: &RayCluster, weight: i32| {
        json!({
            "name": cluster_serve_service(cluster.metadata.name.as_deref().unwrap_or_default()),
            "namespace": ctx.namespace,
            "port": serve_port(cluster),
            "weight": weight,
        })
    };
    let mut refs = vec![backend(active_cluster, active_weight)];
    if let Some(pending_cluster) = pending_cluster {
        refs.push(backend(pending_cluster, pending_weight));
    }
    let intent = json!({
        "apiVersion": format!("{GATEWAY_API_GROUP}/{GATEWAY_API_VERSION}"),
        "kind": "HTTPRoute",
        "metadata": {"name": route_name(&ctx.name)},
        "spec": {
            "parentRefs": [{"name": gateway_name(&ctx.name), "namespace": ctx.namespace}],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": refs,
            }],
        },
    });
    let differs = |live: &Value| {
        backends(live) != backends(&intent)
            || !kuberay_plugin_sdk::subset::is_subset(
                &intent["spec"]["parentRefs"],
                &live["spec"]["parentRefs"],
            )
    };
    write(ctx, &intent, existing, differs, "the HTTPRoute").map(Some)
}

/// KubeRay's `GetWeightsFromHTTPRoute`: the weights of the active and pending clusters' backends, `None`
/// for a cluster the route does not name.
fn route_weights(route: Option<&Value>, status: &RayServiceStatuses) -> (Option<i32>, Option<i32>) {
    let Some(route) = route else {
        return (None, None);
    };
    let list = backends(route);
    let weight_of = |cluster: String| {
        if cluster.is_empty() {
            return None;
        }
        let service = cluster_serve_service(&cluster);
        list.iter()
            .find(|(name, _, _)| *name == service)
            .and_then(|(_, _, w)| i32::try_from(*w).ok())
    };
    (
        weight_of(cluster_name(&status.active_service_status)),
        weight_of(cluster_name(&status.pending_service_status)),
    )
}

/// `trafficRoutedPercent` of both clusters from the HTTPRoute, and `lastTrafficMigratedTime` where it moved.
pub fn record_traffic<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &mut RayServiceStatuses,
    route: Option<&Value>,
    pending_exists: bool,
) {
    let (active_weight, pending_weight) = route_weights(route, status);
    let now = time::from_seconds(ctx.now);
    let set = |s: &mut Option<RayServiceStatus>, weight: i32| {
        let s = s.get_or_insert_with(RayServiceStatus::default);
        if s.traffic_routed_percent != Some(weight) {
            s.last_traffic_migrated_time = Some(now.clone());
        }
        s.traffic_routed_percent = Some(weight);
    };
    if let Some(weight) = active_weight {
        set(&mut status.active_service_status, weight);
    }
    if let Some(weight) = pending_weight.filter(|_| pending_exists) {
        set(&mut status.pending_service_status, weight);
    }
}

/// KubeRay's promotion rule of an incremental upgrade: the old cluster has no capacity left and the new one
/// all the traffic (never during a rollback); or the RayService's first cluster.
pub fn should_promote(status: &RayServiceStatuses, pending_exists: bool) -> bool {
    if upgrading(status) {
        !rolling_back(status)
            && pending_exists
            && active(status).target_capacity == Some(0)
            && pending(status).traffic_routed_percent == Some(100)
    } else {
        active(status).ray_cluster_name.is_none() && pending(status).ray_cluster_name.is_some()
    }
}

/// KubeRay's `shouldCompleteIncrementalRollback` and what follows: once the active cluster is back at full
/// capacity and traffic and the pending one drained (or unhealthy), the pending cluster is let go.
/// Returns whether the rollback completed.
pub fn finish_rollback<H: Host>(
    ctx: &Ctx<'_, H>,
    status: &mut RayServiceStatuses,
    pending_cluster: Option<&RayCluster>,
) -> bool {
    if !rolling_back(status) {
        return false;
    }
    let (active, pending) = (active(status), pending(status));
    let pending_healthy = pending_cluster.is_some_and(crate::serve::head_ready);
    let done = active.target_capacity == Some(100)
        && active.traffic_routed_percent == Some(100)
        && (!pending_healthy
            || (pending.target_capacity == Some(0) && pending.traffic_routed_percent == Some(0)));
    if !done {
        return false;
    }
    ctx.log(
        LogLevel::Info,
        "rollback complete; the pending cluster of the abandoned upgrade will be deleted",
    );
    status.pending_service_status = Some(RayServiceStatus::default());
    conditions::remove(status, types::ROLLBACK_IN_PROGRESS);
    conditions::set(
        status,
        types::UPGRADE_IN_PROGRESS,
        conditions::FALSE,
        reasons::NO_PENDING_CLUSTER,
        "Rollback complete, active Ray cluster exists and no pending Ray cluster",
        ctx.now,
    );
    true
}

/// The capacity a new pending cluster starts with: all of it for the RayService's first cluster, none
/// during an upgrade.
pub fn initial_capacity(status: &RayServiceStatuses) -> Option<i32> {
    let active = active(status);
    if active.ray_cluster_name.is_none() {
        active.target_capacity.is_none().then_some(100)
    } else {
        Some(0)
    }
}

/// Clusters the HTTPRoute still sends traffic to.
pub fn routed_clusters<H: Host>(ctx: &Ctx<'_, H>) -> Result<Vec<String>, HostError> {
    let route = match read_route(ctx) {
        Ok(Some(route)) => route,
        // No route, or no Gateway API at all (reported elsewhere).
        Ok(None) | Err(HostError::NotFound(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(backends(&route)
        .into_iter()
        .filter(|(_, _, weight)| *weight > 0)
        .filter_map(|(name, _, _)| name.strip_suffix("-serve-svc").map(str::to_string))
        .collect())
}
