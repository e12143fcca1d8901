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

impl HostError {
    /// The error's text without the prefix naming its kind (`invalid: `, `unavailable: `, ...): for an
    /// error of the API server, its own message, which is what KubeRay's conditions and events carry
    /// where Go's client returns the API server's error.
    pub fn message(&self) -> &str {
        match self {
            Self::Forbidden(m)
            | Self::NotFound(m)
            | Self::Conflict(m)
            | Self::Invalid(m)
            | Self::Unavailable(m)
            | Self::Internal(m) => m,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_the_text_without_the_kind() {
        let text = "pods \"h\" is forbidden: violates PodSecurity \"baseline:latest\"";
        for error in [
            HostError::Forbidden(text.into()),
            HostError::NotFound(text.into()),
            HostError::Conflict(text.into()),
            HostError::Invalid(text.into()),
            HostError::Unavailable(text.into()),
            HostError::Internal(text.into()),
        ] {
            assert_eq!(error.message(), text);
            assert!(error.to_string().ends_with(text));
            assert_ne!(error.to_string(), text);
        }
    }
}
