//! What a plugin declares about itself: the kind it reconciles, the kinds it owns and the verbs it asks for.

use crate::Kind;

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
