//! The Ray bridge: sends plugins' requests to Ray heads. Heads are found with what plugins would read, through
//! the Kubernetes bridge handed to each call as the [`ObjectLookup`] (the watch caches merged with recent
//! writes for the head Service and Pod, direct reads for EndpointSlices and usually the token Secret); the
//! HTTP itself is [`kuberay_rayhead`]'s, shared with the API server. Which clusters a plugin may reach is
//! decided before, in the plugin host (`plugin_host::ray`).

use std::sync::Arc;

use kube::Client;
use kuberay_plugin_sdk::RayRequest;
use kuberay_rayhead::{ObjectLookup, RayHeads, Sent};
use serde_json::Value;

/// Shared by every reconcile.
pub(crate) struct RayBridge {
    heads: RayHeads,
    /// The operator's API server connection for proxied Ray requests, without automatic retries: a proxied
    /// 503 is an answer to pass on, not something to retry for minutes.
    client: Client,
}

impl RayBridge {
    pub(crate) fn new(heads: RayHeads, client: Client) -> Arc<Self> {
        Arc::new(Self { heads, client })
    }

    /// Sends `request` to the head of `cluster` (a RayCluster in `namespace`, as JSON), finding the head
    /// through `lookup`.
    pub(crate) async fn send(
        &self,
        lookup: &impl ObjectLookup,
        namespace: &str,
        cluster: &Value,
        request: &RayRequest,
    ) -> Sent {
        self.heads
            .send(lookup, &self.client, namespace, cluster, request)
            .await
    }
}
