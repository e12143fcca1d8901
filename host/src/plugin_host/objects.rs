//! A plugin's Kubernetes calls: reads merged with its recent writes, writes held to the reconciled object's
//! namespace and ownership (`kubernetes::ownership`), Kubernetes' naming rules (`kubernetes::names`) and the
//! policy's content rules (`policy::guard`), and skipped when they would change nothing.

use kube::{
    Api,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy},
};
use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::{Value, json};

use super::{PluginHost, forbidden, str_at};
use crate::{
    kubernetes::{
        HOST_CONDITION,
        errors::from_kube,
        names,
        overlay::Key,
        ownership::{self, controlled_by},
        strip_host_condition, to_json,
        unchanged::{self, intent_hash, is_subset},
    },
    policy::guard,
    sandbox::host_api::HostResult,
};

fn dynamic(object: Value) -> HostResult<DynamicObject> {
    serde_json::from_value(object).map_err(|e| HostError::Invalid(format!("not a Kubernetes object: {e}")))
}

impl PluginHost {
    pub(super) fn key(&self, kind: &Kind, name: &str) -> Key {
        Key {
            kind: kind.clone(),
            namespace: self.primary.namespace.clone(),
            name: name.to_string(),
        }
    }

    fn owner_reference(&self) -> Value {
        ownership::owner_reference(&self.primary.kind, &self.primary.name, &self.primary.uid)
    }

    /// Puts the object in the primary's namespace under its control, refusing anything else.
    fn adopt(&self, kind: &Kind, mut object: Value) -> HostResult<Value> {
        let namespace = self.primary.namespace.clone();
        let owner = self.owner_reference();
        let refuse = |message: String| forbidden(message);
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
        self.writer().take_ownership(kind, meta, owner).map_err(refuse)?;
        Ok(object)
    }

    /// The live object an apply would write over: the operator's view (cache and recent writes), confirmed
    /// with the API server when that view has none (a watch may lag behind an object created a moment ago).
    pub(super) async fn live(
        &self,
        api: &Api<DynamicObject>,
        kind: &Kind,
        name: &str,
    ) -> HostResult<Option<Value>> {
        if let Some(current) = self.kube.read(kind, &self.primary.namespace, name).await? {
            return Ok(Some(current));
        }
        api.get_opt(name)
            .await
            .map_err(from_kube)?
            .map(|o| to_json(&o))
            .transpose()
    }

    pub(super) async fn set_finalizers(&self, finalizer: String, add: bool) -> HostResult<()> {
        if let Err(message) = self.writer().check_finalizer(&finalizer) {
            return Err(forbidden(message));
        }
        let current = self.primary_now().await?;
        let mut finalizers: Vec<String> = current
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|f| f.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let present = finalizers.contains(&finalizer);
        if present == add {
            self.kube.metrics().write(&self.plugin, "finalize", false);
            return Ok(());
        }
        if add {
            finalizers.push(finalizer);
        } else {
            finalizers.retain(|f| *f != finalizer);
        }
        // The resourceVersion makes this a compare-and-swap: a concurrent change becomes a conflict.
        let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": str_at(&current, "/metadata/resourceVersion")}});
        let api = self.namespaced(&self.primary.kind).await?;
        self.kube.fenced()?;
        let updated = api
            .patch(&self.primary.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(from_kube)?;
        self.kube.metrics().write(&self.plugin, "finalize", true);
        self.kube.overlay.record_write(
            self.key(&self.primary.kind, &self.primary.name),
            to_json(&updated)?,
        );
        Ok(())
    }

    pub(super) async fn get_object(&self, kind: Kind, name: String) -> HostResult<Option<Value>> {
        self.check_names(&kind, Some(&name))?;
        let mut object = self.kube.read(&kind, &self.primary.namespace, &name).await?;
        if let Some(secret) = object.as_ref().filter(|_| guard::is_secret(&kind)) {
            self.guard().check_secret_read(secret).await?;
        }
        if let Some(object) = object.as_mut() {
            strip_host_condition(object);
        }
        Ok(object)
    }

    pub(super) async fn list_objects(&self, kind: Kind, label_selector: String) -> HostResult<Vec<Value>> {
        self.check_names(&kind, None)?;
        if let Err(e) = names::label_selector(&label_selector) {
            return Err(forbidden(e.to_string()));
        }
        let mut items = self
            .kube
            .list(&kind, &self.primary.namespace, &label_selector)
            .await?;
        if guard::is_secret(&kind) {
            items = self.guard().filter_secrets(items).await?;
        }
        items.iter_mut().for_each(strip_host_condition);
        Ok(items)
    }

    pub(super) async fn create_object(&self, kind: Kind, object: Value) -> HostResult<Value> {
        self.check_names(&kind, None)?;
        let api = self.namespaced(&kind).await?;
        let object = self.adopt(&kind, object)?;
        self.guard().check_write(&kind, &object).await?;
        let params = PostParams {
            field_manager: Some(self.field_manager.clone()),
            ..PostParams::default()
        };
        self.kube.fenced()?;
        let created = api.create(&params, &dynamic(object)?).await.map_err(from_kube)?;
        self.kube.metrics().write(&self.plugin, "create", true);
        let created = to_json(&created)?;
        if let Some(name) = str_at(&created, "/metadata/name") {
            self.kube
                .overlay
                .record_write(self.key(&kind, name), created.clone());
        }
        Ok(created)
    }

    pub(super) async fn apply_object(&self, kind: Kind, object: Value) -> HostResult<Value> {
        self.check_names(&kind, None)?;
        let api = self.namespaced(&kind).await?;
        let name = str_at(&object, "/metadata/name")
            .ok_or_else(|| HostError::Invalid("apply needs metadata.name".into()))?
            .to_string();
        self.check_names(&kind, Some(&name))?;
        let current = self.live(&api, &kind, &name).await?;
        if let Some(current) = current.as_ref()
            && !controlled_by(current, &self.primary.uid)
            && self.guard().controlled_through_owned(current).await?
        {
            return self.apply_labels(&api, &kind, &name, &object, current).await;
        }
        let object = self.adopt(&kind, object)?;
        self.guard().check_write(&kind, &object).await?;
        let key = self.key(&kind, &name);
        let hash = intent_hash(&object);
        if let Err(message) = self.writer().check_adoption(current.as_ref()) {
            return Err(forbidden(format!("{kind} {name}: {message}")));
        }
        if let Some(current) = current
            && self.kube.applied.same_as_last(&key, unchanged::OBJECT, hash)
            && is_subset(&object, &current)
        {
            self.kube.metrics().write(&self.plugin, "apply", false);
            return Ok(current);
        }
        let params = PatchParams::apply(&self.field_manager).force();
        self.kube.fenced()?;
        let applied = api
            .patch(&name, &params, &Patch::Apply(&object))
            .await
            .map_err(from_kube)?;
        self.kube.metrics().write(&self.plugin, "apply", true);
        let applied = to_json(&applied)?;
        self.kube.applied.record(key.clone(), unchanged::OBJECT, hash);
        self.kube.overlay.record_write(key, applied.clone());
        Ok(applied)
    }

    pub(super) async fn apply_primary_status(&self, mut status: Value) -> HostResult<()> {
        // The host's condition is not the plugin's to write (a plugin that copies the conditions it was
        // given must not take it over).
        if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
            conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(HOST_CONDITION));
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
        if self.kube.applied.same_as_last(&key, unchanged::STATUS, hash)
            && is_subset(&json!({"status": status}), &current)
        {
            self.kube.metrics().write(&self.plugin, "apply-status", false);
            return Ok(());
        }
        let api = self.namespaced(&kind).await?;
        let params = PatchParams::apply(&self.field_manager).force();
        self.kube.fenced()?;
        let applied = api
            .patch_status(&self.primary.name, &params, &Patch::Apply(&intent))
            .await
            .map_err(from_kube)?;
        self.kube.metrics().write(&self.plugin, "apply-status", true);
        self.kube.applied.record(key.clone(), unchanged::STATUS, hash);
        self.kube.overlay.record_write(key, to_json(&applied)?);
        Ok(())
    }

    pub(super) async fn delete_object(
        &self,
        kind: Kind,
        name: String,
        uid: Option<String>,
    ) -> HostResult<()> {
        self.check_names(&kind, Some(&name))?;
        let api = self.namespaced(&kind).await?;
        let Some(current) = self.kube.read(&kind, &self.primary.namespace, &name).await? else {
            return Ok(());
        };
        // A plugin may delete what its object owns, and its object itself (a RayJob's DeleteSelf policy).
        let is_primary = kind == self.primary.kind && name == self.primary.name;
        if !is_primary && self.writer().check_delete(&current).is_err() {
            return Err(forbidden(format!(
                "{kind} {name} is not owned by {} {}",
                self.primary.kind.kind, self.primary.name
            )));
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
        self.kube.fenced()?;
        match api.delete(&name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(from_kube(e)),
        }
        self.kube.metrics().write(&self.plugin, "delete", true);
        let key = self.key(&kind, &name);
        self.kube.applied.forget(&key);
        self.kube.overlay.record_delete(key, current_uid);
        Ok(())
    }
}
