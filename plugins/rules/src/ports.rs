//! The ports of a cluster's head Service (KubeRay's `getServicePorts`), shared by the head Service of a
//! RayCluster, the RayService's head and serve Services, and the RayCluster's Ingress.

use std::collections::BTreeMap;

use kuberay_crds::RayCluster;

use crate::consts::{
    CLIENT_PORT_NAME, DASHBOARD_PORT_NAME, DEFAULT_CLIENT_PORT, DEFAULT_DASHBOARD_PORT,
    DEFAULT_GCS_SERVER_PORT, DEFAULT_METRICS_PORT, DEFAULT_SERVING_PORT, GCS_SERVER_PORT_NAME,
    METRICS_PORT_NAME, SERVING_PORT_NAME,
};

/// The head container's ports by name (an unnamed one is `<port>-port`), or KubeRay's defaults when it
/// declares none (client 10001, gcs-server 6379, dashboard 8265, serve 8000); `metrics` (8080) is always
/// present.
pub fn head_service_ports(cluster: &RayCluster) -> BTreeMap<String, i32> {
    let mut ports: BTreeMap<String, i32> = cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.ports.as_ref())
        .into_iter()
        .flatten()
        .map(|p| {
            let name = p
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| format!("{}-port", p.container_port));
            (name, p.container_port)
        })
        .collect();
    if ports.is_empty() {
        ports = BTreeMap::from([
            (CLIENT_PORT_NAME.to_string(), DEFAULT_CLIENT_PORT),
            (GCS_SERVER_PORT_NAME.to_string(), DEFAULT_GCS_SERVER_PORT),
            (DASHBOARD_PORT_NAME.to_string(), DEFAULT_DASHBOARD_PORT),
            (SERVING_PORT_NAME.to_string(), DEFAULT_SERVING_PORT),
        ]);
    }
    ports
        .entry(METRICS_PORT_NAME.to_string())
        .or_insert(DEFAULT_METRICS_PORT);
    ports
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cluster(ports: serde_json::Value) -> RayCluster {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray", "ports": ports}]}}}},
        }))
        .unwrap()
    }

    #[test]
    fn without_declared_ports_kuberays_defaults_and_metrics() {
        let ports = head_service_ports(&cluster(json!([])));
        let expected = [
            ("client", 10001),
            ("dashboard", 8265),
            ("gcs-server", 6379),
            ("metrics", 8080),
            ("serve", 8000),
        ];
        assert_eq!(ports, expected.iter().map(|(n, p)| (n.to_string(), *p)).collect());
    }

    #[test]
    fn declared_ports_are_kept_unnamed_ones_named_and_metrics_added() {
        let ports = head_service_ports(&cluster(json!([
            {"name": "dashboard", "containerPort": 9265},
            {"containerPort": 1234},
            {"name": "", "containerPort": 4321},
        ])));
        let expected = [
            ("1234-port", 1234),
            ("4321-port", 4321),
            ("dashboard", 9265),
            ("metrics", 8080),
        ];
        assert_eq!(ports, expected.iter().map(|(n, p)| (n.to_string(), *p)).collect());
    }

    #[test]
    fn a_declared_metrics_port_wins() {
        let ports = head_service_ports(&cluster(json!([{"name": "metrics", "containerPort": 9090}])));
        assert_eq!(ports.get("metrics"), Some(&9090));
    }
}
