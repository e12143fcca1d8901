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
    sandbox::{CallFailure, Export, PluginSlot},
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
    ctx.queue.started(&namespace, &name);
    let started = Instant::now();
    let (action, result) = reconcile_one(&object, &ctx, &namespace, &name)
        .instrument(span)
        .await;
    ctx.queue.ended(started.elapsed(), result);
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
    let key = format!("{}/{namespace}/{name}", ctx.kind);
    let plugin = match shared.sandbox.plugin_for(&ctx.kind) {
        Some(PluginSlot::Ready(plugin)) => plugin,
        Some(PluginSlot::Unavailable { plugin, reason }) => {
            let attempt = shared.failures.record(&key);
            report::failure(
                shared,
                &ctx.kind,
                &plugin,
                object,
                "PluginUnavailable",
                &reason,
                attempt,
            )
            .await;
            return retry(attempt);
        }
        None => return done(),
    };
    // The policy entry's name (the plugin had to call itself that to load).
    let plugin_name = plugin.grant.entry.clone();

    // The plugin sees the object with the host's own recent writes (status, finalizers) applied.
    let current = match shared.bridge.read(&ctx.kind, namespace, name).await {
        Ok(Some(current)) => current,
        Ok(None) => {
            // Gone: nothing to remember about it.
            shared.failures.reset(&key);
            return done();
        }
        Err(_) => match to_json(object) {
            Ok(value) => value,
            Err(_) => return retry(1),
        },
    };
    // The plugin sees its object without the host's own condition.
    let mut for_plugin = current.clone();
    strip_host_condition(&mut for_plugin);
    let export = if current.pointer("/metadata/deletionTimestamp").is_some() {
        let finalizers = current.pointer("/metadata/finalizers").and_then(Value::as_array);
        match &plugin.grant.finalizer {
            Some(f) if finalizers.is_some_and(|all| all.iter().any(|x| x == f)) => Export::Cleanup,
            _ => return done(),
        }
    } else {
        Export::Reconcile
    };
    // The kind must resolve (it is served by the API server) before a plugin works on its objects.
    if shared.bridge.discovery.resolve(&ctx.kind).await.is_err() {
        return retry(1);
    }
    let primary = Primary {
        kind: ctx.kind.clone(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        uid: object.uid().unwrap_or_default(),
    };
    let admission = Admission::new(
        shared.bridge.clone(),
        primary,
        plugin.grant.clone(),
        &plugin_name,
        plugin.grant.finalizer.clone(),
    );
    let host = Arc::new(PluginHost::new(admission, shared.ray.clone()));
    let attempt = shared.failures.get(&key);
    let context = shared
        .sandbox
        .context(&plugin, format!("{namespace}/{name}"), host);
    let result = shared
        .sandbox
        .call(&plugin, context, export, for_plugin.to_string(), attempt)
        .await;

    let kind_label = ctx.kind.kind.clone();
    shared
        .metrics
        .reconcile_duration
        .get_or_create(&KindLabels {
            kind: kind_label.clone(),
        })
        .observe(started.elapsed().as_secs_f64());
    let outcome = if result.is_ok() { "success" } else { "error" };
    shared
        .metrics
        .reconciles
        .get_or_create(&ReconcileLabels {
            kind: kind_label.clone(),
            plugin: plugin_name.clone(),
            result: outcome.into(),
        })
        .inc();
    match result {
        Ok(requeue) => {
            shared.failures.reset(&key);
            report::recovered(shared, &ctx.kind, &plugin_name, &current).await;
            tracing::debug!(plugin = %plugin_name, export = export.name(), ?requeue, "reconciled");
            requeue.map_or_else(done, |after| {
                let after = after.clamp(MIN_REQUEUE, MAX_REQUEUE);
                (Action::requeue(after), ReconcileResult::RequeueAfter)
            })
        }
        Err(failure) => {
            let attempt = shared.failures.record(&key);
            shared
                .metrics
                .reconcile_errors
                .get_or_create(&ErrorLabels {
                    kind: kind_label,
                    plugin: plugin_name.clone(),
                    reason: failure.reason().into(),
                })
                .inc();
            report::failure(
                shared,
                &ctx.kind,
                &plugin_name,
                object,
                failure.reason(),
                &failure.to_string(),
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
}
