//! Telling users that reconciling an object failed, and why: a log line with the object, a Warning event, and
//! a `Reconciled=False` condition the host owns (written with its own field manager, so it coexists with the
//! plugin's conditions). The condition goes away with the first successful reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, Patch, PatchParams},
    runtime::events::{Event, EventType},
};
use kuberay_plugin_sdk::Kind;
use serde_json::{Value, json};

use super::Shared;
use crate::{
    kubernetes::{HOST_FIELD_MANAGER, compact::CachedObject},
    sandbox::log_guard,
};

use kuberay_admission::HOST_CONDITION as CONDITION;

/// The message of a failure as it goes into the log, the Event and the condition: plugin text (its
/// reconcile error) is escaped (no line breaks, control characters, terminal escapes or direction overrides
/// reach any of them raw) and cut to fit an Event's note (the events API caps notes at 1 KiB).
fn shown(message: &str) -> String {
    log_guard::escape(message, log_guard::MAX_EVENT_NOTE_TEXT)
}

fn host_condition(object: &Value) -> Option<&Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == CONDITION))
}

pub(crate) async fn failure(
    shared: &Shared,
    kind: &Kind,
    plugin: &str,
    object: &CachedObject,
    reason: &str,
    message: &str,
    attempt: u32,
) {
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    let message = shown(message);
    tracing::error!(
        %plugin, %kind, %namespace, %name, reason, attempt, retry_in = ?super::backoff::delay(attempt),
        "reconcile failed: {message}"
    );
    // A replica that is not the leader (any more) records nothing about it.
    if shared.bridge.fenced().is_err() {
        return;
    }
    let reference = ObjectReference {
        api_version: Some(kind.api_version()),
        kind: Some(kind.kind.clone()),
        name: Some(name.clone()),
        namespace: Some(namespace.clone()),
        uid: object.uid(),
        ..ObjectReference::default()
    };
    let event = Event {
        type_: EventType::Warning,
        reason: reason.to_string(),
        note: Some(message.clone()),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(e) = shared.bridge.recorder(plugin).publish(&event, &reference).await {
        tracing::warn!(%namespace, %name, error = %e, "could not record an event");
    }
    let current = shared.bridge.read(kind, &namespace, &name).await.ok().flatten();
    let same = current
        .as_ref()
        .and_then(host_condition)
        .is_some_and(|c| c["reason"] == reason && c["message"] == message);
    if same {
        return;
    }
    let transition = current
        .as_ref()
        .and_then(host_condition)
        .filter(|c| c["status"] == "False")
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now()));
    let condition = json!({
        "type": CONDITION,
        "status": "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
        "observedGeneration": object.metadata.generation,
    });
    write_status(
        shared,
        kind,
        &namespace,
        &name,
        json!({"conditions": [condition]}),
    )
    .await;
}

/// Removes the failure condition after a successful reconcile, if there is one.
pub(crate) async fn recovered(shared: &Shared, kind: &Kind, plugin: &str, object: &Value) {
    if host_condition(object).is_none() {
        return;
    }
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    tracing::info!(%plugin, %kind, %namespace, %name, "reconcile succeeded again");
    // Applying an empty status with the host's field manager releases (and so removes) its condition.
    write_status(shared, kind, namespace, name, json!({})).await;
}

/// Kinds whose status schema has no `conditions` (KubeRay's RayJob), learned from the API server's answer to
/// the first condition written: the condition is not written again for them, and the Warning Event and the
/// log line say why a reconcile failed.
#[derive(Default)]
pub(crate) struct Conditionless(std::sync::Mutex<std::collections::HashSet<Kind>>);

impl Conditionless {
    fn contains(&self, kind: &Kind) -> bool {
        self.lock().contains(kind)
    }

    /// Remembers `kind` if `error` says its status has no `conditions`; whether it did.
    fn learn(&self, kind: &Kind, error: &kube::Error) -> bool {
        let kube::Error::Api(status) = error else {
            return false;
        };
        let conditionless = status.message.contains(".status.conditions")
            && status.message.contains("field not declared in schema");
        if conditionless && self.lock().insert(kind.clone()) {
            tracing::info!(%kind, "the kind's status has no conditions: failed reconciles are reported by Warning events and logs only");
        }
        conditionless
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<Kind>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn write_status(shared: &Shared, kind: &Kind, namespace: &str, name: &str, status: Value) {
    if shared.conditionless.contains(kind) {
        return;
    }
    if let Err(e) = shared.bridge.fenced() {
        tracing::warn!(%namespace, %name, error = %e, "not writing the Reconciled condition");
        return;
    }
    let Ok(resolved) = shared.bridge.discovery.resolve(kind).await else {
        return;
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(shared.bridge.client.clone(), namespace, &resolved.resource);
    let patch = json!({
        "apiVersion": kind.api_version(),
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace},
        "status": status,
    });
    if let Err(e) = api
        .patch_status(
            name,
            &PatchParams::apply(HOST_FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        && !shared.conditionless.learn(kind, &e)
    {
        tracing::warn!(%namespace, %name, error = %e, "could not write the Reconciled condition");
    }
}

fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    k8s_openapi::jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugins_error_cannot_forge_a_line_or_overflow_a_note() {
        let forged = "boom\n{\"level\":\"ERROR\",\"fields\":{\"message\":\"forged\"}}\u{1b}[2K\r\u{202e}";
        let message = shown(&format!("the plugin reported an error: {forged}"));
        assert!(
            !message.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{message:?}"
        );
        assert!(message.contains("boom\\n{\"level\""), "{message}");
        assert!(shown(&"x".repeat(5000)).len() <= 1024);
    }
}
