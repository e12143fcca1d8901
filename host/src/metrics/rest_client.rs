//! client-go's request metrics, for every request the host sends to the Kubernetes API (watches, lists,
//! writes, Events, the Lease, Ray heads through the API server's proxy), with client-go's names and labels:
//! `rest_client_requests_total` (code, method, host) and `rest_client_request_duration_seconds` (verb,
//! host; the time to the response's headers, after the client-side rate limit let the request go). A request
//! that got no response is counted with code `<error>`, as client-go counts it.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Instant,
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};
use tower::{Layer, Service};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    verb: String,
    host: String,
}

fn latency_buckets() -> Histogram {
    // client-go's buckets for rest_client_request_duration_seconds.
    Histogram::new([0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0])
}

/// The two families, shared by every client of the host.
#[derive(Clone, Debug)]
pub struct RestClientMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<LatencyLabels, Histogram>,
}

impl Default for RestClientMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_buckets as fn() -> Histogram),
        }
    }
}

impl RestClientMetrics {
    /// Registers both families into `registry` (which must carry no prefix: the names are client-go's).
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            self.requests.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds, broken down by verb and host",
            self.latency.clone(),
        );
    }

    fn record(&self, method: &str, host: &str, code: Option<u16>, took: std::time::Duration) {
        let code = code.map_or_else(|| "<error>".to_string(), |c| c.to_string());
        self.requests
            .get_or_create(&RequestLabels {
                code,
                method: method.to_string(),
                host: host.to_string(),
            })
            .inc();
        self.latency
            .get_or_create(&LatencyLabels {
                verb: method.to_string(),
                host: host.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// A tower layer recording each request of the services it wraps.
    pub(crate) fn layer(&self) -> RestClientLayer {
        RestClientLayer {
            metrics: self.clone(),
        }
    }
}

/// See [`RestClientMetrics::layer`].
#[derive(Clone)]
pub(crate) struct RestClientLayer {
    metrics: RestClientMetrics,
}

impl<S> Layer<S> for RestClientLayer {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Measured {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// A service whose requests are counted and timed.
#[derive(Clone)]
pub(crate) struct Measured<S> {
    inner: S,
    metrics: RestClientMetrics,
}

impl<S, B, R> Service<http::Request<B>> for Measured<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = request.method().as_str().to_string();
        let uri = request.uri();
        let host = match (uri.host(), uri.port_u16()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => String::new(),
        };
        let metrics = self.metrics.clone();
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            let code = response.as_ref().ok().map(|r| r.status().as_u16());
            metrics.record(&method, &host, code, started.elapsed());
            response
        })
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::{ServiceExt, service_fn};

    use super::*;

    #[tokio::test]
    async fn each_request_is_counted_by_code_method_and_host_and_timed() {
        let metrics = RestClientMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut service = metrics
            .layer()
            .layer(service_fn(|request: http::Request<()>| async move {
                let status = if request.method() == http::Method::GET {
                    200
                } else {
                    409
                };
                Ok::<_, Infallible>(
                    http::Response::builder()
                        .status(status)
                        .body(())
                        .unwrap_or_default(),
                )
            }));
        for method in [http::Method::GET, http::Method::GET, http::Method::PATCH] {
            let request = http::Request::builder()
                .method(method)
                .uri("https://10.0.0.1:6443/api/v1/pods")
                .body(())
                .unwrap_or_default();
            service.ready().await.unwrap().call(request).await.unwrap();
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"rest_client_requests_total{code="409",method="PATCH",host="10.0.0.1:6443"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"rest_client_request_duration_seconds_count{verb="GET",host="10.0.0.1:6443"} 2"#),
            "{text}"
        );
    }
}
