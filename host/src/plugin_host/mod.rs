//! The host a plugin sees while it reconciles one object: [`PluginHost`], the implementation of
//! [`HostApi`] the sandbox calls once a call passed the plugin's grant. It is built from the Kubernetes
//! bridge and the Ray bridge side by side, and holds the rules a plugin cannot break, one concept per file:
//!
//! - `objects`: get, list, create, apply, apply-status, delete and finalizers, held to the reconciled
//!   object's namespace, its ownership rules ([`crate::kubernetes::ownership`]), Kubernetes' naming rules
//!   ([`crate::kubernetes::names`]) and the policy's content rules ([`crate::policy::guard`]);
//! - `labels`: the label-only apply to an object the reconciled object controls through one it owns;
//! - `ray`: which Ray clusters a plugin may reach, and sending to them through the Ray bridge;
//! - `events`: events about the reconciled object;
//! - `log`: the plugin's log lines (escaped and rate-limited before, in the sandbox).
//!
//! A refusal is returned as [`HostError::Forbidden`]; it is logged and counted where the host call ends
//! (`sandbox::call`).

mod events;
mod labels;
mod log;
mod objects;
mod ray;

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::{Api, api::DynamicObject};
use kuberay_plugin_sdk::{Event, HostError, Kind, LogLevel, RayRequest, RayResponse};
use serde_json::Value;

use crate::{
    kubernetes::{KubeBridge, field_manager, names, ownership::Writer},
    policy::{Grant, guard},
    raybridge::RayBridge,
    sandbox::host_api::{HostApi, HostResult},
};

/// The object being reconciled.
#[derive(Debug, Clone)]
pub(crate) struct Primary {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The host API of one reconcile, bound to its plugin and its object.
pub(crate) struct PluginHost {
    kube: Arc<KubeBridge>,
    ray: Arc<RayBridge>,
    plugin: String,
    field_manager: String,
    primary: Primary,
    grant: Arc<Grant>,
    /// The plugin's declared finalizer, the only one it may set (see `kubernetes::ownership`).
    finalizer: Option<String>,
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

impl PluginHost {
    pub(crate) fn new(kube: Arc<KubeBridge>, ray: Arc<RayBridge>, plugin: &str, primary: Primary) -> Self {
        Self {
            kube,
            ray,
            plugin: plugin.to_string(),
            field_manager: field_manager(plugin),
            primary,
            grant: Arc::new(Grant::default()),
            finalizer: None,
        }
    }

    /// The plugin's grant, whose content rules its writes and Secret reads are held to.
    #[must_use]
    pub(crate) fn with_grant(mut self, grant: Arc<Grant>) -> Self {
        self.grant = grant;
        self
    }

    /// The plugin's declared finalizer.
    #[must_use]
    pub(crate) fn with_finalizer(mut self, finalizer: Option<String>) -> Self {
        self.finalizer = finalizer;
        self
    }

    fn guard(&self) -> guard::Guard<'_> {
        guard::Guard {
            bridge: &self.kube,
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
    fn check_names(&self, kind: &Kind, name: Option<&str>) -> HostResult<()> {
        names::kind(kind).map_err(|e| forbidden(e.to_string()))?;
        match name.map(|name| names::object_name(kind, name)) {
            Some(Err(e)) => Err(forbidden(e.to_string())),
            _ => Ok(()),
        }
    }

    async fn namespaced(&self, kind: &Kind) -> HostResult<Api<DynamicObject>> {
        let resolved = self.kube.discovery.resolve(kind).await?;
        if !resolved.namespaced {
            return Err(forbidden(format!(
                "{kind} is cluster-scoped; plugins work within one namespace"
            )));
        }
        Ok(Api::namespaced_with(
            self.kube.client.clone(),
            &self.primary.namespace,
            &resolved.resource,
        ))
    }

    /// The reconciled object as it is now (cache and recent writes).
    async fn primary_now(&self) -> HostResult<Value> {
        self.kube
            .read(&self.primary.kind, &self.primary.namespace, &self.primary.name)
            .await?
            .ok_or_else(|| {
                HostError::NotFound(format!("{} {} is gone", self.primary.kind, self.primary.name))
            })
    }
}

impl HostApi for PluginHost {
    fn get(&self, kind: Kind, name: String) -> BoxFuture<'_, HostResult<Option<Value>>> {
        Box::pin(self.get_object(kind, name))
    }

    fn list(&self, kind: Kind, label_selector: String) -> BoxFuture<'_, HostResult<Vec<Value>>> {
        Box::pin(self.list_objects(kind, label_selector))
    }

    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        Box::pin(self.create_object(kind, object))
    }

    fn apply(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        Box::pin(self.apply_object(kind, object))
    }

    fn apply_status(&self, status: Value) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(self.apply_primary_status(status))
    }

    fn delete(&self, kind: Kind, name: String, uid: Option<String>) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(self.delete_object(kind, name, uid))
    }

    fn add_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(self.set_finalizers(finalizer, true))
    }

    fn remove_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(self.set_finalizers(finalizer, false))
    }

    fn record_event(&self, event: Event) -> BoxFuture<'_, HostResult<()>> {
        Box::pin(self.publish_event(event))
    }

    fn ray(&self, request: RayRequest) -> BoxFuture<'_, HostResult<RayResponse>> {
        Box::pin(self.send_to_ray(request))
    }

    fn log(&self, level: LogLevel, message: &str, fields: &[(String, String)]) {
        self.write_log(level, message, fields);
    }
}

/// A refusal of the host's rules. It is logged and counted once, where the host call ends
/// (`sandbox::call`), like a refusal of the grant.
pub(crate) fn forbidden(message: String) -> HostError {
    HostError::Forbidden(message)
}
