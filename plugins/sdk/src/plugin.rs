use crate::{Document, Host, PluginMetadata, ReconcileError};

/// The object to reconcile.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// As the host's cache last saw it; read it with [`Document::into_typed`] (a `Value` converts with
    /// `.into()`).
    pub object: Document,
    /// Failures in a row before this attempt.
    pub attempt: u32,
}

/// What the host should do after a successful reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Reconcile again after this long even if nothing changes.
    pub requeue_after: Option<std::time::Duration>,
}

impl Outcome {
    /// Wait for the next change.
    pub fn done() -> Self {
        Self { requeue_after: None }
    }

    pub fn requeue_after(after: std::time::Duration) -> Self {
        Self {
            requeue_after: Some(after),
        }
    }
}

/// A reconcile plugin. The logic is generic over the host so it runs natively in tests and benchmarks.
pub trait Plugin {
    fn metadata() -> PluginMetadata;

    /// Refuses a configuration (the host's [`Host::config`]) the plugin cannot use. The host asks at load
    /// time, with the metadata: a refused version is not loaded, and the error says why (a ReconcilePlugin's
    /// `Degraded` condition, `InvalidMetadata`). Every configuration is accepted by default.
    fn check_config(config: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    fn reconcile(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError>;

    /// Runs while the object is being deleted and still carries the plugin's finalizer; it must remove the
    /// finalizer when done.
    fn cleanup(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> {
        let _ = (host, request);
        Ok(Outcome::done())
    }
}
