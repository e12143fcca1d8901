//! The Kubernetes API for `ray.io/v1` objects, as the caller (KubeRay's apiserver v2): `/apis/ray.io/v1/...`
//! is forwarded to the API server (any verb, selectors, pagination, watches, patches), with the caller's
//! identity (impersonation), so kubectl-shaped clients (client-go, the Python kubernetes client,
//! `kubectl --server`) work against this server with a bearer token. Creates and replacements of
//! RayClusters, RayJobs and RayServices go through KubeRay's compute-template middleware
//! ([`compute_templates`]) first. Nothing else of the Kubernetes API is reachable: the discovery documents
//! `/api` and `/apis` are answered here and list only `ray.io/v1`, Events can be read only for `ray.io/v1`
//! objects (the field selector is narrowed, as KubeRay's apiserver v2 does), and Services' proxies only for
//! the Services KubeRay made ([`service_proxy`]: a head's dashboard and Jobs API).

pub mod compute_templates;
mod openapi;
pub mod service_proxy;

pub use self::openapi::openapi_paths;
use axum::body::{Body, Bytes};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header, request::Parts};
use serde_json::json;

use self::service_proxy::ProxyRequest;

use crate::{context::CallContext, error::ApiError};

/// The prefix forwarded as is.
pub const PREFIX: &str = "/apis/ray.io/v1";
/// Events, forwarded for `ray.io/v1` objects only.
const EVENTS: &str = "/apis/events.k8s.io/v1/";

/// Request headers passed on to the API server (credentials never are: the server's client adds its own
/// and the impersonation headers).
const FORWARDED_REQUEST_HEADERS: &[header::HeaderName] = &[
    header::ACCEPT,
    header::CONTENT_TYPE,
    header::CONTENT_ENCODING,
    header::IF_MATCH,
    header::IF_NONE_MATCH,
];

/// Answer headers passed back.
const FORWARDED_RESPONSE_HEADERS: &[header::HeaderName] = &[
    header::CONTENT_TYPE,
    header::CONTENT_ENCODING,
    header::CACHE_CONTROL,
    header::ETAG,
    header::WARNING,
    // The API server's redirect of `.../proxy` to `.../proxy/` names a path of the same shape here.
    header::LOCATION,
];

/// What a pass-through request is, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Forward to this path and query.
    Forward(String),
    /// Answer the discovery document of `/api` or `/apis` here.
    Discovery(&'static str),
    /// Forward to this path and query, a Service's proxy, once [`service_proxy::check`] allows it.
    ServiceProxy(ProxyRequest, String),
}

/// Whether `path` belongs to the pass-through at all (the caller then answers 404 for anything else).
pub fn handles(path: &str) -> bool {
    path == "/api"
        || path == "/apis"
        || path == "/apis/ray.io"
        || path == PREFIX
        || path.starts_with("/apis/ray.io/v1/")
        || path.starts_with(EVENTS)
        || service_proxy::parse(path).is_some()
}

/// Whether a request is a watch, which the API server keeps open (silent while nothing changes) until the
/// watch's own timeout: `?watch=true` (or another of the values Kubernetes reads as true) or the legacy
/// `/watch/` paths of `ray.io/v1`.
pub fn is_watch(path: &str, query: Option<&str>) -> bool {
    if path.starts_with("/apis/ray.io/v1/watch/") {
        return true;
    }
    form_urlencoded::parse(query.unwrap_or("").as_bytes()).any(|(key, value)| {
        key == "watch" && matches!(value.as_ref(), "1" | "t" | "T" | "true" | "TRUE" | "True")
    })
}

/// Checks a request and says where it goes; refuses paths that could leave `ray.io/v1` once normalized.
pub fn target(method: &Method, path: &str, query: Option<&str>) -> Result<Target, ApiError> {
    if path.split('/').any(|s| s == ".." || s == ".")
        || path.contains("//")
        || path.contains('%')
        || path.contains('\\')
    {
        return Err(ApiError::InvalidArgument(format!(
            "refused path {path:?}: dot segments, empty segments and percent-encoding are not allowed"
        )));
    }
    match path {
        "/api" | "/apis" if method == Method::GET => return Ok(Target::Discovery(discovery_kind(path))),
        "/api" | "/apis" => return Err(method_not_allowed()),
        _ => {}
    }
    let query = query.unwrap_or("");
    let with_query = || {
        if query.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{query}")
        }
    };
    if let Some(proxy) = service_proxy::parse(path) {
        service_proxy::validate(&proxy)?;
        return Ok(Target::ServiceProxy(proxy, with_query()));
    }
    if let Some(rest) = path.strip_prefix(EVENTS) {
        if method != Method::GET || !is_event_collection(rest) {
            return Err(ApiError::NotFound(
                "only listing and watching the Events of ray.io/v1 objects is forwarded".into(),
            ));
        }
        return Ok(Target::Forward(format!(
            "{path}?{}",
            narrowed_events_query(query)
        )));
    }
    Ok(Target::Forward(with_query()))
}

fn discovery_kind(path: &str) -> &'static str {
    if path == "/api" {
        "APIVersions"
    } else {
        "APIGroupList"
    }
}

fn method_not_allowed() -> ApiError {
    ApiError::InvalidArgument("discovery documents can only be read".into())
}

/// `events` or `namespaces/<ns>/events`.
fn is_event_collection(rest: &str) -> bool {
    let segments: Vec<&str> = rest.split('/').collect();
    match segments.as_slice() {
        ["events"] => true,
        ["namespaces", namespace, "events"] => !namespace.is_empty(),
        _ => false,
    }
}

/// The query with its `fieldSelector` required to match `regarding.apiVersion=ray.io/v1`.
fn narrowed_events_query(query: &str) -> String {
    const RAY: &str = "regarding.apiVersion=ray.io/v1";
    let mut parts: Vec<String> = Vec::new();
    let mut selector = None;
    for part in query.split('&').filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some(("fieldSelector", value)) => selector = Some(value.to_string()),
            _ => parts.push(part.to_string()),
        }
    }
    let encoded_ray = RAY.replace('/', "%2F").replace('=', "%3D");
    let selector = match selector.filter(|s| !s.is_empty()) {
        Some(existing) => format!("{existing}%2C{encoded_ray}"),
        None => encoded_ray,
    };
    parts.push(format!("fieldSelector={selector}"));
    parts.join("&")
}

/// The discovery documents, listing `ray.io/v1` only.
pub fn discovery(kind: &str) -> Response<Body> {
    let document = if kind == "APIVersions" {
        json!({"kind": "APIVersions", "apiVersion": "v1", "versions": [], "serverAddressByClientCIDRs": []})
    } else {
        json!({
            "kind": "APIGroupList", "apiVersion": "v1",
            "groups": [{
                "name": "ray.io",
                "versions": [{"groupVersion": "ray.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "ray.io/v1", "version": "v1"},
            }],
        })
    };
    let mut response = Response::new(Body::from(document.to_string()));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The request's head and its whole body (at most `max_body` bytes).
pub async fn read(request: Request<Body>, max_body: usize) -> Result<(Parts, Bytes), ApiError> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, max_body).await.map_err(|e| {
        ApiError::TooLarge(format!(
            "the request body could not be read (at most {max_body} bytes): {e}"
        ))
    })?;
    Ok((parts, body))
}

/// Forwards a request (`parts` and `body`, see [`read`]) to `path_and_query` as the caller; the API
/// server's answer (a `Status` for errors, a stream for watches) comes back as it is.
pub async fn forward(
    context: &CallContext,
    path_and_query: &str,
    parts: &Parts,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let mut upstream = Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query)
        .body(kube::client::Body::from(body.to_vec()))
        .map_err(|e| ApiError::InvalidArgument(format!("unusable request: {e}")))?;
    copy_headers(&parts.headers, upstream.headers_mut(), FORWARDED_REQUEST_HEADERS);
    let answer = context
        .kube
        .send(upstream)
        .await
        .map_err(|e| ApiError::kube(&format!("{} {path_and_query}", parts.method), e))?;
    let (answer_parts, answer_body) = answer.into_parts();
    let mut response = Response::new(Body::new(answer_body));
    *response.status_mut() = answer_parts.status;
    copy_headers(
        &answer_parts.headers,
        response.headers_mut(),
        FORWARDED_RESPONSE_HEADERS,
    );
    Ok(response)
}

fn copy_headers(from: &HeaderMap, to: &mut HeaderMap, names: &[header::HeaderName]) {
    for name in names {
        for value in from.get_all(name) {
            to.append(name.clone(), value.clone());
        }
    }
}

/// A refusal of this server (no credentials, a path outside `ray.io/v1`, a body too large) in the
/// Kubernetes `Status` form the pass-through's clients read for every error.
pub fn status_response(error: &ApiError) -> Response<Body> {
    let code = match error {
        ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        other => crate::rest::http_status(other.code()),
    };
    status(code, &error.to_string())
}

/// A Kubernetes `Status` answer of `code` saying `message`.
pub fn status(code: StatusCode, message: &str) -> Response<Body> {
    let reason = match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        413 => "RequestEntityTooLarge",
        422 => "Invalid",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    };
    let status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16(),
    });
    let mut response = Response::new(Body::from(status.to_string()));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_objects_are_forwarded_with_their_query() {
        assert_eq!(
            target(
                &Method::GET,
                "/apis/ray.io/v1/namespaces/a/rayclusters",
                Some("limit=2")
            ),
            Ok(Target::Forward(
                "/apis/ray.io/v1/namespaces/a/rayclusters?limit=2".into()
            ))
        );
        assert_eq!(
            target(&Method::PATCH, "/apis/ray.io/v1/namespaces/a/rayclusters/c", None),
            Ok(Target::Forward(
                "/apis/ray.io/v1/namespaces/a/rayclusters/c".into()
            ))
        );
        assert_eq!(
            target(&Method::GET, "/apis", None),
            Ok(Target::Discovery("APIGroupList"))
        );
    }

    #[test]
    fn nothing_else_is_reachable() {
        for path in [
            "/apis/ray.io/v1/../../../api/v1/secrets",
            "/apis/ray.io/v1/./x",
            "/apis/ray.io/v1//namespaces",
            "/apis/ray.io/v1/%2e%2e/%2e%2e/api/v1/secrets",
            "/apis/ray.io/v1/namespaces\\..",
        ] {
            assert!(target(&Method::GET, path, None).is_err(), "{path}");
        }
        assert!(!handles("/api/v1/namespaces/a/secrets"));
        assert!(!handles("/apis/apps/v1/deployments"));
        assert!(!handles("/apis/ray.io/v1alpha1/rayclusters"));
        assert!(
            target(
                &Method::DELETE,
                "/apis/events.k8s.io/v1/namespaces/a/events",
                None
            )
            .is_err()
        );
        assert!(
            target(
                &Method::GET,
                "/apis/events.k8s.io/v1/namespaces/a/events/e1",
                None
            )
            .is_err()
        );
    }

    #[test]
    fn watches_are_recognised() {
        let path = "/apis/ray.io/v1/namespaces/a/rayclusters";
        for query in ["watch=true", "watch=1", "limit=5&watch=True&timeoutSeconds=60"] {
            assert!(is_watch(path, Some(query)), "{query}");
        }
        for query in [
            "watch=false",
            "watch=0",
            "watchful=true",
            "labelSelector=watch%3Dtrue",
            "",
        ] {
            assert!(!is_watch(path, Some(query)), "{query}");
        }
        assert!(!is_watch(path, None));
        assert!(is_watch("/apis/ray.io/v1/watch/namespaces/a/rayclusters", None));
        assert!(is_watch(
            "/apis/events.k8s.io/v1/namespaces/a/events",
            Some("watch=1")
        ));
    }

    #[test]
    fn events_are_narrowed_to_ray_objects() {
        let Ok(Target::Forward(uri)) = target(
            &Method::GET,
            "/apis/events.k8s.io/v1/namespaces/a/events",
            Some("fieldSelector=regarding.name%3Dc&limit=5"),
        ) else {
            panic!("not forwarded");
        };
        assert_eq!(
            uri,
            "/apis/events.k8s.io/v1/namespaces/a/events?limit=5&fieldSelector=regarding.name%3Dc%2Cregarding.apiVersion%3Dray.io%2Fv1"
        );
    }
}
