//! Resolving a Service to the addresses behind it, from its EndpointSlices: what cluster DNS answers for a
//! headless Service (KubeRay's head Service is one), without depending on DNS being reachable from the
//! operator.

use std::net::{IpAddr, SocketAddr};

use kube::{
    Api,
    api::{DynamicObject, ListParams},
    discovery::ApiResource,
};
use kuberay_plugin_sdk::HostError;
use serde_json::Value;

use crate::{kubernetes::KubeBridge, sandbox::host_api::HostResult};

/// Ready endpoints first, then the rest (a headless head Service publishes not-ready addresses too).
pub async fn resolve(
    bridge: &KubeBridge,
    namespace: &str,
    service: &str,
    port_name: &str,
) -> HostResult<Vec<SocketAddr>> {
    let resource = ApiResource {
        group: "discovery.k8s.io".into(),
        version: "v1".into(),
        api_version: "discovery.k8s.io/v1".into(),
        kind: "EndpointSlice".into(),
        plural: "endpointslices".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(bridge.client.clone(), namespace, &resource);
    let slices = api
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await
        .map_err(|e| HostError::Unavailable(format!("listing the endpoints of {service}: {e}")))?;
    let (mut ready, mut other) = (Vec::new(), Vec::new());
    for slice in &slices.items {
        let Some(port) = slice
            .data
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|p| {
                (p.get("name").and_then(Value::as_str) == Some(port_name))
                    .then(|| p.get("port")?.as_u64())
                    .flatten()
            })
        else {
            continue;
        };
        let Ok(port) = u16::try_from(port) else { continue };
        for endpoint in slice
            .data
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let is_ready = endpoint
                .pointer("/conditions/ready")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            for address in endpoint
                .get("addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(ip) = address.as_str().and_then(|a| a.parse::<IpAddr>().ok()) else {
                    continue;
                };
                let addr = SocketAddr::new(ip, port);
                if is_ready {
                    ready.push(addr)
                } else {
                    other.push(addr)
                }
            }
        }
    }
    ready.extend(other);
    if ready.is_empty() {
        return Err(HostError::Unavailable(format!(
            "Service {service} has no endpoints for port {port_name} yet"
        )));
    }
    Ok(ready)
}
