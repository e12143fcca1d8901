//! The Kubernetes reads reaching a head needs: the RayCluster's head Service, its head Pod (by name or by
//! labels), the EndpointSlices of a Service and the auth token Secret. They go through [`ObjectLookup`], so
//! each caller reads the way it should: the operator from its watch caches merged with its own recent writes,
//! a server acting for a user with that user's identity ([`ApiLookup`]).

use std::future::Future;

use kube::{
    Api, Client,
    api::{DynamicObject, GroupVersionKind, ListParams},
    discovery::ApiResource,
};
use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::Value;

/// Reads of namespaced objects, as JSON in their Kubernetes wire form.
pub trait ObjectLookup: Send + Sync {
    /// One object, or `None` when it does not exist.
    fn get(
        &self,
        kind: &Kind,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Value>, HostError>> + Send;

    /// The objects of `kind` in `namespace` that match a label selector (`a=b,c=d`; empty selects all).
    fn list(
        &self,
        kind: &Kind,
        namespace: &str,
        label_selector: &str,
    ) -> impl Future<Output = Result<Vec<Value>, HostError>> + Send;
}

/// [`ObjectLookup`] straight from the API server, with whatever identity `client` carries (a server acting for
/// a user hands in a client that impersonates the user, so reads are authorised as that user's).
///
/// Errors: a refusal (403) is [`HostError::Forbidden`] with the API server's message; a missing object is
/// `Ok(None)` for [`get`](ObjectLookup::get); other client errors (400, 404 of a list, 409, 422) keep their
/// meaning; throttling, server errors (5xx) and connection problems are [`HostError::Unavailable`].
#[derive(Clone)]
pub struct ApiLookup {
    client: Client,
}

impl ApiLookup {
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    fn api(&self, kind: &Kind, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &api_resource(kind))
    }
}

impl ObjectLookup for ApiLookup {
    async fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Result<Option<Value>, HostError> {
        match self.api(kind, namespace).get(name).await {
            Ok(object) => to_json(&object).map(Some),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(e) => Err(from_kube(e)),
        }
    }

    async fn list(
        &self,
        kind: &Kind,
        namespace: &str,
        label_selector: &str,
    ) -> Result<Vec<Value>, HostError> {
        self.api(kind, namespace)
            .list(&ListParams::default().labels(label_selector))
            .await
            .map_err(from_kube)?
            .items
            .iter()
            .map(to_json)
            .collect()
    }
}

/// The resource of a kind, its plural guessed as kube does (`services`, `pods`, `secrets`, `endpointslices`,
/// `rayclusters`, `configmaps`): right for every kind reaching a head reads, without a discovery round trip.
pub(crate) fn api_resource(kind: &Kind) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind))
}

fn to_json(object: &DynamicObject) -> Result<Value, HostError> {
    serde_json::to_value(object).map_err(|e| HostError::Internal(format!("serializing an object: {e}")))
}

/// API server errors as [`HostError`]s.
pub(crate) fn from_kube(e: kube::Error) -> HostError {
    match e {
        kube::Error::Api(status) => {
            let message = status.message.clone();
            match status.code {
                403 => HostError::Forbidden(message),
                404 => HostError::NotFound(message),
                409 => HostError::Conflict(message),
                400 | 422 => HostError::Invalid(message),
                429 | 500..=599 => HostError::Unavailable(message),
                code => HostError::Internal(format!("the API server answered {code}: {message}")),
            }
        }
        other => HostError::Unavailable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_of_the_kinds_a_head_needs() {
        for (kind, plural) in [
            (Kind::new("", "v1", "Service"), "services"),
            (Kind::new("", "v1", "Pod"), "pods"),
            (Kind::new("", "v1", "Secret"), "secrets"),
            (Kind::new("", "v1", "ConfigMap"), "configmaps"),
            (
                Kind::new("discovery.k8s.io", "v1", "EndpointSlice"),
                "endpointslices",
            ),
            (Kind::new("ray.io", "v1", "RayCluster"), "rayclusters"),
        ] {
            let resource = api_resource(&kind);
            assert_eq!(resource.plural, plural);
            assert_eq!(resource.api_version, kind.api_version());
        }
    }
}
