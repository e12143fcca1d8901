//! Why a call failed, in one type: every layer (validation, conversions, the resource manager, Ray heads,
//! authentication) returns an [`ApiError`]; it becomes a gRPC status here and, through the gateway, the
//! HTTP status grpc-gateway would give it (`rest::status`). The message is what the client reads, so it
//! says what was wrong with the request or which dependency failed, never a Rust debug dump.

use kube::core::Status;

/// A failed call: a gRPC code and a message for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed or breaks a rule (HTTP 400).
    #[error("{0}")]
    InvalidArgument(String),
    /// The object does not exist or is not managed by this API (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// An object of that name exists already (HTTP 409).
    #[error("{0}")]
    AlreadyExists(String),
    /// The object changed meanwhile (HTTP 409).
    #[error("{0}")]
    Aborted(String),
    /// No usable credentials (HTTP 401).
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this; the message is the authorizer's reason (HTTP 403).
    #[error("{0}")]
    PermissionDenied(String),
    /// The request is valid but the state of the system does not allow it, e.g. a cluster that is not
    /// ready for job submissions (HTTP 400, as grpc-gateway maps it).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The Kubernetes API server or a Ray head could not be reached or did not answer in time (HTTP 503).
    #[error("{0}")]
    Unavailable(String),
    /// The whole call ran past the request timeout (HTTP 504).
    #[error("{0}")]
    DeadlineExceeded(String),
    /// The request body is larger than allowed (HTTP 413 on REST; gRPC `RESOURCE_EXHAUSTED`).
    #[error("{0}")]
    TooLarge(String),
    /// A bug or an answer no dependency should give (HTTP 500).
    #[error("{0}")]
    Internal(String),
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// The gRPC code of this error.
    pub fn code(&self) -> tonic::Code {
        match self {
            Self::InvalidArgument(_) => tonic::Code::InvalidArgument,
            Self::NotFound(_) => tonic::Code::NotFound,
            Self::AlreadyExists(_) => tonic::Code::AlreadyExists,
            Self::Aborted(_) => tonic::Code::Aborted,
            Self::Unauthenticated(_) => tonic::Code::Unauthenticated,
            Self::PermissionDenied(_) => tonic::Code::PermissionDenied,
            Self::FailedPrecondition(_) => tonic::Code::FailedPrecondition,
            Self::Unavailable(_) => tonic::Code::Unavailable,
            Self::DeadlineExceeded(_) => tonic::Code::DeadlineExceeded,
            Self::TooLarge(_) => tonic::Code::ResourceExhausted,
            Self::Internal(_) => tonic::Code::Internal,
        }
    }

    /// A Kubernetes API call that failed, with what the caller was doing (`"creating RayCluster x"`).
    ///
    /// The API server's own answer decides the code: its 403 message (which names the user, verb and
    /// resource) is passed on as is; 404, 409 and 422 become NotFound, AlreadyExists/Aborted and
    /// InvalidArgument; a server that cannot be reached, times out or answers 5xx is Unavailable.
    pub fn kube(doing: &str, error: kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => Self::from_status(doing, &status),
            kube::Error::HyperError(e) => {
                Self::Unavailable(format!("{doing}: the Kubernetes API server is unreachable: {e}"))
            }
            kube::Error::Service(e) => Self::Unavailable(format!(
                "{doing}: the Kubernetes API server is unreachable or did not answer in time: {e}"
            )),
            kube::Error::SerdeError(e) => Self::Internal(format!(
                "{doing}: the Kubernetes API server sent an unreadable answer: {e}"
            )),
            other => Self::Internal(format!("{doing}: {other}")),
        }
    }

    /// A Kubernetes `Status` answer (from an API error or a proxied call).
    pub fn from_status(doing: &str, status: &Status) -> Self {
        let message = if status.message.is_empty() {
            format!("{doing}: {} ({})", status.reason, status.code)
        } else {
            format!("{doing}: {}", status.message)
        };
        match status.code {
            400 | 422 => Self::InvalidArgument(message),
            401 => Self::Unauthenticated(message),
            403 => Self::PermissionDenied(message),
            404 => Self::NotFound(message),
            409 if status.reason == "AlreadyExists" => Self::AlreadyExists(message),
            409 => Self::Aborted(message),
            413 => Self::TooLarge(message),
            429 | 500.. => Self::Unavailable(message),
            _ => Self::Internal(message),
        }
    }
}

impl From<ApiError> for tonic::Status {
    fn from(error: ApiError) -> Self {
        let code = error.code();
        tonic::Status::new(code, error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> Status {
        serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": code, "reason": reason, "message": message,
        }))
        .unwrap_or_default()
    }

    #[test]
    fn api_server_answers_keep_their_meaning() {
        let forbidden = status(
            403,
            "Forbidden",
            "rayclusters.ray.io is forbidden: User \"alice\" cannot create resource",
        );
        let e = ApiError::from_status("creating RayCluster c", &forbidden);
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(e.to_string().contains("User \"alice\" cannot create"), "{e}");
        let cases = [
            (404, "NotFound", tonic::Code::NotFound),
            (409, "AlreadyExists", tonic::Code::AlreadyExists),
            (409, "Conflict", tonic::Code::Aborted),
            (422, "Invalid", tonic::Code::InvalidArgument),
            (503, "ServiceUnavailable", tonic::Code::Unavailable),
            (504, "Timeout", tonic::Code::Unavailable),
        ];
        for (code, reason, expected) in cases {
            let e = ApiError::from_status("x", &status(code, reason, "m"));
            assert_eq!(e.code(), expected, "{code} {reason}");
        }
    }
}
