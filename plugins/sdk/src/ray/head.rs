use super::{PortRole, RayError, RayRequest, RayResponse, RayTarget};
use crate::Host;

/// A typed client for the dashboard of one RayCluster's head, over [`Host::ray`].
///
/// It is cheap: it holds the host and the cluster's name, and every call is one request the host routes and
/// authenticates (a plugin never sees how the head is reached). The Jobs API calls live in
/// [`jobs`](super::jobs), the Serve API calls in [`serve`](super::serve).
///
/// ```text
/// let head = RayHead::new(host, "my-cluster");
/// match head.job_info("my-job-x7k2p")? {
///     Some(info) if info.status.is_terminal() => { /* ... */ }
///     Some(_) => { /* still running */ }
///     None => { head.submit_job(&request)?; }
/// }
/// ```
pub struct RayHead<'h, H: Host + ?Sized> {
    host: &'h H,
    cluster: String,
    target: RayTarget,
}

impl<'h, H: Host + ?Sized> RayHead<'h, H> {
    /// The head of `cluster`, reached through the cluster's head Service (as KubeRay does).
    pub fn new(host: &'h H, cluster: impl Into<String>) -> Self {
        Self {
            host,
            cluster: cluster.into(),
            target: RayTarget::Cluster,
        }
    }

    /// Sends to the head Pod itself rather than through the head Service.
    #[must_use]
    pub fn via_head_pod(mut self) -> Self {
        self.target = RayTarget::HeadPod;
        self
    }

    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// One request to the dashboard. Requests with a body, and the verbs that change state, say
    /// `Content-Type: application/json` as KubeRay's client does (Ray's stop endpoint ignores the body, but
    /// proxies in between may not like a POST without a type).
    pub(crate) fn dashboard(
        &self,
        method: &str,
        path: String,
        body: Option<Vec<u8>>,
    ) -> Result<RayResponse, RayError> {
        let mut headers = Vec::new();
        if body.is_some() || method != "GET" {
            headers.push(("Content-Type".to_string(), "application/json".to_string()));
        }
        let request = RayRequest {
            cluster: self.cluster.clone(),
            role: PortRole::Dashboard,
            target: self.target,
            method: method.to_string(),
            path,
            headers,
            body: body.unwrap_or_default(),
        };
        Ok(self.host.ray(&request)?)
    }
}
