/// Why the host refused or failed a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// Outside the plugin's grant.
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("not found: {0}")]
    NotFound(String),
    /// The object changed or already exists.
    #[error("conflict: {0}")]
    Conflict(String),
    /// Malformed, or rejected by the API server as invalid.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The API server or the Ray head could not be reached or timed out.
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("internal: {0}")]
    Internal(String),
}

/// Why a reconcile did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReconcileError {
    /// The object itself is wrong; retried only when it changes.
    #[error("invalid object: {0}")]
    InvalidObject(String),
    /// May pass on retry; retried with backoff.
    #[error("{0}")]
    Transient(String),
}

impl From<HostError> for ReconcileError {
    fn from(e: HostError) -> Self {
        Self::Transient(e.to_string())
    }
}

impl From<serde_json::Error> for ReconcileError {
    fn from(e: serde_json::Error) -> Self {
        Self::Transient(format!("JSON: {e}"))
    }
}
