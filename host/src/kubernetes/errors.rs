//! API server errors as the plugin sees them. A 403 is the operator's own RBAC, not a plugin refusal.

use kuberay_plugin_sdk::HostError;

pub fn from_kube(e: kube::Error) -> HostError {
    match e {
        kube::Error::Api(status) => {
            let message = format!("{} ({})", status.message, status.reason);
            match status.code {
                // The operator's own RBAC said no: an error of the operator (to fix in its role), not a
                // refusal of the plugin, so not `Forbidden` (which counts as one).
                403 => {
                    tracing::error!(reason = ?message, "the API server refused the operator's own credentials; check its RBAC");
                    HostError::Unavailable(format!("the operator's credentials were refused: {message}"))
                }
                404 => HostError::NotFound(message),
                409 => HostError::Conflict(message),
                400 | 422 => HostError::Invalid(message),
                429 | 500..=599 => HostError::Unavailable(message),
                _ => HostError::Internal(message),
            }
        }
        kube::Error::SerdeError(e) => HostError::Invalid(e.to_string()),
        other => HostError::Unavailable(other.to_string()),
    }
}
