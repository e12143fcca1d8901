use super::{PortRole, RayError, RayRequest, RayResponse, RayTarget, RayTransport};

/// A typed client for the dashboard of one RayCluster's head, over a [`RayTransport`]: a plugin's
/// [`Host`](crate::Host) ([`Host::ray`](crate::Host::ray)), or any other way to the head.
///
/// It is cheap: it holds the transport and the cluster's name, and every call is one request the transport
/// routes and authenticates (a plugin never sees how the head is reached). The Jobs API calls live in
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
pub struct RayHead<'h, T: RayTransport + ?Sized> {
    transport: &'h T,
    cluster: String,
    target: RayTarget,
}

impl<'h, T: RayTransport + ?Sized> RayHead<'h, T> {
    /// The head of `cluster`, reached through the cluster's head Service (as KubeRay does).
    pub fn new(transport: &'h T, cluster: impl Into<String>) -> Self {
        Self {
            transport,
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
        Ok(self.transport.ray(&request)?)
    }
}
