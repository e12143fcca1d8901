//! The boundary between the sandbox and the outside world. The sandbox checks a plugin's grant and then
//! calls these; the plugin host (`crate::plugin_host`) implements them against the API server and Ray heads
//! (adding the namespace, ownership and content rules), and tests and benchmarks implement them in memory.

use futures::future::BoxFuture;
use kuberay_plugin_sdk::{Event, HostError, Kind, LogLevel, RayRequest, RayResponse};
use serde_json::Value;

pub type HostResult<T> = Result<T, HostError>;

/// The calls one reconcile makes; an implementation is bound to the object being reconciled.
pub trait HostApi: Send + Sync {
    fn get(&self, kind: Kind, name: String) -> BoxFuture<'_, HostResult<Option<Value>>>;
    fn list(&self, kind: Kind, label_selector: String) -> BoxFuture<'_, HostResult<Vec<Value>>>;
    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>>;
    fn apply(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>>;
    fn apply_status(&self, status: Value) -> BoxFuture<'_, HostResult<()>>;
    fn delete(&self, kind: Kind, name: String, uid: Option<String>) -> BoxFuture<'_, HostResult<()>>;
    fn add_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>>;
    fn remove_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>>;
    fn record_event(&self, event: Event) -> BoxFuture<'_, HostResult<()>>;
    fn ray(&self, request: RayRequest) -> BoxFuture<'_, HostResult<RayResponse>>;
    /// A log line from the plugin; the implementation adds the object's identity.
    fn log(&self, level: LogLevel, message: &str, fields: &[(String, String)]);
}
