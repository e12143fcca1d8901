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
    use std::{sync::Arc, time::Duration};

    use super::*;
    use crate::{
        OperatorArgs,
        controller::{backoff::Failures, permits::Permits},
        kubernetes::{
            KubeBridge, WatchScope,
            mock_api::{self, Answer, MockApi, Received},
        },
        leadership::Fence,
        metrics::Metrics,
        raybridge::RayBridge,
        sandbox::{CallLimits, Sandbox, SandboxConfig},
    };

    const STATUS: &str = "/apis/ray.io/v1/namespaces/ns/rayclusters/c/status";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/ns/events";

    fn cluster() -> Value {
        json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "generation": 3}, "spec": {}})
    }

    /// The API server's answers: discovery of ray.io/v1, the cluster (with `current` as its status), events
    /// echoed, and `status_patch` for a status patch.
    fn api_server(current: Value, status_patch: Answer) -> impl Fn(&Received) -> Answer + Send + Sync {
        move |request| match (request.method.as_str(), request.path()) {
            ("GET", "/apis/ray.io/v1") => (
                200,
                mock_api::resource_list("ray.io/v1", &[("rayclusters", "RayCluster")]),
            ),
            ("GET", "/apis/ray.io/v1/namespaces/ns/rayclusters/c") => {
                let mut object = cluster();
                object["status"] = current.clone();
                (200, object)
            }
            ("POST", EVENTS) => (201, request.body.clone()),
            ("PATCH", STATUS) => status_patch.clone(),
            _ => mock_api::status(404, "NotFound", "not served by this mock"),
        }
    }

    fn shared(client: kube::Client, fence: Fence) -> Shared {
        let metrics = Metrics::new();
        let config = SandboxConfig {
            cache_dir: None,
            limits: CallLimits {
                timeout: Duration::from_secs(1),
                memory_bytes: 16 << 20,
                budget: Default::default(),
            },
            policy: Arc::new(crate::policy::Policy::builtin()),
            max_concurrent_calls: 1,
            compiler: None,
            base_config: Default::default(),
        };
        let sandbox = Sandbox::new(config, metrics.clone()).expect("a sandbox");
        let heads = OperatorArgs::defaults().routing.heads();
        Shared {
            sandbox,
            bridge: KubeBridge::new(client.clone(), WatchScope::All, None, metrics.clone(), fence),
            ray: RayBridge::new(heads, client),
            permits: Permits::new(1),
            failures: Failures::default(),
            metrics,
            conditionless: Conditionless::default(),
        }
    }

    fn cached() -> CachedObject {
        serde_json::from_value(cluster()).expect("a cached object")
    }

    fn ray_cluster() -> Kind {
        Kind::new("ray.io", "v1", "RayCluster")
    }

    /// The RayCluster plugin's reconcile of the cluster failed with `reason` and `message`.
    async fn fail(shared: &Shared, reason: &str, message: &str, attempt: u32) {
        failure(
            shared,
            &ray_cluster(),
            "raycluster",
            &cached(),
            reason,
            message,
            attempt,
        )
        .await;
    }

    fn sent(api: &MockApi, method: &str, path: &str) -> Vec<Received> {
        api.received()
            .into_iter()
            .filter(|r| r.method == method && r.path() == path)
            .collect()
    }

    #[tokio::test]
    async fn a_failure_is_a_warning_event_and_the_hosts_reconciled_condition() {
        let api = MockApi::default();
        let client = api.client(api_server(json!({}), (200, cluster())));
        let shared = shared(client, Fence::open());
        let forged = "boom\n{\"level\":\"ERROR\"}\u{1b}[2K";
        fail(&shared, "PluginTrapped", forged, 2).await;

        let events = sent(&api, "POST", EVENTS);
        assert_eq!(events.len(), 1, "{:?}", api.received());
        let event = &events[0].body;
        assert_eq!(event["type"], "Warning");
        assert_eq!(event["reason"], "PluginTrapped");
        assert_eq!(event["regarding"]["uid"], "u-1");
        let note = event["note"].as_str().unwrap_or_default();
        assert!(!note.chars().any(char::is_control), "{note:?}");

        let patches = sent(&api, "PATCH", STATUS);
        assert_eq!(patches.len(), 1, "{:?}", api.received());
        assert!(
            patches[0]
                .uri
                .contains(&format!("fieldManager={HOST_FIELD_MANAGER}")),
            "{}",
            patches[0].uri
        );
        assert!(patches[0].uri.contains("force=true"), "{}", patches[0].uri);
        let condition = &patches[0].body["status"]["conditions"][0];
        assert_eq!(condition["type"], CONDITION);
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "PluginTrapped");
        assert_eq!(condition["message"], note);
        assert_eq!(condition["observedGeneration"], 3);
    }

    #[tokio::test]
    async fn the_same_failure_again_writes_no_condition_and_keeps_its_transition_time() {
        let message = "the plugin trapped: boom";
        let current = json!({"conditions": [{"type": CONDITION, "status": "False", "reason": "PluginTrapped",
            "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        let api = MockApi::default();
        let shared = shared(api.client(api_server(current, (200, cluster()))), Fence::open());
        fail(&shared, "PluginTrapped", message, 1).await;
        assert!(sent(&api, "PATCH", STATUS).is_empty(), "{:?}", api.received());
        assert_eq!(
            sent(&api, "POST", EVENTS).len(),
            1,
            "the Event is recorded each time"
        );

        // Another message: the condition is rewritten, its transition time kept (still False).
        fail(&shared, "PluginTrapped", "other", 2).await;
        let patches = sent(&api, "PATCH", STATUS);
        assert_eq!(patches.len(), 1, "{:?}", api.received());
        let condition = &patches[0].body["status"]["conditions"][0];
        assert_eq!(condition["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(condition["message"], "other");
    }

    #[tokio::test]
    async fn a_status_without_conditions_is_learned_once_and_not_patched_again() {
        let refused = mock_api::status(
            422,
            "Invalid",
            "RayJob.ray.io \"c\" is invalid: .status.conditions: field not declared in schema",
        );
        let api = MockApi::default();
        let shared = shared(api.client(api_server(json!({}), refused)), Fence::open());
        fail(&shared, "PluginTrapped", "one", 1).await;
        fail(&shared, "PluginTimedOut", "two", 2).await;
        assert_eq!(sent(&api, "PATCH", STATUS).len(), 1, "{:?}", api.received());
        assert_eq!(sent(&api, "POST", EVENTS).len(), 2, "the Events still say why");
    }

    #[tokio::test]
    async fn recovery_releases_the_condition_with_an_empty_status() {
        let api = MockApi::default();
        let shared = shared(api.client(api_server(json!({}), (200, cluster()))), Fence::open());
        let mut object = cluster();
        recovered(&shared, &ray_cluster(), "raycluster", &object).await;
        assert!(
            api.received().iter().all(|r| r.method != "PATCH"),
            "nothing to release"
        );

        object["status"] = json!({"conditions": [{"type": CONDITION, "status": "False"}]});
        recovered(&shared, &ray_cluster(), "raycluster", &object).await;
        let patches = sent(&api, "PATCH", STATUS);
        assert_eq!(patches.len(), 1, "{:?}", api.received());
        assert_eq!(patches[0].body["status"], json!({}));
    }

    #[tokio::test]
    async fn a_replica_that_is_not_the_leader_records_nothing() {
        let api = MockApi::default();
        // A term that was renewed, then ended: the replica lost the Lease.
        let fence = Fence::term(Duration::from_secs(10));
        fence.renewed(std::time::Instant::now());
        let shared = shared(api.client(api_server(json!({}), (200, cluster()))), fence.clone());
        fence.close();
        fail(&shared, "PluginTrapped", "boom", 1).await;
        assert!(api.received().is_empty(), "{:?}", api.received());
    }

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
