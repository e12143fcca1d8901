//! client-go's request metrics, for every request the host sends to the Kubernetes API (watches, lists,
//! writes, Events, the Lease, Ray heads through the API server's proxy), with client-go's names, labels and
//! buckets (KubeRay v1.7 exports the same families):
//! - `rest_client_requests_total` (code, method, host); a request that got no response is counted with code
//!   `<error>`, as client-go counts it;
//! - `rest_client_request_duration_seconds` (verb, host): the time to the response's headers, after the
//!   client-side rate limit let the request go;
//! - `rest_client_rate_limiter_duration_seconds` (verb, host): how long the rate limit (`--qps`, `--burst`)
//!   held the request; only with a rate limit, as in client-go;
//! - `rest_client_request_size_bytes` and `rest_client_response_size_bytes` (verb, host): the body's length
//!   when it is known before it is sent or read (a request's buffered body, a response's `Content-Length`),
//!   as client-go observes `ContentLength`; a watch's streamed response is not observed;
//! - `rest_client_request_retries_total` (code, verb, host): each retry of a request the API server answered
//!   429, 503 or 504 (kube's server-aware retry policy, [`RestClientMetrics::retry_layer`]), by the code that
//!   made it retry. Every attempt is a request of its own in the families above, as in client-go.
//!
//! `host` is the API server's `host:port` (the request's own when its URI has one).

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use http_body::Body;
use kube::client::retry::RetryPolicy;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};
use tower::{
    BoxError, Layer, Service,
    retry::{Policy, RetryLayer},
};

/// How long a client-side rate limit held a request: the rate limiter puts it in the request's extensions,
/// and the metrics layer (inside it) observes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RateLimitWait(pub(crate) Duration);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RetryLabels {
    code: String,
    verb: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    verb: String,
    host: String,
}

fn latency_buckets() -> Histogram {
    // client-go's buckets for the request and the rate limiter latencies.
    Histogram::new([0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0])
}

fn size_buckets() -> Histogram {
    // client-go's buckets for request and response sizes: 64 bytes to 16 MiB.
    Histogram::new([
        64.0,
        256.0,
        512.0,
        1024.0,
        4096.0,
        16384.0,
        65536.0,
        262_144.0,
        1_048_576.0,
        4_194_304.0,
        16_777_216.0,
    ])
}

type Histograms = Family<LatencyLabels, Histogram>;

/// The families, shared by every client of the host.
#[derive(Clone, Debug)]
pub struct RestClientMetrics {
    requests: Family<RequestLabels, Counter>,
    retries: Family<RetryLabels, Counter>,
    latency: Histograms,
    rate_limiter: Histograms,
    request_size: Histograms,
    response_size: Histograms,
}

impl Default for RestClientMetrics {
    fn default() -> Self {
        let latency = || Family::new_with_constructor(latency_buckets as fn() -> Histogram);
        let size = || Family::new_with_constructor(size_buckets as fn() -> Histogram);
        Self {
            requests: Family::default(),
            retries: Family::default(),
            latency: latency(),
            rate_limiter: latency(),
            request_size: size(),
            response_size: size(),
        }
    }
}

impl RestClientMetrics {
    /// Registers the families into `registry` (which must carry no prefix: the names are client-go's).
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            self.requests.clone(),
        );
        registry.register(
            "rest_client_request_retries",
            "Number of request retries, partitioned by status code, verb, and host",
            self.retries.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds, broken down by verb and host",
            self.latency.clone(),
        );
        registry.register(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds, broken down by verb and host",
            self.rate_limiter.clone(),
        );
        registry.register(
            "rest_client_request_size_bytes",
            "Request size in bytes, broken down by verb and host",
            self.request_size.clone(),
        );
        registry.register(
            "rest_client_response_size_bytes",
            "Response size in bytes, broken down by verb and host",
            self.response_size.clone(),
        );
    }

    fn record(&self, sent: &Sent, code: Option<u16>, took: Duration, response_size: Option<u64>) {
        let code = code.map_or_else(|| "<error>".to_string(), |c| c.to_string());
        self.requests
            .get_or_create(&RequestLabels {
                code,
                method: sent.labels.verb.clone(),
                host: sent.labels.host.clone(),
            })
            .inc();
        self.latency
            .get_or_create(&sent.labels)
            .observe(took.as_secs_f64());
        if let Some(RateLimitWait(waited)) = sent.waited {
            self.rate_limiter
                .get_or_create(&sent.labels)
                .observe(waited.as_secs_f64());
        }
        #[allow(
            clippy::cast_precision_loss,
            reason = "sizes are far below 2^53 bytes, where an f64 would round them"
        )]
        for (family, size) in [
            (&self.request_size, sent.size),
            (&self.response_size, response_size),
        ] {
            if let Some(size) = size {
                family.get_or_create(&sent.labels).observe(size as f64);
            }
        }
    }

    /// kube's server-aware retry (a request the API server answered 429, 503 or 504 is sent again, after
    /// its `Retry-After` or an exponential backoff, at most 15 times), each retry counted. It goes outside
    /// [`Self::layer`] and the rate limit, so that every attempt is measured and waits for the limit, as in
    /// client-go; the client it wraps must not retry itself (`kube::Config::default_retry` off).
    pub(crate) fn retry_layer(&self, host: String) -> RetryLayer<CountedRetry> {
        RetryLayer::new(CountedRetry {
            policy: RetryPolicy::server_retry(),
            metrics: self.clone(),
            host,
        })
    }

    /// A tower layer recording each request of the services it wraps, which send to the API server at
    /// `host` (`host:port`, the label of a request whose URI is only a path, as kube's are until its
    /// innermost layers make them absolute).
    pub(crate) fn layer(&self, host: String) -> RestClientLayer {
        RestClientLayer {
            metrics: self.clone(),
            host,
        }
    }
}

/// What is known of a request once it is sent.
struct Sent {
    labels: LatencyLabels,
    size: Option<u64>,
    waited: Option<RateLimitWait>,
}

/// See [`RestClientMetrics::layer`].
#[derive(Clone)]
pub(crate) struct RestClientLayer {
    metrics: RestClientMetrics,
    host: String,
}

impl<S> Layer<S> for RestClientLayer {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Measured {
            inner,
            metrics: self.metrics.clone(),
            host: self.host.clone(),
        }
    }
}

/// A service whose requests are counted, timed and sized.
#[derive(Clone)]
pub(crate) struct Measured<S> {
    inner: S,
    metrics: RestClientMetrics,
    host: String,
}

/// The `host:port` a request to `uri` goes to: its own, or `default` for a URI that is only a path.
fn host_of(uri: &http::Uri, default: &str) -> String {
    match (uri.host(), uri.port_u16()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => default.to_string(),
    }
}

/// kube's retry policy, each retry counted into `rest_client_request_retries_total`
/// ([`RestClientMetrics::retry_layer`]).
#[derive(Clone)]
pub(crate) struct CountedRetry {
    policy: RetryPolicy,
    metrics: RestClientMetrics,
    host: String,
}

impl<R> Policy<http::Request<kube::client::Body>, http::Response<R>, BoxError> for CountedRetry {
    type Future =
        <RetryPolicy as Policy<http::Request<kube::client::Body>, http::Response<R>, BoxError>>::Future;

    fn retry(
        &mut self,
        request: &mut http::Request<kube::client::Body>,
        result: &mut Result<http::Response<R>, BoxError>,
    ) -> Option<Self::Future> {
        let code = result.as_ref().map(|r| r.status().as_u16()).ok()?;
        let wait = self.policy.retry(request, result)?;
        self.metrics
            .retries
            .get_or_create(&RetryLabels {
                code: code.to_string(),
                verb: request.method().as_str().to_string(),
                host: host_of(request.uri(), &self.host),
            })
            .inc();
        Some(wait)
    }

    fn clone_request(
        &mut self,
        request: &http::Request<kube::client::Body>,
    ) -> Option<http::Request<kube::client::Body>> {
        <RetryPolicy as Policy<_, http::Response<R>, BoxError>>::clone_request(&mut self.policy, request)
    }
}

/// The `Content-Length` of `response`, when it has a valid one.
fn content_length<R>(response: &http::Response<R>) -> Option<u64> {
    response
        .headers()
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

impl<S, B, R> Service<http::Request<B>> for Measured<S>
where
    B: Body,
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
        let sent = Sent {
            labels: LatencyLabels {
                verb: request.method().as_str().to_string(),
                host: host_of(request.uri(), &self.host),
            },
            size: request.body().size_hint().exact(),
            waited: request.extensions().get::<RateLimitWait>().copied(),
        };
        let metrics = self.metrics.clone();
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            let (code, size) = match &response {
                Ok(r) => (Some(r.status().as_u16()), content_length(r)),
                Err(_) => (None, None),
            };
            metrics.record(&sent, code, started.elapsed(), size);
            response
        })
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::Full;
    use tower::{ServiceExt, service_fn};

    use super::*;

    /// A service answering 200 with a 5-byte `Content-Length` to a GET, and 409 without one to the rest.
    async fn answer(request: http::Request<Full<&'static [u8]>>) -> Result<http::Response<()>, Infallible> {
        let get = request.method() == http::Method::GET;
        let mut response = http::Response::builder().status(if get { 200 } else { 409 });
        if get {
            response = response.header(http::header::CONTENT_LENGTH, "5");
        }
        Ok(response.body(()).unwrap_or_default())
    }

    fn encoded(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    }

    #[tokio::test]
    async fn each_request_is_counted_timed_and_sized_by_verb_and_host() {
        let metrics = RestClientMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut service = metrics.layer("10.0.0.1:6443".into()).layer(service_fn(answer));
        // Two GETs as kube sends them (a path; the host comes from the layer), a PATCH to an absolute URI
        // with a 300-byte body, held 2 s by a rate limiter.
        for _ in 0..2 {
            let request = http::Request::get("/api/v1/pods")
                .body(Full::new(&b""[..]))
                .unwrap();
            service.ready().await.unwrap().call(request).await.unwrap();
        }
        let mut patch = http::Request::patch("https://10.0.0.2:443/api/v1/pods/a")
            .body(Full::new(&[b'x'; 300][..]))
            .unwrap();
        patch
            .extensions_mut()
            .insert(RateLimitWait(Duration::from_secs(2)));
        service.ready().await.unwrap().call(patch).await.unwrap();

        let text = encoded(&registry);
        for series in [
            r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"} 2"#,
            r#"rest_client_requests_total{code="409",method="PATCH",host="10.0.0.2:443"} 1"#,
            r#"rest_client_request_duration_seconds_count{verb="GET",host="10.0.0.1:6443"} 2"#,
            // The GETs' empty bodies are 0 bytes, the PATCH's 300 (in the 512 bucket, not in 256).
            r#"rest_client_request_size_bytes_sum{verb="GET",host="10.0.0.1:6443"} 0.0"#,
            r#"rest_client_request_size_bytes_bucket{le="256.0",verb="PATCH",host="10.0.0.2:443"} 0"#,
            r#"rest_client_request_size_bytes_bucket{le="512.0",verb="PATCH",host="10.0.0.2:443"} 1"#,
            // Only the GETs' responses had a length.
            r#"rest_client_response_size_bytes_sum{verb="GET",host="10.0.0.1:6443"} 10.0"#,
            // Only the PATCH was held by a rate limiter: 2 s, in the 2 s bucket.
            r#"rest_client_rate_limiter_duration_seconds_bucket{le="1.0",verb="PATCH",host="10.0.0.2:443"} 0"#,
            r#"rest_client_rate_limiter_duration_seconds_bucket{le="2.0",verb="PATCH",host="10.0.0.2:443"} 1"#,
        ] {
            assert!(text.contains(series), "{series} missing in {text}");
        }
        for absent in [
            r#"rest_client_response_size_bytes_count{verb="PATCH""#,
            r#"rest_client_rate_limiter_duration_seconds_count{verb="GET""#,
        ] {
            assert!(!text.contains(absent), "{absent} in {text}");
        }
    }

    /// Answers each request with the next status of `statuses` (200 once they run out).
    fn scripted(
        statuses: &[u16],
    ) -> impl Service<
        http::Request<kube::client::Body>,
        Response = http::Response<()>,
        Error = BoxError,
        Future = impl Send,
    > + Clone {
        let statuses = std::sync::Arc::new(std::sync::Mutex::new(statuses.to_vec()));
        service_fn(move |_request: http::Request<kube::client::Body>| {
            let status = statuses
                .lock()
                .map(|mut s| if s.is_empty() { 200 } else { s.remove(0) })
                .unwrap_or(200);
            async move {
                Ok::<_, BoxError>(
                    http::Response::builder()
                        .status(status)
                        .body(())
                        .unwrap_or_default(),
                )
            }
        })
    }

    #[tokio::test]
    async fn a_retry_is_counted_by_the_code_that_made_it_and_each_attempt_is_a_request() {
        let metrics = RestClientMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let host = "10.0.0.1:6443".to_string();
        let retry = metrics.retry_layer(host.clone());
        let measured = metrics.layer(host);
        let get = || {
            http::Request::get("/api/v1/pods")
                .body(kube::client::Body::empty())
                .unwrap()
        };
        // 503, then 429, then 200: two retries.
        let mut service = retry.layer(measured.layer(scripted(&[503, 429])));
        let response = service.ready().await.unwrap().call(get()).await.unwrap();
        assert_eq!(response.status(), 200);
        // 500 is not a code kube retries: one attempt, no retry.
        let mut service = retry.layer(measured.layer(scripted(&[500])));
        let response = service.ready().await.unwrap().call(get()).await.unwrap();
        assert_eq!(response.status(), 500);

        let text = encoded(&registry);
        for series in [
            r#"rest_client_request_retries_total{code="503",verb="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_request_retries_total{code="429",verb="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_requests_total{code="503",method="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_requests_total{code="429",method="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_requests_total{code="500",method="GET",host="10.0.0.1:6443"} 1"#,
        ] {
            assert!(text.contains(series), "{series} missing in {text}");
        }
        assert!(
            !text.contains(r#"rest_client_request_retries_total{code="500""#),
            "{text}"
        );
    }
}
