//! One reconcile: pick the plugin for the kind, call `reconcile` (or `cleanup` while the object is being
//! deleted and carries the plugin's granted finalizer, the one its policy entry names), and turn the outcome
//! into the next action. Failures are
//! reported on the object and retried with backoff; other objects are not affected.

use std::{sync::Arc, time::Instant};

use kube::{ResourceExt, runtime::controller::Action};
use kuberay_admission::strip_host_condition;
use serde_json::Value;
use tracing::Instrument;

use super::{KindContext, backoff, report};
use crate::{
    admission::Admission,
    kubernetes::{compact::CachedObject, to_json},
    metrics::{ErrorLabels, KindLabels, ReconcileLabels, ReconcileResult},
    plugin_host::{PluginHost, Primary},
    sandbox::{CallFailure, Export, LoadedPlugin, PluginSlot},
};

/// A plugin's requeue hint is kept within these bounds: a zero would spin, and a huge one would overflow the
/// scheduler's clock arithmetic.
const MIN_REQUEUE: std::time::Duration = std::time::Duration::from_millis(200);
const MAX_REQUEUE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Never returned: every failure is handled (reported, backed off) inside [`reconcile`].
#[derive(Debug, thiserror::Error)]
#[error("unreachable")]
pub(crate) struct Never;

pub(crate) fn error_policy(_object: Arc<CachedObject>, _error: &Never, _ctx: Arc<KindContext>) -> Action {
    Action::requeue(backoff::delay(1))
}

pub(crate) async fn reconcile(object: Arc<CachedObject>, ctx: Arc<KindContext>) -> Result<Action, Never> {
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    let span = tracing::info_span!("reconcile", kind = %ctx.kind.kind, %namespace, %name);
    let running = ctx.queue.started(&namespace, &name);
    let started = Instant::now();
    let (action, result) = reconcile_one(&object, &ctx, &namespace, &name)
        .instrument(span)
        .await;
    ctx.queue.ended(running, started.elapsed(), result);
    Ok(action)
}

/// Done until the object or what it owns changes.
fn done() -> (Action, ReconcileResult) {
    (Action::await_change(), ReconcileResult::Success)
}

/// Failed (reported): retried after `attempt`'s backoff.
fn retry(attempt: u32) -> (Action, ReconcileResult) {
    (Action::requeue(backoff::delay(attempt)), ReconcileResult::Error)
}

/// What stops a reconcile early: its action and result.
type Early = (Action, ReconcileResult);

/// One reconcile of one object, in named stages: [`One::plugin`] (which serves the kind),
/// [`One::current`] (the object as the plugin sees it, read once and passed along), [`export_for`]
/// (reconcile, cleanup, or nothing), [`One::call`], [`One::record`] (metrics) and [`One::outcome`]
/// (the next action, and what is reported).
async fn reconcile_one(
    object: &CachedObject,
    ctx: &KindContext,
    namespace: &str,
    name: &str,
) -> (Action, ReconcileResult) {
    let shared = &ctx.shared;
    let plugins = shared.sandbox.plugins().len();
    let Some(_permit) = shared.permits.acquire(&ctx.kind.to_string(), plugins).await else {
        return done();
    };
    let started = Instant::now();
    let one = One {
        ctx,
        object,
        namespace,
        name,
        key: format!("{}/{namespace}/{name}", ctx.kind),
    };
    let plugin = match one.plugin().await {
        Ok(plugin) => plugin,
        Err(early) => return early,
    };
    let current = match one.current().await {
        Ok(current) => current,
        Err(early) => return early,
    };
    let Some(export) = export_for(&current, &plugin) else {
        return done();
    };
    // The kind must resolve (it is served by the API server) before a plugin works on its objects.
    if shared.bridge.discovery.resolve(&ctx.kind).await.is_err() {
        return retry(1);
    }
    let result = one.call(&plugin, &current, export).await;
    // The policy entry's name (the plugin had to call itself that to load).
    let plugin_name = &plugin.grant.entry;
    one.record(plugin_name, started, result.is_ok());
    one.outcome(plugin_name, &current, export, result).await
}

/// The object being reconciled and its controller's context.
struct One<'a> {
    ctx: &'a KindContext,
    object: &'a CachedObject,
    namespace: &'a str,
    name: &'a str,
    /// `kind/namespace/name`: the failure count's key.
    key: String,
}

/// Reconcile, or cleanup while the object is being deleted and carries the plugin's granted finalizer (the
/// one its policy entry names); `None`: nothing to do (deleted, and not the plugin's to clean up).
fn export_for(current: &Value, plugin: &LoadedPlugin) -> Option<Export> {
    if current.pointer("/metadata/deletionTimestamp").is_none() {
        return Some(Export::Reconcile);
    }
    let finalizers = current.pointer("/metadata/finalizers").and_then(Value::as_array);
    match &plugin.grant.finalizer {
        Some(f) if finalizers.is_some_and(|all| all.iter().any(|x| x == f)) => Some(Export::Cleanup),
        _ => None,
    }
}

impl One<'_> {
    /// The plugin serving the kind; one that is unavailable is reported and retried.
    async fn plugin(&self) -> Result<Arc<LoadedPlugin>, Early> {
        let shared = &self.ctx.shared;
        match shared.sandbox.plugin_for(&self.ctx.kind) {
            Some(PluginSlot::Ready(plugin)) => Ok(plugin),
            Some(PluginSlot::Unavailable { plugin, reason }) => {
                let attempt = shared.failures.record(&self.key);
                let kind = &self.ctx.kind;
                report::failure(
                    shared,
                    kind,
                    &plugin,
                    self.object,
                    "PluginUnavailable",
                    &reason,
                    attempt,
                )
                .await;
                Err(retry(attempt))
            }
            None => Err(done()),
        }
    }

    /// The object with the host's own recent writes (status, finalizers) applied; the cache's copy if it
    /// cannot be read. Gone: nothing to remember about it.
    async fn current(&self) -> Result<Value, Early> {
        let shared = &self.ctx.shared;
        match shared
            .bridge
            .read(&self.ctx.kind, self.namespace, self.name)
            .await
        {
            Ok(Some(current)) => Ok(current),
            Ok(None) => {
                shared.failures.reset(&self.key);
                Err(done())
            }
            Err(_) => to_json(self.object).map_err(|_| retry(1)),
        }
    }

    /// Calls `export` of `plugin` on `current` (without the host's own condition), its writes judged by
    /// admission against this object.
    async fn call(
        &self,
        plugin: &LoadedPlugin,
        current: &Value,
        export: Export,
    ) -> Result<Option<std::time::Duration>, CallFailure> {
        let shared = &self.ctx.shared;
        let mut for_plugin = current.clone();
        strip_host_condition(&mut for_plugin);
        let primary = Primary {
            kind: self.ctx.kind.clone(),
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
            uid: self.object.uid().unwrap_or_default(),
        };
        let admission = Admission::new(
            shared.bridge.clone(),
            primary,
            plugin.grant.clone(),
            &plugin.grant.entry,
            plugin.grant.finalizer.clone(),
        );
        let host = Arc::new(PluginHost::new(admission, shared.ray.clone()));
        let attempt = shared.failures.get(&self.key);
        let object = format!("{}/{}", self.namespace, self.name);
        let context = shared.sandbox.context(plugin, object, host);
        shared
            .sandbox
            .call(plugin, context, export, for_plugin.to_string(), attempt)
            .await
    }

    /// The reconcile's duration and result, in this operator's metrics.
    fn record(&self, plugin: &str, started: Instant, ok: bool) {
        let metrics = &self.ctx.shared.metrics;
        let kind = self.ctx.kind.kind.clone();
        metrics
            .reconcile_duration
            .get_or_create(&KindLabels { kind: kind.clone() })
            .observe(started.elapsed().as_secs_f64());
        let result = if ok { "success" } else { "error" };
        metrics
            .reconciles
            .get_or_create(&ReconcileLabels {
                kind,
                plugin: plugin.to_string(),
                result: result.into(),
            })
            .inc();
    }

    /// The next action after the call: a success clears the failures (and their condition) and takes the
    /// plugin's requeue hint; a failure is counted, reported and retried with backoff (an invalid object
    /// only once it changes).
    async fn outcome(
        &self,
        plugin: &str,
        current: &Value,
        export: Export,
        result: Result<Option<std::time::Duration>, CallFailure>,
    ) -> (Action, ReconcileResult) {
        let shared = &self.ctx.shared;
        let failure = match result {
            Ok(requeue) => {
                shared.failures.reset(&self.key);
                report::recovered(shared, &self.ctx.kind, plugin, current).await;
                tracing::debug!(plugin, export = export.name(), ?requeue, "reconciled");
                return requeue.map_or_else(done, |after| {
                    let after = after.clamp(MIN_REQUEUE, MAX_REQUEUE);
                    (Action::requeue(after), ReconcileResult::RequeueAfter)
                });
            }
            Err(failure) => failure,
        };
        let attempt = shared.failures.record(&self.key);
        if matches!(failure, CallFailure::Trapped(_)) {
            self.ctx.queue.panicked();
        }
        shared
            .metrics
            .reconcile_errors
            .get_or_create(&ErrorLabels {
                kind: self.ctx.kind.kind.clone(),
                plugin: plugin.to_string(),
                reason: failure.reason().into(),
            })
            .inc();
        let message = failure.to_string();
        report::failure(
            shared,
            &self.ctx.kind,
            plugin,
            self.object,
            failure.reason(),
            &message,
            attempt,
        )
        .await;
        match failure {
            // Retrying cannot help until the object changes.
            CallFailure::InvalidObject(_) => (Action::await_change(), ReconcileResult::Error),
            _ => retry(attempt),
        }
    }
}
