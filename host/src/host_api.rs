//! The port between the sandbox and the outside world. The sandbox checks a plugin's grant and then calls
//! these; the plugin host (`crate::plugin_host`) implements them against the API server and Ray heads
//! (adding the namespace, ownership and content rules), and tests and benchmarks implement them in memory.

use futures::future::BoxFuture;
pub use kuberay_plugin_sdk::HostResult;
use kuberay_plugin_sdk::{Event, HostError, Kind, LogLevel, RayRequest, RayResponse};
use serde_json::Value;

/// The calls one reconcile makes; an implementation is bound to the object being reconciled. Every call is
/// refused by default ([`HostApi::refusal`]), so a host that offers only some calls (the denied host of a
/// plugin's `metadata`, a test's fake) implements only those, and a new capability needs no edit of them.
pub trait HostApi: Send + Sync {
    /// The refusal of a call this host does not offer (`call` is its WIT name).
    fn refusal(&self, call: &str) -> HostError {
        HostError::Forbidden(format!("this host does not offer {call}"))
    }
    /// An object of `kind` named `name` in the reconciled object's namespace, or `None`.
    fn get(&self, kind: Kind, name: String) -> BoxFuture<'_, HostResult<Option<Value>>> {
        let _ = (kind, name);
        refused(self.refusal("get"))
    }
    /// The objects of `kind` in the reconciled object's namespace matching a label selector.
    fn list(&self, kind: Kind, label_selector: String) -> BoxFuture<'_, HostResult<Vec<Value>>> {
        let _ = (kind, label_selector);
        refused(self.refusal("list"))
    }
    /// Creates an object (under the reconciled object's control); returns it as created.
    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        let _ = (kind, object);
        refused(self.refusal("create"))
    }
    /// Server-side applies an object (under the reconciled object's control); returns it as applied.
    fn apply(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        let _ = (kind, object);
        refused(self.refusal("apply"))
    }
    /// Server-side applies the reconciled object's status.
    fn apply_status(&self, status: Value) -> BoxFuture<'_, HostResult<()>> {
        let _ = status;
        refused(self.refusal("apply-status"))
    }
    /// Deletes an object the reconciled object owns, or that object itself (only if its uid is still
    /// `uid`, when given).
    fn delete(&self, kind: Kind, name: String, uid: Option<String>) -> BoxFuture<'_, HostResult<()>> {
        let _ = (kind, name, uid);
        refused(self.refusal("delete"))
    }
    /// Adds the plugin's finalizer to the reconciled object.
    fn add_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        let _ = finalizer;
        refused(self.refusal("add-finalizer"))
    }
    /// Removes the plugin's finalizer from the reconciled object.
    fn remove_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        let _ = finalizer;
        refused(self.refusal("remove-finalizer"))
    }
    /// Records an event about the reconciled object.
    fn record_event(&self, event: Event) -> BoxFuture<'_, HostResult<()>> {
        let _ = event;
        refused(self.refusal("record-event"))
    }
    /// Sends a request to the head of a Ray cluster the reconciled object may reach.
    fn ray(&self, request: RayRequest) -> BoxFuture<'_, HostResult<RayResponse>> {
        let _ = request;
        refused(self.refusal("ray-send"))
    }
    /// A log line from the plugin; the implementation adds the object's identity. Dropped by default.
    fn log(&self, level: LogLevel, message: &str, fields: &[(String, String)]) {
        let _ = (level, message, fields);
    }
    /// The first write of a call that was refused (`verb` on `kind`, and why), once it was logged and counted:
    /// the plugin host also reports it about the reconciled object (an Event), so that a plugin that ignores
    /// the refusal does not make it silent. Nothing by default.
    fn refused(&self, verb: &str, kind: &Kind, reason: &str) {
        let _ = (verb, kind, reason);
    }
}

fn refused<'a, T: Send + 'a>(error: HostError) -> BoxFuture<'a, HostResult<T>> {
    Box::pin(async { Err(error) })
}
