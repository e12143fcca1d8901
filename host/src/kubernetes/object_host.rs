//! The host a plugin sees while it reconciles one object.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Api,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy},
    runtime::events::{Event as KubeEvent, EventType as KubeEventType},
};
use kuberay_plugin_sdk::{Event, EventType, HostError, Kind, LogLevel, RayRequest, RayResponse};
use serde_json::{Value, json};

use super::{
    KubeBridge, Resolved,
    errors::from_kube,
    field_manager, names,
    overlay::Key,
    ownership::Writer,
    strip_host_condition, to_json,
    unchanged::{intent_hash, is_subset},
};
use crate::{
    policy::{Grant, guard},
    sandbox::host_api::{HostApi, HostResult},
};

/// The object being reconciled.
#[derive(Debug, Clone)]
pub struct Primary {
    pub kind: Kind,
    pub resolved: Resolved,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

pub struct ObjectHost {
    bridge: Arc<KubeBridge>,
    plugin: String,
    field_manager: String,
    primary: Primary,
    grant: Arc<Grant>,
    /// The plugin's declared finalizer, the only one it may set (see `super::ownership`).
    finalizer: Option<String>,
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

impl ObjectHost {
    pub fn new(bridge: Arc<KubeBridge>, plugin: &str, primary: Primary) -> Self {
        Self {
            bridge,
            plugin: plugin.to_string(),
            field_manager: field_manager(plugin),
            primary,
            grant: Arc::new(Grant::default()),
            finalizer: None,
        }
    }

    /// The plugin's grant, whose content rules its writes and Secret reads are held to.
    #[must_use]
    pub fn with_grant(mut self, grant: Arc<Grant>) -> Self {
        self.grant = grant;
        self
    }

    /// The plugin's declared finalizer.
    #[must_use]
    pub fn with_finalizer(mut self, finalizer: Option<String>) -> Self {
        self.finalizer = finalizer;
        self
    }

    fn guard(&self) -> guard::Guard<'_> {
        guard::Guard {
            bridge: &self.bridge,
            primary: &self.primary,
            grant: &self.grant,
        }
    }

    fn writer(&self) -> Writer<'_> {
        Writer {
            uid: &self.primary.uid,
            reconciles: &self.primary.kind,
            finalizer: self.finalizer.as_deref(),
        }
    }

    /// Refuses a kind or an object name that breaks Kubernetes' naming rules, before any request is built.
    fn check_names(&self, verb: &str, kind: &Kind, name: Option<&str>) -> HostResult<()> {
        if let Err(e) = names::kind(kind) {
            // A malformed kind is not repeated into metric labels.
            return Err(self.refuse(verb, &Kind::new("", "invalid", "Kind"), e.to_string()));
        }
        match name.map(|name| names::object_name(kind, name)) {
            Some(Err(e)) => Err(self.refuse(verb, kind, e.to_string())),
            _ => Ok(()),
        }
    }

    fn key(&self, kind: &Kind, name: &str) -> Key {
        Key {
            kind: kind.clone(),
            namespace: self.primary.namespace.clone(),
            name: name.to_string(),
        }
    }

    /// A refusal; logged and counted where the host call ends (`sandbox::call`).
    fn refuse(&self, _verb: &str, _kind: &Kind, message: String) -> HostError {
        HostError::Forbidden(message)
    }

    async fn namespaced(&self, verb: &str, kind: &Kind) -> HostResult<Api<DynamicObject>> {
        let resolved = self.bridge.discovery.resolve(kind).await?;
        if !resolved.namespaced {
            return Err(self.refuse(
                verb,
                kind,
                format!("{kind} is cluster-scoped; plugins work within one namespace"),
            ));
        }
        Ok(Api::namespaced_with(
            self.bridge.client.clone(),
            &self.primary.namespace,
            &resolved.resource,
        ))
    }

    fn owner_reference(&self) -> Value {
        json!({
            "apiVersion": self.primary.kind.api_version(),
            "kind": self.primary.kind.kind,
            "name": self.primary.name,
            "uid": self.primary.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        })
    }

    /// Puts the object in the primary's namespace under its control, refusing anything else.
    fn adopt(&self, verb: &str, kind: &Kind, mut object: Value) -> HostResult<Value> {
        let namespace = self.primary.namespace.clone();
        let owner = self.owner_reference();
        let refuse = |message: String| self.refuse(verb, kind, message);
        let meta = object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| HostError::Invalid("object has no metadata".into()))?;
        if let Some(named) = meta.get("namespace").and_then(Value::as_str) {
            names::namespace(named).map_err(|e| refuse(e.to_string()))?;
        }
        if let Some(other) = meta
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| *ns != namespace)
        {
            return Err(refuse(format!(
                "namespace {other} is outside the reconciled object's namespace {namespace}"
            )));
        }
        meta.insert("namespace".into(), json!(namespace));
        if let Some(name) = meta.get("name").and_then(Value::as_str) {
            names::object_name(kind, name).map_err(|e| refuse(e.to_string()))?;
        }
        self.writer().check_metadata(kind, meta).map_err(refuse)?;
        let mut references: Vec<Value> = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        references.retain(|r| r.get("uid").and_then(Value::as_str) != Some(&self.primary.uid));
        references.push(owner);
        meta.insert("ownerReferences".into(), Value::Array(references));
        Ok(object)
    }

    fn owned_by_primary(&self, object: &Value) -> bool {
        object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter().any(|r| {
                    r["controller"] == true && r.get("uid").and_then(Value::as_str) == Some(&self.primary.uid)
                })
            })
    }

    /// The live object an apply would write over: the operator's view (cache and recent writes), confirmed
    /// with the API server when that view has none (a watch may lag behind an object created a moment ago).
    async fn live(&self, api: &Api<DynamicObject>, kind: &Kind, name: &str) -> HostResult<Option<Value>> {
        if let Some(current) = self.bridge.read(kind, &self.primary.namespace, name).await? {
            return Ok(Some(current));
        }
        api.get_opt(name)
            .await
            .map_err(from_kube)?
            .map(|o| to_json(&o))
            .transpose()
    }

    async fn primary_now(&self) -> HostResult<Value> {
        self.bridge
            .read(&self.primary.kind, &self.primary.namespace, &self.primary.name)
            .await?
            .ok_or_else(|| {
                HostError::NotFound(format!("{} {} is gone", self.primary.kind, self.primary.name))
            })
    }

    async fn set_finalizers(&self, finalizer: String, add: bool) -> HostResult<()> {
        if let Err(message) = self.writer().check_finalizer(&finalizer) {
            return Err(self.refuse("finalize", &self.primary.kind, message));
        }
        let current = self.primary_now().await?;
        let mut finalizers: Vec<String> = current
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|f| f.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let present = finalizers.contains(&finalizer);
        if present == add {
            self.bridge.metrics().write(&self.plugin, "finalize", false);
            return Ok(());
        }
        if add {
            finalizers.push(finalizer);
        } else {
            finalizers.retain(|f| *f != finalizer);
        }
        // The resourceVersion makes this a compare-and-swap: a concurrent change becomes a conflict.
        let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": str_at(&current, "/metadata/resourceVersion")}});
        let api = self.namespaced("finalize", &self.primary.kind).await?;
        let updated = api
            .patch(&self.primary.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(from_kube)?;
        self.bridge.metrics().write(&self.plugin, "finalize", true);
        self.bridge.overlay.record_write(
            self.key(&self.primary.kind, &self.primary.name),
            to_json(&updated)?,
        );
        Ok(())
    }

    /// Whether the plugin may send requests to `cluster`: the object being reconciled, a RayCluster it owns,
    /// or the one it selects (`spec.clusterSelector["ray.io/cluster"]`, as a RayJob does).
    async fn may_reach(&self, cluster: &Value) -> HostResult<bool> {
        let name = str_at(cluster, "/metadata/name").unwrap_or_default();
        let is_primary = self.primary.kind == Kind::new("ray.io", "v1", "RayCluster")
            && str_at(cluster, "/metadata/uid") == Some(self.primary.uid.as_str());
        if is_primary || self.owned_by_primary(cluster) {
            return Ok(true);
        }
        let primary = self.primary_now().await?;
        Ok(primary
            .pointer("/spec/clusterSelector/ray.io~1cluster")
            .and_then(Value::as_str)
            == Some(name))
    }

    fn object_reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.primary.kind.api_version()),
            kind: Some(self.primary.kind.kind.clone()),
            name: Some(self.primary.name.clone()),
            namespace: Some(self.primary.namespace.clone()),
            uid: Some(self.primary.uid.clone()),
            ..ObjectReference::default()
        }
    }
}

fn dynamic(object: Value) -> HostResult<DynamicObject> {
    serde_json::from_value(object).map_err(|e| HostError::Invalid(format!("not a Kubernetes object: {e}")))
}

impl HostApi for ObjectHost {
    fn get(&self, kind: Kind, name: String) -> BoxFuture<'_, HostResult<Option<Value>>> {
        Box::pin(async move {
            self.check_names("get", &kind, Some(&name))?;
            let mut object = self.bridge.read(&kind, &self.primary.namespace, &name).await?;
            if let Some(secret) = object.as_ref().filter(|_| guard::is_secret(&kind)) {
                self.guard().check_secret_read(secret).await?;
            }
            if let Some(object) = object.as_mut() {
                strip_host_condition(object);
            }
            Ok(object)
        })
    }

    fn list(&self, kind: Kind, label_selector: String) -> BoxFuture<'_, HostResult<Vec<Value>>> {
        Box::pin(async move {
            self.check_names("list", &kind, None)?;
            if let Err(e) = names::label_selector(&label_selector) {
                return Err(self.refuse("list", &kind, e.to_string()));
            }
            let mut items = self
                .bridge
                .list(&kind, &self.primary.namespace, &label_selector)
                .await?;
            if guard::is_secret(&kind) {
                items = self.guard().filter_secrets(items).await?;
            }
            items.iter_mut().for_each(strip_host_condition);
            Ok(items)
        })
    }

    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        Box::pin(async move {
            self.check_names("create", &kind, None)?;
            let api = self.namespaced("create", &kind).await?;
            let object = self.adopt("create", &kind, object)?;
            self.guard().check_write(&kind, &object).await?;
            let params = PostParams {
                field_manager: Some(self.field_manager.clone()),
                ..PostParams::default()
            };
            let created = api.create(&params, &dynamic(object)?).await.map_err(from_kube)?;
            self.bridge.metrics().write(&self.plugin, "create", true);
            let created = to_json(&created)?;
            if let Some(name) = str_at(&created, "/metadata/name") {
                self.bridge
                    .overlay
                    .record_write(self.key(&kind, name), created.clone());
            }
            Ok(created)
        })
    }

    fn apply(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        Box::pin(async move {
            self.check_names("apply", &kind, None)?;
            let api = self.namespaced("apply", &kind).await?;
            let object = self.adopt("apply", &kind, object)?;
            self.guard().check_write(&kind, &object).await?;
            let name = str_at(&object, "/metadata/name")
                .ok_or_else(|| HostError::Invalid("apply needs metadata.name".into()))?
                .to_string();
            let key = self.key(&kind, &name);
            let hash = intent_hash(&object);
            let current = self.live(&api, &kind, &name).await?;
            if let Err(message) = self.writer().check_adoption(current.as_ref()) {
                return Err(self.refuse("apply", &kind, format!("{kind} {name}: {message}")));
            }
            if let Some(current) = current
                && self.bridge.applied.same_as_last(&key, "", hash)
                && is_subset(&object, &current)
            {
                self.bridge.metrics().write(&self.plugin, "apply", false);
                return Ok(current);
            }
            let params = PatchParams::apply(&self.field_manager).force();
            let applied = api
                .patch(&name, &params, &Patch::Apply(&object))
                .await
                .map_err(from_kube)?;
            self.bridge.metrics().write(&self.plugin, "apply", true);
            let applied = to_json(&applied)?;
            self.bridge.applied.record(key.clone(), "", hash);
            self.bridge.overlay.record_write(key, applied.clone());
            Ok(applied)
        })
    }

    fn apply_status(&self, mut status: Value) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(async move {
            // The host's condition is not the plugin's to write (a plugin that copies the conditions it was
            // given must not take it over).
            if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
                conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(super::HOST_CONDITION));
            }
            let kind = self.primary.kind.clone();
            let key = self.key(&kind, &self.primary.name);
            let intent = json!({
                "apiVersion": kind.api_version(),
                "kind": kind.kind,
                "metadata": {"name": self.primary.name, "namespace": self.primary.namespace},
                "status": status,
            });
            let hash = intent_hash(&intent);
            let current = self.primary_now().await?;
            if self.bridge.applied.same_as_last(&key, "status", hash)
                && is_subset(&json!({"status": status}), &current)
            {
                self.bridge.metrics().write(&self.plugin, "apply-status", false);
                return Ok(());
            }
            let api = self.namespaced("apply-status", &kind).await?;
            let params = PatchParams::apply(&self.field_manager).force();
            let applied = api
                .patch_status(&self.primary.name, &params, &Patch::Apply(&intent))
                .await
                .map_err(from_kube)?;
            self.bridge.metrics().write(&self.plugin, "apply-status", true);
            self.bridge.applied.record(key.clone(), "status", hash);
            self.bridge.overlay.record_write(key, to_json(&applied)?);
            Ok(())
        })
    }

    fn delete(&self, kind: Kind, name: String, uid: Option<String>) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(async move {
            self.check_names("delete", &kind, Some(&name))?;
            let api = self.namespaced("delete", &kind).await?;
            let Some(current) = self.bridge.read(&kind, &self.primary.namespace, &name).await? else {
                return Ok(());
            };
            // A plugin may delete what its object owns, and its object itself (a RayJob's DeleteSelf policy).
            let is_primary = kind == self.primary.kind && name == self.primary.name;
            if !is_primary && !self.owned_by_primary(&current) {
                return Err(self.refuse(
                    "delete",
                    &kind,
                    format!(
                        "{kind} {name} is not owned by {} {}",
                        self.primary.kind.kind, self.primary.name
                    ),
                ));
            }
            let current_uid = str_at(&current, "/metadata/uid").map(str::to_string);
            if uid.is_some() && uid != current_uid {
                return Ok(());
            }
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                preconditions: Some(Preconditions {
                    uid: current_uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(&name, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(from_kube(e)),
            }
            self.bridge.metrics().write(&self.plugin, "delete", true);
            let key = self.key(&kind, &name);
            self.bridge.applied.forget(&key);
            self.bridge.overlay.record_delete(key, current_uid);
            Ok(())
        })
    }

    fn add_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(self.set_finalizers(finalizer, true))
    }

    fn remove_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(self.set_finalizers(finalizer, false))
    }

    fn record_event(&self, event: Event) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(async move {
            if let Some((kind, name)) = &event.related {
                self.check_names("record-event", kind, Some(name))?;
            }
            let secondary = event.related.map(|(kind, name)| ObjectReference {
                api_version: Some(kind.api_version()),
                kind: Some(kind.kind),
                name: Some(name),
                namespace: Some(self.primary.namespace.clone()),
                ..ObjectReference::default()
            });
            let kube_event = KubeEvent {
                type_: match event.event_type {
                    EventType::Normal => KubeEventType::Normal,
                    EventType::Warning => KubeEventType::Warning,
                },
                reason: event.reason,
                note: Some(event.note),
                action: event.action,
                secondary,
            };
            self.bridge
                .events
                .recorder(&self.plugin)
                .publish(&kube_event, &self.object_reference())
                .await
                .map_err(from_kube)
        })
    }

    fn ray(&self, request: RayRequest) -> BoxFuture<'_, HostResult<RayResponse>> {
        Box::pin(async move {
            let clusters = Kind::new("ray.io", "v1", "RayCluster");
            self.check_names("ray-send", &clusters, Some(&request.cluster))?;
            if let Err(e) = kuberay_rayhead::validate_path(&request.path) {
                return Err(self.refuse("ray-send", &clusters, e.to_string()));
            }
            let cluster = self
                .bridge
                .read(&clusters, &self.primary.namespace, &request.cluster)
                .await?
                .ok_or_else(|| {
                    HostError::NotFound(format!("RayCluster {} does not exist", request.cluster))
                })?;
            if !self.may_reach(&cluster).await? {
                return Err(self.refuse(
                    "ray-send",
                    &clusters,
                    format!(
                        "RayCluster {} is neither the reconciled object, nor owned by it, nor selected by it",
                        request.cluster
                    ),
                ));
            }
            let sent = self
                .bridge
                .ray
                .send(
                    self.bridge.as_ref(),
                    &self.bridge.ray_client,
                    &self.primary.namespace,
                    &cluster,
                    &request,
                )
                .await;
            if let Some(route) = sent.route {
                self.bridge.metrics().ray_request(route, sent.outcome());
            }
            match sent.result {
                Err(HostError::Forbidden(message)) if sent.refused => {
                    Err(self.refuse("ray-send", &clusters, message))
                }
                result => result,
            }
        })
    }

    fn log(&self, level: LogLevel, message: &str, fields: &[(String, String)]) {
        let fields: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let fields = fields.join(" ");
        let (plugin, namespace, name) = (&self.plugin, &self.primary.namespace, &self.primary.name);
        match level {
            LogLevel::Trace => {
                tracing::trace!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Debug => {
                tracing::debug!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Info => {
                tracing::info!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
        }
    }
}
