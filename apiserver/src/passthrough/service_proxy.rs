//! The Services proxy of KubeRay's apiserver v2: `/api/v1/namespaces/{namespace}/services/{service}/proxy`
//! and everything under it (a head's dashboard, its Jobs API) is forwarded to the Kubernetes API server's
//! `services/proxy` subresource as the caller, so the API server checks the caller's `services/proxy`
//! rights. Only Services that KubeRay made are reachable: one without the label
//! `app.kubernetes.io/name: kuberay` is answered 404, as KubeRay's server answers; the Service is read as
//! the caller (`get` on `services`, which the shipped user role grants).

use k8s_openapi::api::core::v1::Service;
use kube::Api;

use crate::{context::CallContext, convert::labels, error::ApiError};

/// The part of the path before the namespace.
const NAMESPACES: &str = "/api/v1/namespaces/";

/// A request for a Service's proxy, read from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRequest {
    pub namespace: String,
    /// The `[scheme:]name[:port]` segment as sent.
    pub service: String,
    /// The Service's name alone.
    pub name: String,
}

/// The request if `path` has the shape of a Services proxy path (it may still be refused: see [`check`]).
pub fn parse(path: &str) -> Option<ProxyRequest> {
    let rest = path.strip_prefix(NAMESPACES)?;
    let mut segments = rest.splitn(5, '/');
    let namespace = segments.next()?;
    let (services, service, proxy) = (segments.next()?, segments.next()?, segments.next()?);
    if services != "services" || proxy != "proxy" {
        return None;
    }
    Some(ProxyRequest {
        namespace: namespace.to_string(),
        service: service.to_string(),
        name: service_name(service).unwrap_or_default().to_string(),
    })
}

/// The Service's name in a `[scheme:]name[:port]` segment, as the Kubernetes API server splits it: one part
/// is the name, two are name and port, three are scheme (`http`, `https` or empty), name and port; the name
/// must not be empty. `None` for anything else.
pub fn service_name(segment: &str) -> Option<&str> {
    let parts: Vec<&str> = segment.split(':').collect();
    let (scheme, name) = match parts.as_slice() {
        [name] | [name, _] => ("", *name),
        [scheme, name, _] => (*scheme, *name),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some(name)
}

/// Refuses a malformed request (400, KubeRay's message) before anything is read.
pub fn validate(request: &ProxyRequest) -> Result<(), ApiError> {
    if request.namespace.is_empty() {
        return Err(ApiError::InvalidArgument("the namespace is empty".into()));
    }
    if request.name.is_empty() {
        return Err(ApiError::InvalidArgument(format!(
            "invalid service format: {}",
            request.service
        )));
    }
    Ok(())
}

/// Whether the caller may go through: the Service exists, the caller can read it, and KubeRay made it.
pub async fn check(context: &CallContext, request: &ProxyRequest) -> Result<(), ApiError> {
    let services: Api<Service> = Api::namespaced(context.kube.clone(), &request.namespace);
    let doing = format!("reading Service {}/{}", request.namespace, request.name);
    let service = services
        .get_opt(&request.name)
        .await
        .map_err(|e| ApiError::kube(&doing, e))?;
    let made_by_kuberay = service
        .as_ref()
        .and_then(|s| s.metadata.labels.as_ref())
        .and_then(|l| l.get(labels::APP_NAME))
        .is_some_and(|v| v == labels::APP_NAME_VALUE);
    if made_by_kuberay {
        Ok(())
    } else {
        Err(ApiError::NotFound("kuberay service not found".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_segment_is_split_as_the_api_server_splits_it() {
        for (segment, name) in [
            ("head-svc", Some("head-svc")),
            ("head-svc:8265", Some("head-svc")),
            ("http:head-svc:8265", Some("head-svc")),
            ("https:head-svc:dashboard", Some("head-svc")),
            (":head-svc:8265", Some("head-svc")),
            ("ftp:head-svc:8265", None),
            ("", None),
            (":8265", None),
            ("a:b:c:d", None),
        ] {
            assert_eq!(service_name(segment), name, "{segment:?}");
        }
    }

    #[test]
    fn only_proxy_paths_are_read_as_such() {
        let request = parse("/api/v1/namespaces/ns/services/http:c-head-svc:8265/proxy/api/jobs/").unwrap();
        assert_eq!(
            request,
            ProxyRequest {
                namespace: "ns".into(),
                service: "http:c-head-svc:8265".into(),
                name: "c-head-svc".into()
            }
        );
        assert!(parse("/api/v1/namespaces/ns/services/s/proxy").is_some());
        for path in [
            "/api/v1/namespaces/ns/services/s",
            "/api/v1/namespaces/ns/services/s/status",
            "/api/v1/namespaces/ns/pods/p/proxy",
            "/api/v1/namespaces/ns/secrets/s/proxy",
            "/api/v1/services/s/proxy",
        ] {
            assert_eq!(parse(path), None, "{path}");
        }
        let bad = parse("/api/v1/namespaces/ns/services/ftp:s:80/proxy/").unwrap();
        assert_eq!(
            validate(&bad).unwrap_err().to_string(),
            "invalid service format: ftp:s:80"
        );
        let empty = parse("/api/v1/namespaces//services/s/proxy").unwrap();
        assert!(validate(&empty).is_err());
    }
}
