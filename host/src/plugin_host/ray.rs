//! A plugin's requests to Ray heads: which clusters it may reach (the object it reconciles, a RayCluster that
//! object owns, or the one its user selected), and sending through the Ray bridge, which finds the head with
//! the Kubernetes bridge.

use kuberay_plugin_sdk::{HostError, Kind, RayRequest, RayResponse, ownership};
use serde_json::Value;

use super::{PluginHost, str_at};
use crate::host_api::HostResult;

impl PluginHost {
    /// Whether the plugin may send requests to `cluster`: the object being reconciled, a RayCluster it owns,
    /// or the one it selects (`spec.clusterSelector["ray.io/cluster"]`, as a RayJob does) where a user asked
    /// for that cluster (see `admission::provenance`).
    async fn may_reach(&self, cluster: &Value) -> HostResult<bool> {
        let primary = self.primary();
        let name = str_at(cluster, "/metadata/name").unwrap_or_default();
        let is_primary = primary.kind == Kind::new("ray.io", "v1", "RayCluster")
            && str_at(cluster, "/metadata/uid") == Some(primary.uid.as_str());
        if is_primary || ownership::controlled_by(cluster, &primary.uid) {
            return Ok(true);
        }
        let current = self.admission.primary_now().await?;
        let selected = current
            .pointer("/spec/clusterSelector/ray.io~1cluster")
            .and_then(Value::as_str)
            == Some(name);
        Ok(selected && self.admission.user_selects(name).await?)
    }

    /// Sends a request to a Ray cluster's head, if the plugin may reach that cluster.
    pub(super) async fn send_to_ray(&self, request: RayRequest) -> HostResult<RayResponse> {
        let clusters = Kind::new("ray.io", "v1", "RayCluster");
        self.admission.check_names(&clusters, Some(&request.cluster))?;
        if let Err(e) = kuberay_rayhead::validate_path(&request.path) {
            return Err(HostError::Forbidden(e.to_string()));
        }
        let namespace = &self.primary().namespace;
        let cluster = self
            .kube()
            .read(&clusters, namespace, &request.cluster)
            .await?
            .ok_or_else(|| HostError::NotFound(format!("RayCluster {} does not exist", request.cluster)))?;
        if !self.may_reach(&cluster).await? {
            return Err(HostError::Forbidden(format!(
                "RayCluster {} is neither the reconciled object, nor owned by it, nor selected by its user",
                request.cluster
            )));
        }
        // Only reads reach a Ray head from a replica that is not the leader (any more).
        if !request.method.eq_ignore_ascii_case("GET") {
            self.kube().fenced()?;
        }
        let sent = self
            .ray
            .send(self.kube().as_ref(), namespace, &cluster, &request)
            .await;
        if let Some(route) = sent.route {
            self.kube().metrics().ray_request(route, sent.outcome());
        }
        sent.result
    }
}
