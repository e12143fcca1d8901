//! Resolving a Service to the addresses behind it, from its EndpointSlices: what cluster DNS answers for a
//! headless Service (KubeRay's head Service is one), without depending on DNS being reachable from the
//! caller. Only slices the Service controls count: the `kubernetes.io/service-name` label finds them, but
//! anyone may set it, so a slice carrying it without the Service's controller reference is passed over.

use std::net::{IpAddr, SocketAddr};

use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::Value;

use crate::{HostResult, ObjectLookup, identity::controlled_by};

/// The endpoints of `service_object` from the slices it controls: ready ones first, then the rest (a headless
/// head Service publishes not-ready addresses too).
///
/// A refusal to list the EndpointSlices stays a [`HostError::Forbidden`] (the caller's identity may not read
/// them); any other failure is [`HostError::Unavailable`], as the head cannot be reached yet.
pub(crate) async fn resolve(
    lookup: &impl ObjectLookup,
    namespace: &str,
    service_object: &Value,
    port_name: &str,
) -> HostResult<Vec<SocketAddr>> {
    let service = service_object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let slices = lookup
        .list(
            &Kind::new("discovery.k8s.io", "v1", "EndpointSlice"),
            namespace,
            &format!("kubernetes.io/service-name={service}"),
        )
        .await
        .map_err(|e| match e {
            HostError::Forbidden(message) => HostError::Forbidden(message),
            other => HostError::Unavailable(format!("listing the endpoints of {service}: {other}")),
        })?;
    let (mut ready, mut other) = (Vec::new(), Vec::new());
    for slice in slices.iter().filter(|s| controlled_by(s, service_object)) {
        let Some(port) = slice
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
