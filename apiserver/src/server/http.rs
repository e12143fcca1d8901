//! The REST port: KubeRay's `/apis/v1/...` routes (the gateway, as in-process gRPC calls), the `ray.io/v1`
//! pass-through, `/openapi.json` (and KubeRay's Swagger 2.0 documents at `/swagger/<file>.swagger.json`),
//! `/healthz`, `/readyz` and `/metrics`; with CORS when configured and a
//! request body limit (a larger body is a 413 with the API's error body, whatever its framing).

use std::{collections::BTreeMap, convert::Infallible, sync::Arc};

use axum::{
    Router,
    body::Body,
    extract::{Path, Request, State},
    response::{IntoResponse, Response},
    routing::get,
};
use http::{HeaderValue, Method, StatusCode, header};
use tower::{ServiceBuilder, ServiceExt, util::BoxCloneSyncService};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::{grpc::Core, health::Readiness, observe::RouteLabel};
use crate::{
    auth::{AuthenticatedAs, Authenticator},
    context::CallContext,
    metrics::Metrics,
    passthrough,
    rest::{self, Gateway, MatchedRoute},
};

/// What the REST handlers share.
#[derive(Clone)]
pub struct RestState {
    pub gateway: Arc<Gateway>,
    pub core: Core,
    pub auth: Arc<Authenticator>,
    pub readiness: Readiness,
    pub metrics: Metrics,
    pub openapi: Arc<String>,
    /// The Swagger 2.0 documents by name (`cluster`, ..., `kuberay_api`), served as `/swagger/<name>.swagger.json`.
    pub swagger: Arc<BTreeMap<String, String>>,
    pub max_body: usize,
    /// Whether KubeRay's apiserver v2 (the pass-through and the Services proxy) is served.
    pub v2: bool,
}

/// The REST port's service.
pub fn service(
    state: RestState,
    cors_origin: Option<&str>,
) -> anyhow::Result<BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>> {
    let max_body = state.max_body;
    let router = Router::new()
        .route(
            "/healthz",
            get(|| async { labelled("/healthz", "ok".into_response()) }),
        )
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/swagger/{file}", get(swagger))
        .fallback(dispatch)
        .with_state(state);
    let cors = cors_origin.map(cors).transpose()?;
    let service = ServiceBuilder::new()
        .option_layer(cors)
        .map_request(move |request: Request| limit_body(request, max_body))
        .service(router)
        .map_err(|never: Infallible| match never {});
    Ok(BoxCloneSyncService::new(service))
}

/// CORS for browsers of `origin` (`*`: any origin). Answers name the origin only to that origin's pages
/// (`Vary: Origin`), as KubeRay's server does; other origins get no CORS headers at all.
fn cors(origin: &str) -> anyhow::Result<CorsLayer> {
    let allow = if origin == "*" {
        AllowOrigin::any()
    } else {
        let value = HeaderValue::from_str(origin)
            .map_err(|_| anyhow::anyhow!("--cors-allow-origin {origin:?} is not a valid origin"))?;
        AllowOrigin::list([value])
    };
    Ok(CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT]))
}

fn labelled(route: &'static str, mut response: Response) -> Response {
    response.extensions_mut().insert(RouteLabel(route.into()));
    response
}

/// Wraps the body so reading past `max` fails; a declared length over `max` is refused at once.
fn limit_body(request: Request, max: usize) -> Request {
    let (parts, body) = request.into_parts();
    Request::from_parts(parts, Body::new(http_body_util::Limited::new(body, max)))
}

async fn readyz(State(state): State<RestState>) -> Response {
    let response = match state.readiness.check() {
        Ok(()) => "ok".into_response(),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason).into_response(),
    };
    labelled("/readyz", response)
}

async fn metrics(State(state): State<RestState>) -> Response {
    let response = (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.encode(),
    )
        .into_response();
    labelled("/metrics", response)
}

async fn openapi(State(state): State<RestState>) -> Response {
    let response = (
        [(header::CONTENT_TYPE, "application/json")],
        state.openapi.as_str().to_owned(),
    )
        .into_response();
    labelled("/openapi.json", response)
}

/// `/swagger/<name>.swagger.json`, KubeRay's paths of its Swagger 2.0 documents.
async fn swagger(State(state): State<RestState>, Path(file): Path<String>) -> Response {
    let document = file
        .strip_suffix(".swagger.json")
        .and_then(|name| state.swagger.get(name));
    let response = match document {
        Some(document) => ([(header::CONTENT_TYPE, "application/json")], document.clone()).into_response(),
        None => {
            let known: Vec<String> = state
                .swagger
                .keys()
                .map(|n| format!("{n}.swagger.json"))
                .collect();
            let message = format!("no Swagger document {file:?}; there are {}", known.join(", "));
            (StatusCode::NOT_FOUND, message).into_response()
        }
    };
    labelled("/swagger", response)
}

/// Everything else: the pass-through for Kubernetes-shaped paths, the gateway for the rest.
async fn dispatch(State(state): State<RestState>, request: Request) -> Response {
    if declared_length(&request).is_some_and(|length| length > state.max_body) {
        return too_large(request.uri().path(), state.max_body);
    }
    if state.v2 && passthrough::handles(request.uri().path()) {
        let label = if passthrough::service_proxy::parse(request.uri().path()).is_some() {
            "/api/v1/namespaces/{namespace}/services/{service}/proxy/*"
        } else {
            "/apis/ray.io/v1/*"
        };
        return labelled(label, pass_through(&state, request).await);
    }
    let mut response = state.gateway.handle(state.core.clone(), request).await;
    if let Some(route) = response.extensions().get::<MatchedRoute>() {
        let label = RouteLabel(route.label().into());
        response.extensions_mut().insert(label);
    }
    response
}

/// The 413 answer for a body over `limit` declared up front, in the error form of the API `path` belongs
/// to: a Kubernetes `Status` for the pass-through (what its clients read), the REST error body otherwise.
fn too_large(path: &str, limit: usize) -> Response {
    if passthrough::handles(path) {
        let error = crate::error::ApiError::TooLarge(format!(
            "the request body is larger than the limit of {limit} bytes"
        ));
        return labelled("/apis/ray.io/v1/*", passthrough::status_response(&error));
    }
    rest::payload_too_large(limit)
}

fn declared_length(request: &Request) -> Option<usize> {
    request
        .headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

async fn pass_through(state: &RestState, request: Request) -> Response {
    let target = passthrough::target(request.method(), request.uri().path(), request.uri().query());
    let target = match target {
        // The same for everyone, and listing nothing but ray.io/v1: no credentials needed.
        Ok(passthrough::Target::Discovery(kind)) => return passthrough::discovery(kind),
        Ok(target) => target,
        Err(e) => return passthrough::status_response(&e),
    };
    let context = match state
        .auth
        .authenticate(request.headers(), request.extensions())
        .await
    {
        Ok(context) if passthrough::is_watch(request.uri().path(), request.uri().query()) => {
            match state.auth.for_streaming(&context) {
                Ok(context) => context,
                Err(e) => return passthrough::status_response(&e),
            }
        }
        Ok(context) => context,
        Err(e) => return passthrough::status_response(&e),
    };
    let who = AuthenticatedAs(context.who().to_string());
    let mut response = forward_as(&context, target, request, state.max_body)
        .await
        .unwrap_or_else(|refusal| refusal);
    response.extensions_mut().insert(who);
    response
}

/// Forwards a checked pass-through request as the caller: through the compute-template middleware for
/// creates and replacements of Ray objects, after the Service check for a Service's proxy.
async fn forward_as(
    context: &CallContext,
    target: passthrough::Target,
    request: Request,
    max_body: usize,
) -> Result<Response, Response> {
    let templates_namespace =
        passthrough::compute_templates::applies_to(request.method(), request.uri().path())
            .map(str::to_string);
    let (mut parts, mut body) = passthrough::read(request, max_body)
        .await
        .map_err(|e| passthrough::status_response(&e))?;
    let path = match target {
        passthrough::Target::ServiceProxy(proxy, path) => {
            passthrough::service_proxy::check(context, &proxy)
                .await
                .map_err(|e| passthrough::status_response(&e))?;
            path
        }
        passthrough::Target::Forward(path) => path,
        passthrough::Target::Discovery(kind) => return Ok(passthrough::discovery(kind)),
    };
    if let Some(namespace) = templates_namespace {
        body = passthrough::compute_templates::run(context, &namespace, &mut parts, body).await?;
    }
    passthrough::forward(context, &path, &parts, body)
        .await
        .map_err(|e| passthrough::status_response(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn json(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    /// The `Access-Control-Allow-Origin` a CORS layer for `allowed` answers a request from `origin`.
    async fn allowed_origin(allowed: &str, origin: &str, preflight: bool) -> Option<String> {
        let service = ServiceBuilder::new()
            .layer(cors(allowed).ok()?)
            .service_fn(|_: Request| async { Ok::<_, Infallible>(Response::new(Body::empty())) });
        let mut request = Request::new(Body::empty());
        if preflight {
            *request.method_mut() = Method::OPTIONS;
            request.headers_mut().insert(
                header::ACCESS_CONTROL_REQUEST_METHOD,
                HeaderValue::from_static("POST"),
            );
        }
        request
            .headers_mut()
            .insert(header::ORIGIN, HeaderValue::from_str(origin).ok()?);
        let response = service.oneshot(request).await.ok()?;
        let value = response.headers().get(header::ACCESS_CONTROL_ALLOW_ORIGIN)?;
        value.to_str().ok().map(str::to_string)
    }

    #[tokio::test]
    async fn cors_names_only_the_allowed_origin() {
        let ours = "https://dashboard.example.com";
        for preflight in [true, false] {
            assert_eq!(allowed_origin(ours, ours, preflight).await.as_deref(), Some(ours));
            assert_eq!(
                allowed_origin(ours, "https://evil.example.com", preflight).await,
                None
            );
            assert_eq!(
                allowed_origin("*", "https://any.example.com", preflight)
                    .await
                    .as_deref(),
                Some("*")
            );
        }
        assert!(cors("not an origin\n").is_err());
    }

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_in_the_form_of_the_paths_api() {
        let response = too_large("/apis/ray.io/v1/namespaces/a/rayclusters", 10);
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let status = json(response).await;
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], 413);
        assert!(
            status["message"].as_str().is_some_and(|m| m.contains("10 bytes")),
            "{status}"
        );

        let response = too_large("/apis/v1/namespaces/a/clusters", 10);
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let error = json(response).await;
        assert_eq!(error["code"], 8);
        assert_eq!(error["details"], serde_json::json!([]));
    }
}
