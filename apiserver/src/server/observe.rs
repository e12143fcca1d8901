//! Request logs and metrics, one layer for both ports: each finished request is counted and timed by
//! route, method and status (`kuberay_apiserver_requests_total`, `..._request_duration_seconds`) and
//! logged with the caller, route and status (warnings for 5xx, info otherwise; health probes and metric
//! scrapes at debug).

use std::{
    convert::Infallible,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

use axum::body::Body;
use futures::future::BoxFuture;

use crate::{auth::AuthenticatedAs, metrics::Metrics, metrics::RequestRecord};

/// The route a response answered, as a bounded label; set by whoever routed the request.
#[derive(Debug, Clone)]
pub struct RouteLabel(pub Arc<str>);

/// Label of requests nobody routed (404s of unknown paths).
const UNMATCHED: &str = "unmatched";

#[derive(Clone)]
pub struct ObserveLayer {
    protocol: &'static str,
    metrics: Metrics,
}

impl ObserveLayer {
    pub fn new(protocol: &'static str, metrics: Metrics) -> Self {
        Self { protocol, metrics }
    }
}

impl<S> tower::Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Observe {
            inner,
            protocol: self.protocol,
            metrics: self.metrics.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Observe<S> {
    inner: S,
    protocol: &'static str,
    metrics: Metrics,
}

impl<S> tower::Service<http::Request<Body>> for Observe<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let (protocol, metrics) = (self.protocol, self.metrics.clone());
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        Box::pin(async move {
            let started = Instant::now();
            let response = inner.call(request).await?;
            let elapsed = started.elapsed();
            let route = response
                .extensions()
                .get::<RouteLabel>()
                .map_or_else(|| UNMATCHED.into(), |r| r.0.clone());
            let code = status_of(protocol, &response);
            let user = response
                .extensions()
                .get::<AuthenticatedAs>()
                .map(|a| a.0.as_str());
            metrics.request(&RequestRecord {
                protocol,
                route: &route,
                method: &method,
                code: &code,
                elapsed,
            });
            log(
                protocol,
                &method,
                &path,
                &route,
                &code,
                user,
                elapsed,
                response.status(),
            );
            Ok(response)
        })
    }
}

/// The HTTP status, or for gRPC the status code name (from the headers of a trailers-only answer; an
/// answer with a message says OK in its trailers).
fn status_of(protocol: &str, response: &http::Response<Body>) -> String {
    if protocol != "grpc" {
        return response.status().as_u16().to_string();
    }
    let code = response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(0);
    format!("{:?}", tonic::Code::from_i32(code))
}

#[allow(clippy::too_many_arguments, reason = "one structured log line")]
fn log(
    protocol: &str,
    method: &str,
    path: &str,
    route: &str,
    code: &str,
    user: Option<&str>,
    elapsed: std::time::Duration,
    status: http::StatusCode,
) {
    let millis = elapsed.as_secs_f64() * 1000.0;
    let user = user.unwrap_or("-");
    if matches!(path, "/healthz" | "/readyz" | "/metrics") {
        tracing::debug!(protocol, method, path, code, millis, "request");
    } else if status.is_server_error() || (protocol == "grpc" && is_server_side(code)) {
        tracing::warn!(
            protocol,
            method,
            path,
            route,
            code,
            user,
            millis,
            "request failed"
        );
    } else {
        tracing::info!(protocol, method, path, route, code, user, millis, "request");
    }
}

fn is_server_side(code: &str) -> bool {
    matches!(
        code,
        "Internal" | "Unavailable" | "Unknown" | "DeadlineExceeded" | "DataLoss"
    )
}
