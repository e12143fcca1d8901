//! The host a plugin sees while it reconciles one object: [`PluginHost`], the implementation of
//! [`HostApi`] the sandbox calls once a call passed the plugin's grant. It is built from the Kubernetes
//! bridge and the Ray bridge side by side, one concept per file:
//!
//! - `objects`: get, list, create, apply, apply-status, delete and finalizers: reads held to the reconciled
//!   object's namespace and the policy's Secret access, every write taken through [`crate::admission`]
//!   (the one path where write rules live) and committed there;
//! - `ray`: which Ray clusters a plugin may reach, and sending to them through the Ray bridge;
//! - `events`: events about the reconciled object;
//! - `log`: the plugin's log lines (escaped and rate-limited before, in the sandbox).
//!
//! A refusal is returned as [`HostError::Forbidden`]; it is logged and counted where the host call ends
//! (`sandbox::call`).

mod events;
mod log;
mod objects;
mod ray;

use std::sync::Arc;

use futures::future::BoxFuture;
use kuberay_plugin_sdk::{Event, Kind, LogLevel, RayRequest, RayResponse};
use serde_json::Value;

pub(crate) use self::events::{check_word, refusal_note};
pub(crate) use crate::admission::Primary;
use crate::{
    admission::Admission,
    host_api::{HostApi, HostResult},
    kubernetes::KubeBridge,
    raybridge::RayBridge,
};

/// The host API of one reconcile, bound to its plugin and its object.
pub(crate) struct PluginHost {
    admission: Admission,
    ray: Arc<RayBridge>,
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

impl PluginHost {
    pub(crate) fn new(admission: Admission, ray: Arc<RayBridge>) -> Self {
        Self { admission, ray }
    }

    fn kube(&self) -> &Arc<KubeBridge> {
        self.admission.cluster()
    }

    fn primary(&self) -> &Primary {
        self.admission.primary()
    }

    /// The policy entry's name.
    fn plugin(&self) -> &str {
        &self.admission.grant().entry
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

    fn refused(&self, verb: &str, kind: &Kind, reason: &str) {
        self.report_refusal(verb, kind, reason);
    }
}

#[cfg(test)]
mod tests;
