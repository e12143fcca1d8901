//! ServiceAccount tokens for projected volumes, from the TokenRequest API as the node: bound to the Pod (the
//! NodeRestriction admission plugin only lets a node ask for Pods bound to it), with the projection's
//! audience and lifetime.

use k8s_openapi::api::{
    authentication::v1::TokenRequest,
    core::v1::{Pod, ServiceAccount},
};
use kube::{Api, Client, ResourceExt, api::PostParams};
use serde_json::json;

/// A token for the Pod's ServiceAccount from the TokenRequest API, bound to the Pod.
pub async fn request(
    client: &Client,
    pod: &Pod,
    audience: Option<&str>,
    seconds: i64,
) -> Result<String, String> {
    let account = pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into());
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    let audiences: Vec<&str> = audience.filter(|a| !a.is_empty()).into_iter().collect();
    let request = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "audiences": audiences,
            "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod.name_any(), "uid": pod.uid()},
        }
    });
    let response: TokenRequest = api
        .create_subresource("token", &account, &PostParams::default(), &request)
        .await
        .map_err(|e| format!("requesting a token for service account {account:?}: {e}"))?;
    response
        .status
        .map(|s| s.token)
        .ok_or_else(|| "the token request returned no token".into())
}
