//! The Ray bridge: HTTP from plugins to the Ray heads of RayClusters, routed directly or through the API
//! server's proxy subresources as the operator is configured. The interface is part of the plugin contract
//! already; routing lands with the RayJob work, and until then every request is refused as unavailable.

use kuberay_plugin_sdk::{HostError, RayRequest, RayResponse};

use crate::sandbox::host_api::HostResult;

pub async fn send(request: &RayRequest) -> HostResult<RayResponse> {
    Err(HostError::Unavailable(format!(
        "Ray head access ({} {} on cluster {}) is not available in this version of the operator",
        request.method, request.path, request.cluster
    )))
}
