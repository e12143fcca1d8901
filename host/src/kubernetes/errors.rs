//! API server errors as the plugin sees them.

use kuberay_plugin_sdk::HostError;

pub fn from_kube(e: kube::Error) -> HostError {
    match e {
        kube::Error::Api(status) => {
            let message = format!("{} ({})", status.message, status.reason);
            match status.code {
                403 => HostError::Forbidden(format!("the operator's credentials were refused: {message}")),
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
