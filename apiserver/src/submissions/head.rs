//! The Ray head of a RayCluster, reached for a caller: the cluster is read as the caller, must be `ready`,
//! and the caller must hold the `services/proxy` verb the request would need through the API server's
//! proxy (the API server checks it itself in proxy mode; a SubjectAccessReview checks it in direct mode).
//! Requests then go the way the operator's go ([`kuberay_rayhead::RayHeads`]), reading the head Service,
//! EndpointSlices and token Secret as the caller.

use std::sync::Arc;

use kube::Api;
use kuberay_crds::RayCluster;
use kuberay_plugin_sdk::{HostError, RayRequest, RayResponse, RayTransport};
use kuberay_rayhead::{ApiLookup, RayHeads, RoutingMode, head_service_name};
use serde_json::Value;

use crate::{
    auth::access::{AccessReviewer, Attributes},
    context::CallContext,
    error::{ApiError, ApiResult},
    metrics::Metrics,
};

/// What job-submission calls share.
pub struct Heads {
    pub(crate) heads: RayHeads,
    pub(crate) access: AccessReviewer,
    pub(crate) metrics: Metrics,
}

/// One cluster's head, for one call.
pub(crate) struct Head {
    shared: Arc<Heads>,
    context: CallContext,
    namespace: String,
    cluster: Value,
}

impl Heads {
    pub fn new(heads: RayHeads, access: AccessReviewer, metrics: Metrics) -> Self {
        Self {
            heads,
            access,
            metrics,
        }
    }

    /// The head of RayCluster `name`, once the caller may use it and it is ready.
    pub(crate) async fn open(
        self: &Arc<Self>,
        context: CallContext,
        namespace: &str,
        name: &str,
    ) -> ApiResult<Head> {
        let api: Api<RayCluster> = Api::namespaced(context.kube.clone(), namespace);
        let cluster = api
            .get_opt(name)
            .await
            .map_err(|e| ApiError::kube(&format!("reading RayCluster {name}"), e))?
            .ok_or_else(|| ApiError::NotFound(format!("RayCluster {namespace}/{name} does not exist")))?;
        let state = cluster
            .status
            .as_ref()
            .and_then(|s| s.state.as_ref())
            .map(|s| s.to_string())
            .unwrap_or_default();
        if !state.eq_ignore_ascii_case("ready") {
            return Err(ApiError::FailedPrecondition(format!(
                "RayCluster {namespace}/{name} is not ready (state {:?}); submit once it is",
                if state.is_empty() { "none yet" } else { &state }
            )));
        }
        let cluster = serde_json::to_value(&cluster)
            .map_err(|e| ApiError::Internal(format!("reading RayCluster {name}: {e}")))?;
        Ok(Head {
            shared: self.clone(),
            context,
            namespace: namespace.to_string(),
            cluster,
        })
    }
}

/// The proxy verb Kubernetes maps an HTTP method to.
fn proxy_verb(method: &str) -> &'static str {
    match method {
        "GET" | "HEAD" => "get",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "proxy",
    }
}

impl Head {
    /// In direct mode, whether the caller could have sent `method` through the head Service's proxy.
    pub(crate) async fn authorize(&self, method: &str) -> ApiResult<()> {
        let (Some(caller), RoutingMode::Direct { .. }) = (&self.context.caller, self.shared.heads.mode())
        else {
            return Ok(());
        };
        let service = head_service_name(&self.cluster);
        let attributes = Attributes {
            verb: proxy_verb(method),
            group: "",
            resource: "services",
            subresource: "proxy",
            namespace: &self.namespace,
            name: &service,
        };
        self.shared.access.check(caller, &attributes).await
    }

    /// Runs a typed Ray client call (the plugin SDK's, blocking on the async send) on a blocking thread.
    pub(crate) async fn run<T, F>(self, call: F) -> ApiResult<T>
    where
        F: FnOnce(&Transport) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let transport = Transport {
            head: self,
            runtime: tokio::runtime::Handle::current(),
        };
        tokio::task::spawn_blocking(move || call(&transport))
            .await
            .map_err(|e| ApiError::Internal(format!("the Ray head call stopped: {e}")))?
    }

    async fn send(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        let lookup = ApiLookup::new(self.context.kube.clone());
        let sent = self
            .shared
            .heads
            .send(
                &lookup,
                &self.context.kube,
                &self.namespace,
                &self.cluster,
                request,
            )
            .await;
        if let Some(route) = sent.route {
            self.shared.metrics.ray_request(route, sent.outcome());
        }
        sent.result
    }
}

/// The SDK's typed Ray client runs over this: each request blocks its (blocking-pool) thread on the
/// shared async send.
pub(crate) struct Transport {
    head: Head,
    runtime: tokio::runtime::Handle,
}

impl RayTransport for Transport {
    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        self.runtime.block_on(self.head.send(request))
    }
}

/// What a failure to reach the head means to the caller.
pub(crate) fn host_error(error: HostError) -> ApiError {
    match error {
        HostError::Forbidden(m) => ApiError::PermissionDenied(m),
        HostError::NotFound(m) => ApiError::NotFound(m),
        HostError::Invalid(m) => ApiError::InvalidArgument(m),
        HostError::Conflict(m) => ApiError::Aborted(m),
        HostError::Unavailable(m) => ApiError::Unavailable(format!("the Ray head cannot be reached: {m}")),
        HostError::Internal(m) => ApiError::Internal(m),
    }
}
