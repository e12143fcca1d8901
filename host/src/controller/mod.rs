//! Reconcile queues: one kube-runtime controller per reconciled kind and watched namespace scope, fed by the
//! shared watch caches. A change of an object's spec, labels, annotations or deletion state, or of anything
//! it owns, queues it; kube-runtime never runs two reconciles of the same object at once, and the permits
//! bound how many run across all kinds (`--concurrency`), each plugin getting at most its fair share.

mod backoff;
mod kuberay_metrics;
mod permits;
mod queue;
mod reconcile;
mod report;
mod triggers;

use std::sync::Arc;

use futures::StreamExt;
use kube::{
    api::ApiResource,
    runtime::{
        Controller, controller,
        reflector::{ObjectRef, Store},
    },
};
use kuberay_plugin_sdk::{HostError, Kind};

use self::queue::Queue;
pub(crate) use self::{backoff::Failures, permits::Permits};
use crate::{
    kubernetes::{KubeBridge, compact::CachedObject, wait_synced},
    metrics::Metrics,
    raybridge::RayBridge,
    sandbox::{PluginSlot, Sandbox},
};

/// How each kind's reconcile queue runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueConfig {
    /// Reconciles of one kind and scope at once (the permits bound them across kinds).
    pub concurrency: u16,
    /// Trailing-edge debounce of a queued reconcile: the Pod events of a cluster coming up (created,
    /// scheduled, running, ready) become one reconcile instead of one each.
    pub debounce: std::time::Duration,
}

/// What every controller shares.
pub(crate) struct Shared {
    pub sandbox: Arc<Sandbox>,
    pub bridge: Arc<KubeBridge>,
    pub(crate) ray: Arc<RayBridge>,
    pub permits: Permits,
    pub failures: Failures,
    pub metrics: Metrics,
    /// Kinds whose status has no `conditions` (a RayJob's): their failures are reported by Events and logs.
    pub(crate) conditionless: report::Conditionless,
}

/// The context of one kind's controller.
pub(crate) struct KindContext {
    pub kind: Kind,
    pub shared: Arc<Shared>,
    /// Its reconcile requests, as the work-queue metrics count them.
    pub(crate) queue: Arc<Queue>,
}

/// How often requests of objects that went away are dropped from the work-queue metrics' count.
const QUEUE_PRUNE: std::time::Duration = std::time::Duration::from_secs(15);

/// Whether `store` has the object `namespace/name`.
fn cached(store: &Store<CachedObject>, resource: &ApiResource, namespace: &str, name: &str) -> bool {
    store
        .get(&ObjectRef::new_with(name, resource.clone()).within(namespace))
        .is_some()
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ControllerError {
    #[error("resolving {kind}: {message}")]
    Resolve { kind: Kind, message: String },
}

/// Starts the controllers for `kind` (one per watched scope) and runs them until `shutdown` resolves.
pub(crate) async fn run(
    kind: Kind,
    shared: Arc<Shared>,
    queue_config: QueueConfig,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    registered: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), ControllerError> {
    // Only owned kinds the policy granted are watched, and never Secrets: the operator is not given list
    // and watch on them, and a plugin reads the few it may by name.
    let (owns, plugin) = match shared.sandbox.plugin_for(&kind) {
        Some(PluginSlot::Ready(plugin)) => (
            plugin
                .grant
                .owns
                .iter()
                .filter(|owned| **owned != Kind::new("", "v1", "Secret"))
                .cloned()
                .collect::<Vec<Kind>>(),
            plugin.grant.entry.clone(),
        ),
        _ => (Vec::new(), String::new()),
    };
    let namespaced = shared.bridge.discovery.resolve(&kind).await.map(|r| r.namespaced);
    if namespaced.as_ref().is_ok_and(|namespaced| !namespaced) {
        tracing::error!(%kind, %plugin, "refused: a plugin may not reconcile a cluster-scoped kind; not starting its controller");
        shared.metrics.plugin_refused(&plugin, "cluster-scoped");
        return Ok(());
    }
    let resolved = shared
        .bridge
        .watch(&kind)
        .await
        .map_err(|e| ControllerError::Resolve {
            kind: kind.clone(),
            message: e.to_string(),
        })?;
    let mut owned = Vec::new();
    for child in &owns {
        if !namespaced_owned_kind(&shared, &kind, child).await? {
            continue;
        }
        let child_resolved = shared
            .bridge
            .watch(child)
            .await
            .map_err(|e| ControllerError::Resolve {
                kind: child.clone(),
                message: e.to_string(),
            })?;
        owned.push((child.clone(), child_resolved));
    }
    if let Some(registered) = registered.take() {
        let _ = registered.send(());
    }
    let queue = Arc::new(Queue::new(
        shared
            .metrics
            .controllers
            .started(&kind.kind, queue_config.concurrency),
    ));
    let context = Arc::new(KindContext {
        kind: kind.clone(),
        shared: shared.clone(),
        queue: queue.clone(),
    });
    // One shutdown signal fans out to every scope's controller.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let mut stores = Vec::new();
    let mut runs = Vec::new();
    for scope in shared.bridge.caches.scope().scopes() {
        let Some(store) = shared.bridge.caches.scope_store(&kind, &scope) else {
            continue;
        };
        // A reconcile that ran before the owned kinds' caches have listed would see no Pods and create them
        // again, so nothing runs until every cache this controller reads has synced.
        for (child, _) in &owned {
            if let Some(child_store) = shared.bridge.caches.scope_store(child, &scope) {
                wait_synced(&child_store).await;
            }
        }
        wait_synced(&store).await;
        let resource = resolved.resource.clone();
        if kuberay_metrics::has_durations(&kind.group, &kind.kind) {
            let follow = kuberay_metrics::follow(
                kind.kind.clone(),
                shared.bridge.caches.subscribe(&kind, &scope),
                store.clone(),
                resource.clone(),
                shared.metrics.kuberay.clone(),
            );
            tokio::spawn(until_stopped(follow, stop_rx.clone()));
        }
        stores.push(store.clone());
        let primary = triggers::primary_changes(shared.bridge.caches.subscribe(&kind, &scope), store.clone())
            .inspect({
                let (queue, store, resource) = (queue.clone(), store.clone(), resource.clone());
                move |change| {
                    if let Ok(object) = change {
                        let (namespace, name) = triggers::name_of(object);
                        if cached(&store, &resource, namespace, name) {
                            queue.added(namespace, name);
                        }
                    }
                }
            });
        let mut controller = Controller::for_stream_with(primary, store.clone(), resource.clone());
        for (child, child_resolved) in &owned {
            let changes = triggers::all_changes(shared.bridge.caches.subscribe(child, &scope)).inspect({
                let (queue, store, resource, kind) =
                    (queue.clone(), store.clone(), resource.clone(), kind.clone());
                move |change| {
                    if let Ok(object) = change {
                        let namespace = triggers::name_of(object).0;
                        for owner in triggers::owners_of(object, &kind) {
                            if cached(&store, &resource, namespace, owner) {
                                queue.added(namespace, owner);
                            }
                        }
                    }
                }
            });
            controller = controller.owns_stream_with(changes, child_resolved.resource.clone());
        }
        let run = controller
            .with_config(
                controller::Config::default()
                    .concurrency(queue_config.concurrency)
                    .debounce(queue_config.debounce),
            )
            .graceful_shutdown_on({
                let mut stop = stop_rx.clone();
                async move {
                    let _ = stop.wait_for(|s| *s).await;
                }
            })
            .run(reconcile::reconcile, reconcile::error_policy, context.clone())
            .for_each(|result| async move {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "controller event");
                }
            });
        runs.push(run);
    }
    tokio::spawn(until_stopped(
        prune_queue(queue, stores, resolved.resource.clone()),
        stop_rx.clone(),
    ));
    tracing::info!(%kind, owns = ?owns.iter().map(ToString::to_string).collect::<Vec<_>>(), "controller started");
    futures::future::join_all(runs).await;
    tracing::info!(%kind, "controller stopped");
    Ok(())
}

/// Runs `task` until the controllers stop.
async fn until_stopped(task: impl Future<Output = ()>, mut stop: tokio::sync::watch::Receiver<bool>) {
    tokio::select! {
        () = task => {}
        _ = stop.wait_for(|stopped| *stopped) => {}
    }
}

/// Drops, now and then, the queued requests of objects gone from every scope's store.
async fn prune_queue(queue: Arc<Queue>, stores: Vec<Store<CachedObject>>, resource: ApiResource) {
    loop {
        tokio::time::sleep(QUEUE_PRUNE).await;
        queue.prune(|namespace, name| {
            stores
                .iter()
                .any(|store| cached(store, &resource, namespace, name))
        });
    }
}

/// Whether `child`, a kind the plugin of `kind` owns, is namespaced. Objects a plugin creates live in its
/// object's namespace, so a cluster-scoped owned kind (Nodes, ClusterRoles) is never watched: watching it
/// would make the operator list the whole cluster's objects of that kind for nothing.
async fn namespaced_owned_kind(shared: &Shared, kind: &Kind, child: &Kind) -> Result<bool, ControllerError> {
    let resolved = match shared.bridge.discovery.resolve(child).await {
        Ok(resolved) => resolved,
        // An owned kind of an optional API (the Gateway API's, for RayService's incremental upgrades) that
        // the API server does not serve: not watched; the plugin finds out when it asks for one.
        Err(HostError::NotFound(message)) => {
            tracing::warn!(%kind, owned = %child, %message, "not watching an owned kind the API server does not serve");
            return Ok(false);
        }
        Err(e) => {
            return Err(ControllerError::Resolve {
                kind: child.clone(),
                message: e.to_string(),
            });
        }
    };
    if !resolved.namespaced {
        tracing::warn!(%kind, owned = %child, "not watching a cluster-scoped owned kind; plugins own only namespaced objects");
    }
    Ok(resolved.namespaced)
}
