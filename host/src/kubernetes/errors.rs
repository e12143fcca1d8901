//! API server errors as the plugin sees them.
//!
//! A 403 has two sources. The operator's own RBAC (`pods is forbidden: User "..." cannot create resource
//! "pods" in API group "" ...`) is an error of the operator, to fix in its role, and neither the plugin's
//! fault nor the user's: it becomes `Unavailable` and is logged as such. Admission (Pod Security, a
//! ResourceQuota, a LimitRange, a terminating namespace, a validating webhook) answers 403 too, about what
//! was written: that is the API server's judgement of the object, shown as the API server's message alone
//! (as KubeRay shows it) in an `Invalid` error. Neither is `Forbidden`, which counts as a plugin refusal.

use kuberay_plugin_sdk::HostError;

pub(crate) fn from_kube(e: kube::Error) -> HostError {
    match e {
        kube::Error::Api(status) => {
            // The API server's message alone, as KubeRay's conditions and events show it.
            let (code, message) = (status.code, status.message);
            match code {
                403 if is_rbac_denial(&message) => {
                    tracing::error!(reason = ?message, "the API server refused the operator's own credentials; check its RBAC");
                    HostError::Unavailable(format!("the operator's credentials were refused: {message}"))
                }
                403 => HostError::Invalid(message),
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

/// Whether a 403's message is the authorizer's: `... cannot <verb> resource "<resource>" ...`, which is how
/// the API server words every RBAC (and Node, webhook authorizer) denial, whatever the verb.
fn is_rbac_denial(message: &str) -> bool {
    message.match_indices(" cannot ").any(|(at, found)| {
        let rest = &message[at + found.len()..];
        rest.split_once(' ').is_some_and(|(verb, after)| {
            !verb.is_empty()
                && verb.chars().all(|c| c.is_ascii_lowercase())
                && after.starts_with("resource \"")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "Forbidden")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn the_operators_own_403_is_not_a_plugin_refusal() {
        // Forbidden is what the host API's refusals return (and what is counted as one).
        let rbac = [
            r#"pods is forbidden: User "system:serviceaccount:kuberay-system:kuberay-wasm" cannot create resource "pods" in API group "" in the namespace "team-a""#,
            r#"services "x-head-svc" is forbidden: User "alice" cannot patch resource "services" in API group "" in the namespace "a""#,
            r#"secrets "t" is forbidden: User "u" cannot get resource "secrets" in API group "" at the cluster scope"#,
        ];
        for message in rbac {
            assert!(
                matches!(from_kube(status(403, message)), HostError::Unavailable(m) if m.contains("operator's credentials") && m.contains(message)),
                "{message}"
            );
        }
        assert!(matches!(from_kube(status(404, "x")), HostError::NotFound(_)));
    }

    #[test]
    fn an_admission_denial_is_the_api_servers_message_alone() {
        let admission = [
            r#"pods "c-head-x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "ray-head" must set securityContext.allowPrivilegeEscalation=false)"#,
            r#"pods "c-head-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0"#,
            r#"admission webhook "deny.example.com" denied the request: no"#,
            r#"pods "p" is forbidden: unable to create new content in namespace a because it is being terminated"#,
            r#"pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#,
            r#"pods "p" is forbidden: error looking up service account a/x: serviceaccount "x" not found"#,
        ];
        for message in admission {
            assert_eq!(
                from_kube(status(403, message)),
                HostError::Invalid(message.to_string()),
                "{message}"
            );
        }
    }
}
