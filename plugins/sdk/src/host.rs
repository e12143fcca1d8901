use serde_json::Value;

use crate::{Document, Event, HostError, Kind, RayRequest, RayResponse};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// What a plugin can ask of the operator. Every call is scoped to the namespace of the object being
/// reconciled and checked against the plugin's grant; see `wit/plugin.wit` for the exact semantics.
///
/// Objects are JSON in their Kubernetes wire form; [`crate::TypedHost`] adds typed versions.
pub trait Host {
    /// One object, or `None`. Served from the host's watch cache plus the plugin's own recent writes.
    fn get(&self, kind: &Kind, name: &str) -> Result<Option<Value>, HostError>;

    /// Objects of `kind` matching a label selector (`a=b,c in (x,y)`; empty selects all).
    fn list(&self, kind: &Kind, label_selector: &str) -> Result<Vec<Value>, HostError>;

    /// Creates an object (which may use `metadata.generateName`) owned by the object being reconciled.
    fn create(&self, object: &Value) -> Result<Value, HostError>;

    /// Server-side applies an object owned by the object being reconciled.
    fn apply(&self, object: &Value) -> Result<Value, HostError>;

    /// Server-side applies the `status` of the object being reconciled.
    fn apply_status(&self, status: &Value) -> Result<(), HostError>;

    /// Deletes an object the object being reconciled owns, or that object itself.
    fn delete(&self, kind: &Kind, name: &str, uid: Option<&str>) -> Result<(), HostError>;

    fn add_finalizer(&self, finalizer: &str) -> Result<(), HostError>;

    fn remove_finalizer(&self, finalizer: &str) -> Result<(), HostError>;

    fn record_event(&self, event: &Event) -> Result<(), HostError>;

    fn log(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]);

    /// HTTP to a RayCluster's head, routed by the host.
    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError>;

    /// [`Host::get`] as the host handed the object over, for typed reads that parse it only once (see
    /// [`Document`]). Hosts that hold values need not implement it.
    fn get_document(&self, kind: &Kind, name: &str) -> Result<Option<Document>, HostError> {
        Ok(self.get(kind, name)?.map(Document::Value))
    }

    /// [`Host::list`] as the host handed the objects over (see [`Host::get_document`]).
    fn list_documents(&self, kind: &Kind, label_selector: &str) -> Result<Vec<Document>, HostError> {
        Ok(self
            .list(kind, label_selector)?
            .into_iter()
            .map(Document::Value)
            .collect())
    }

    /// [`Host::create`], answering with the created object as the host handed it over.
    fn create_document(&self, object: &Value) -> Result<Document, HostError> {
        self.create(object).map(Document::Value)
    }

    /// [`Host::apply`], answering with the applied object as the host handed it over.
    fn apply_document(&self, object: &Value) -> Result<Document, HostError> {
        self.apply(object).map(Document::Value)
    }

    /// The plugin's configuration, a JSON object: the operator's settings plugins need (`clusterDomain`) and
    /// the administrator's `config` for this plugin (see `wit/plugin.wit`, interface `config`). Empty where
    /// the host has none.
    fn config(&self) -> serde_json::Map<String, Value> {
        serde_json::Map::new()
    }

    /// A string of [`Host::config`], if it is one.
    fn config_str(&self, key: &str) -> Option<String> {
        self.config().get(key)?.as_str().map(str::to_owned)
    }

    /// The current time. Plugins ask the host rather than the clock so tests can fix it.
    fn now(&self) -> std::time::SystemTime {
        std::time::SystemTime::now()
    }
}
