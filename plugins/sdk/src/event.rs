use crate::Kind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// An event about the object being reconciled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event_type: EventType,
    /// Short UpperCamelCase reason, for example `CreatedWorkerPod`.
    pub reason: String,
    /// `Create`, `Delete`, `Update`, `Validate`, ...
    pub action: String,
    pub note: String,
    /// Another object the event is about.
    pub related: Option<(Kind, String)>,
}

impl Event {
    pub fn normal(reason: &str, action: &str, note: impl Into<String>) -> Self {
        Self {
            event_type: EventType::Normal,
            reason: reason.into(),
            action: action.into(),
            note: note.into(),
            related: None,
        }
    }

    pub fn warning(reason: &str, action: &str, note: impl Into<String>) -> Self {
        Self {
            event_type: EventType::Warning,
            ..Self::normal(reason, action, note)
        }
    }

    #[must_use]
    pub fn about(mut self, kind: Kind, name: &str) -> Self {
        self.related = Some((kind, name.to_string()));
        self
    }
}
