use crate::{Document, Host, Kind, ReconcileError};

/// Verbs a plugin can be granted on a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    Get,
    List,
    Create,
    Apply,
    ApplyStatus,
    Delete,
    Finalize,
    RecordEvent,
}

impl Verb {
    pub const ALL: [Verb; 8] = [
        Verb::Get,
        Verb::List,
        Verb::Create,
        Verb::Apply,
        Verb::ApplyStatus,
        Verb::Delete,
        Verb::Finalize,
        Verb::RecordEvent,
    ];
}

/// A kind and the verbs a plugin asks for on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    pub kind: Kind,
    pub verbs: Vec<Verb>,
}

impl Capability {
    pub fn new(kind: Kind, verbs: &[Verb]) -> Self {
        Self {
            kind,
            verbs: verbs.to_vec(),
        }
    }
}

/// What a plugin tells the host about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginMetadata {
    pub name: String,
    pub version: String,
    pub reconciles: Kind,
    pub owns: Vec<Kind>,
    pub capabilities: Vec<Capability>,
    pub finalizer: Option<String>,
    pub uses_ray_head: bool,
}

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
