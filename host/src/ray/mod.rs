//! The Ray bridge: HTTP from plugins to the Ray heads of RayClusters. A plugin names a cluster, a port role
//! and a path; the host checks that the plugin may reach that cluster and that the path stays under the
//! head's root, picks the route (directly or through the API server's proxy subresources, as the operator
//! is configured), adds the cluster's auth token, bounds the wait and the answer, and counts the request.

mod auth;
mod endpoints;
mod path;
mod route;
mod send;

use std::time::Duration;

use kuberay_plugin_sdk::{HostError, RayRequest, RayResponse};
pub use path::validate as validate_path;
pub use route::{RoutingMode, head_service_name};
use serde_json::Value;

use crate::{kubernetes::KubeBridge, metrics::RayLabels, sandbox::host_api::HostResult};

/// KubeRay's per-request timeouts: a direct request to a head is answered fast or not at all; through the
/// API server it takes an extra hop.
pub const DIRECT_TIMEOUT: Duration = Duration::from_secs(2);
pub const PROXY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct RayBridge {
    mode: RoutingMode,
    timeout: Duration,
    direct: send::DirectClient,
    /// The operator's API server connection without automatic retries: a proxied 503 is an answer to pass
    /// on, not something to retry for minutes.
    api: kube::Client,
}

impl RayBridge {
    pub fn new(mode: RoutingMode, timeout: Option<Duration>, api: kube::Client) -> Self {
        let timeout = timeout.unwrap_or(match mode {
            RoutingMode::Direct { .. } => DIRECT_TIMEOUT,
            RoutingMode::KubernetesProxy => PROXY_TIMEOUT,
        });
        Self {
            mode,
            timeout,
            direct: send::direct_client(),
            api,
        }
    }

    pub fn mode(&self) -> &RoutingMode {
        &self.mode
    }

    /// Sends `request` to the head of `cluster` (a RayCluster object in `namespace` the caller has already
    /// allowed the plugin to reach).
    pub async fn send(
        &self,
        bridge: &KubeBridge,
        namespace: &str,
        cluster: &Value,
        request: &RayRequest,
    ) -> HostResult<RayResponse> {
        validate_path(&request.path).map_err(|e| HostError::Forbidden(e.to_string()))?;
        let route = route::resolve(
            bridge,
            &self.mode,
            namespace,
            cluster,
            request.role,
            request.target,
        )
        .await;
        let route = match route {
            Ok(route) => route,
            Err(e) => {
                self.count(bridge, "unresolved", "unavailable");
                return Err(e);
            }
        };
        let token = auth::header(bridge, namespace, cluster).await?;
        let result = send::send(
            &self.direct,
            &self.api,
            &route,
            request,
            token.as_deref(),
            self.timeout,
        )
        .await;
        let outcome = match &result {
            Ok(r) if (200..300).contains(&r.status) => "ok",
            Ok(_) => "http-error",
            Err(_) => "unavailable",
        };
        self.count(bridge, route.label(), outcome);
        if let Err(e) = &result {
            tracing::debug!(namespace, cluster = ?cluster.pointer("/metadata/name"), route = route.label(), error = %e, "Ray request failed");
        }
        result
    }

    fn count(&self, bridge: &KubeBridge, route: &str, outcome: &str) {
        bridge
            .metrics()
            .ray_requests
            .get_or_create(&RayLabels {
                route: route.into(),
                outcome: outcome.into(),
            })
            .inc();
    }
}
