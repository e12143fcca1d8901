//! `numServeEndpoints` (KubeRay's `calculateNumServeEndpointsFromSlices`): the Pods that are ready behind
//! the serve Service, counted once each across its EndpointSlices (a dual-stack Pod is in two).

use std::collections::BTreeSet;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kuberay_plugin_sdk::{Host, HostError, TypedHost};

use crate::consts::SERVICE_NAME_LABEL;

/// Ready Pods behind the Service `service`.
pub fn count<H: Host>(host: &H, service: &str) -> Result<i32, HostError> {
    let slices: Vec<EndpointSlice> = host.list_as(&format!("{SERVICE_NAME_LABEL}={service}"))?;
    let pods: BTreeSet<String> = slices
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
        .filter_map(|e| e.target_ref.as_ref()?.uid.clone())
        .filter(|uid| !uid.is_empty())
        .collect();
    Ok(i32::try_from(pods.len()).unwrap_or(i32::MAX))
}
