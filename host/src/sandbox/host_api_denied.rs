//! A host that refuses everything, for calls that must not touch the cluster (a plugin's `metadata`).

use kuberay_plugin_sdk::{HostError, LogLevel};

use crate::host_api::HostApi;

pub(crate) struct DeniedHost;

/// Every call refused (`HostApi`'s defaults), with this host's reason.
impl HostApi for DeniedHost {
    fn refusal(&self, _: &str) -> HostError {
        HostError::Forbidden("no host access while describing a plugin".into())
    }

    fn log(&self, level: LogLevel, message: &str, _: &[(String, String)]) {
        tracing::debug!(?level, "plugin log while describing itself: {message}");
    }
}

#[cfg(test)]
mod tests {
    use kuberay_plugin_sdk::{Event, Kind, PortRole, RayRequest, RayTarget};
    use serde_json::json;

    use super::*;

    fn refusal<T: std::fmt::Debug>(result: Result<T, HostError>) -> String {
        match result {
            Err(HostError::Forbidden(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn every_call_is_refused_with_the_hosts_reason() {
        let host = DeniedHost;
        let pods = Kind::new("", "v1", "Pod");
        let reasons = [
            refusal(host.get(pods.clone(), "p".into()).await),
            refusal(host.list(pods.clone(), String::new()).await),
            refusal(host.create(pods.clone(), json!({})).await),
            refusal(host.apply(pods.clone(), json!({})).await),
            refusal(host.apply_status(json!({})).await),
            refusal(host.delete(pods, "p".into(), None).await),
            refusal(host.add_finalizer("f".into()).await),
            refusal(host.remove_finalizer("f".into()).await),
            refusal(host.record_event(Event::normal("R", "A", "n")).await),
            refusal(
                host.ray(RayRequest {
                    cluster: "c".into(),
                    role: PortRole::Dashboard,
                    target: RayTarget::Cluster,
                    method: "GET".into(),
                    path: "/api/version".into(),
                    headers: Vec::new(),
                    body: Vec::new(),
                })
                .await,
            ),
        ];
        for reason in reasons {
            assert_eq!(reason, "no host access while describing a plugin");
        }
        // A host that overrides nothing names the call it does not offer.
        struct Bare;
        impl HostApi for Bare {}
        assert_eq!(
            refusal(Bare.apply_status(json!({})).await),
            "this host does not offer apply-status"
        );
    }
}
