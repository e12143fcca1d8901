use crate::{HostError, ReconcileError, ray::jobs::JobStatus};

/// Why a call to a Ray head did not give the answer the caller asked for.
///
/// The variants keep apart what a controller reacts to differently: the head could not be reached at all
/// ([`RayError::Host`], usually worth a retry), it answered with an error status ([`RayError::Status`]),
/// it answered something that is not what Ray sends ([`RayError::Decode`]), or the request could not even be
/// built from the caller's data ([`RayError::Request`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RayError {
    /// The host refused the call or could not reach the head (not ready, timed out, ...).
    #[error("{0}")]
    Host(#[from] HostError),
    /// The head answered with a status other than the ones the call expects.
    #[error("{call} failed: HTTP {status}: {body}")]
    Status {
        call: &'static str,
        status: u16,
        /// The start of the response text (Ray's errors are plain text, often a Python traceback).
        body: String,
    },
    /// The head answered 2xx with a body that is not what Ray sends for this call.
    #[error("{call} failed: unexpected answer ({detail}): {body}")]
    Decode {
        call: &'static str,
        detail: String,
        body: String,
    },
    /// A stop request did not stop the job and the job is still not finished.
    #[error("failed to stop job {id}: it is still {status}")]
    NotStopped { id: String, status: JobStatus },
    /// The request could not be built (an invalid runtime environment, an unusable job id, ...).
    #[error("{0}")]
    Request(String),
}

impl From<RayError> for ReconcileError {
    fn from(e: RayError) -> Self {
        Self::Transient(e.to_string())
    }
}
