//! Reaching the Ray head of a RayCluster, as kuberay-wasm does: HTTP to a head's dashboard, Serve proxy or
//! dashboard agent, shared by the operator (for its plugins) and the API server (for its users).
//!
//! A request names a cluster, a port role, a target (the cluster's head Service or its head Pod) and a path;
//! it never names a URL, host or port. [`RayHeads::send`] checks that the path stays under the head's root
//! ([`validate_path`]), picks the route (directly or through the API server's proxy subresources, as
//! [`RoutingMode`] says), adds the cluster's auth token, bounds the wait and the answer (16 MiB), and tells a
//! Kubernetes `Status` from the proxy apart from Ray's answer.
//!
//! Which objects speak for a cluster is this crate's business: only those the cluster controls (its head
//! Service, selecting its own Pods, the EndpointSlices that Service controls, its head Pod, its token Secret
//! or a user's Secret no object controls). Names in the cluster's spec or status and labels only say where to
//! look; an object found there that is not the cluster's is refused ([`Sent::refused`]).
//!
//! Which cluster a caller may reach is the caller's business: the operator allows a plugin only the RayCluster
//! it reconciles, owns or selects; a server acting for a user lets the API server decide, reading the
//! RayCluster with the user's identity. The Kubernetes reads needed on the way (head Service, head Pod,
//! EndpointSlices, token Secret) go through the caller's [`ObjectLookup`]: the operator's watch caches, or
//! [`ApiLookup`] over a client that may impersonate the user. Each caller counts the requests in its own
//! metrics from [`Sent::route`] and [`Sent::outcome`].

mod auth;
mod endpoints;
mod identity;
mod lookup;
mod options;
mod path;
mod route;
mod send;

use std::time::Duration;

use kuberay_plugin_sdk::{HostError, RayRequest, RayResponse};
pub use lookup::{ApiLookup, ObjectLookup};
pub use options::{DEFAULT_CLUSTER_DOMAIN, RoutingOptions, parse_duration, parse_go_bool};
pub use path::{PathError, validate as validate_path};
pub use route::{RoutingMode, head_service_name};
pub use send::MAX_RESPONSE;
use serde_json::Value;

use crate::identity::Failure;

pub(crate) type HostResult<T> = Result<T, HostError>;

/// KubeRay's per-request timeouts: a direct request to a head is answered fast or not at all; through the
/// API server it takes an extra hop.
pub const DIRECT_TIMEOUT: Duration = Duration::from_secs(2);
/// See [`DIRECT_TIMEOUT`].
pub const PROXY_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends requests to Ray heads, routed one way ([`RoutingMode`]). Build one and share it: it keeps the
/// connection pool of direct routes.
pub struct RayHeads {
    mode: RoutingMode,
    timeout: Duration,
    direct: send::DirectClient,
}

/// What became of one request: the route it took, for the caller's metrics, and the head's answer.
#[derive(Debug)]
pub struct Sent {
    /// `direct-service`, `direct-pod`, `proxy-service` or `proxy-pod`; `unresolved` when no route could be
    /// found (no head Service, Pod or endpoint yet). `None` when the request was refused before routing (a
    /// path [`validate_path`] refuses) or the cluster's auth token could not be read: such requests are not
    /// counted.
    pub route: Option<&'static str>,
    /// The head's answer, whatever its status code, or why there is none.
    pub result: Result<RayResponse, HostError>,
    /// The request was refused before routing (`result` is then [`HostError::Forbidden`]): a path
    /// [`validate_path`] refuses, or a head Service, head Pod or token Secret the cluster does not control.
    pub refused: bool,
}

impl Sent {
    /// `ok` (a 2xx answer), `http-error` (any other answer from the head) or `unavailable` (no answer).
    pub fn outcome(&self) -> &'static str {
        match &self.result {
            Ok(r) if (200..300).contains(&r.status) => "ok",
            Ok(_) => "http-error",
            Err(_) => "unavailable",
        }
    }
}

impl RayHeads {
    /// `timeout` bounds one request; `None` takes KubeRay's default for `mode` ([`DIRECT_TIMEOUT`],
    /// [`PROXY_TIMEOUT`]).
    pub fn new(mode: RoutingMode, timeout: Option<Duration>) -> Self {
        let timeout = timeout.unwrap_or(match mode {
            RoutingMode::Direct { .. } => DIRECT_TIMEOUT,
            RoutingMode::KubernetesProxy => PROXY_TIMEOUT,
        });
        Self {
            mode,
            timeout,
            direct: send::direct_client(),
        }
    }

    pub fn mode(&self) -> &RoutingMode {
        &self.mode
    }

    /// The timeout of one request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `request` to the head of `cluster`, a RayCluster object in `namespace` the caller has already
    /// allowed the requester to reach (`request.cluster` is not looked at).
    ///
    /// `lookup` reads the head Service, head Pod, EndpointSlices and token Secret. `api` carries proxy routes
    /// (and their credentials); build it without kube's automatic retries (`Config::default_retry = false`):
    /// a 503 from the proxy is an answer to pass on, not something to retry for minutes. Direct routes do not
    /// use it.
    pub async fn send(
        &self,
        lookup: &impl ObjectLookup,
        api: &kube::Client,
        namespace: &str,
        cluster: &Value,
        request: &RayRequest,
    ) -> Sent {
        let unsent = |failure: Failure| Sent {
            route: None,
            refused: matches!(failure, Failure::Refused(_)),
            result: Err(failure.into_host_error()),
        };
        if let Err(e) = validate_path(&request.path) {
            return unsent(Failure::Refused(e.to_string()));
        }
        // Method and headers too are the requester's to fix, whether or not the head is up yet.
        match send::checked_method(request) {
            Ok(_) => {}
            Err(HostError::Forbidden(message)) => return unsent(Failure::Refused(message)),
            Err(e) => return unsent(Failure::Host(e)),
        }
        // The token first: a cluster naming a Secret that is not its own is refused whether or not its head
        // is up yet.
        let token = match auth::header(lookup, namespace, cluster).await {
            Ok(token) => token,
            Err(failure) => return unsent(failure),
        };
        let route = route::resolve(
            lookup,
            &self.mode,
            namespace,
            cluster,
            request.role,
            request.target,
        )
        .await;
        let route = match route {
            Ok(route) => route,
            Err(Failure::Host(e)) => {
                tracing::debug!(namespace, cluster = ?cluster.pointer("/metadata/name"), error = %e, "no route to the Ray head");
                return Sent {
                    route: Some("unresolved"),
                    result: Err(e),
                    refused: false,
                };
            }
            Err(refusal) => return unsent(refusal),
        };
        let result = send::send(&self.direct, api, &route, request, token.as_deref(), self.timeout).await;
        if let Err(e) = &result {
            tracing::debug!(namespace, cluster = ?cluster.pointer("/metadata/name"), route = route.label(), error = %e, "Ray request failed");
        }
        Sent {
            route: Some(route.label()),
            result,
            refused: false,
        }
    }
}

#[cfg(test)]
mod tests;
