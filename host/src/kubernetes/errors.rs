//! API server errors as the plugin sees them. A 403 is the operator's own RBAC, not a plugin refusal.

use kuberay_plugin_sdk::HostError;

pub(crate) fn from_kube(e: kube::Error) -> HostError {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("denied", "Forbidden")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn the_operators_own_403_is_not_a_plugin_refusal() {
        // Forbidden is what the host API's refusals return (and what is counted as one).
        assert!(
            matches!(from_kube(status(403)), HostError::Unavailable(m) if m.contains("operator's credentials"))
        );
        assert!(matches!(from_kube(status(404)), HostError::NotFound(_)));
    }
}
