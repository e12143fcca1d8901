//! Prometheus metrics of the server (prefix `kuberay_apiserver_`), served on `/metrics` of the REST port.
//! Labels are bounded: routes are templates (`/apis/v1/namespaces/{namespace}/clusters`) or `unmatched`,
//! gRPC methods come from the API definition or are `unknown`, methods outside the HTTP set are `other`.

use std::{sync::Arc, time::Duration};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    protocol: &'static str,
    route: String,
    method: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    protocol: &'static str,
    route: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RayLabels {
    route: &'static str,
    outcome: &'static str,
}

/// The server's metrics; cheap to clone.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

struct Inner {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<DurationLabels, Histogram>,
    authentications: Family<OutcomeLabels, Counter>,
    ray_requests: Family<RayLabels, Counter>,
}

/// One finished request, as the metrics see it.
pub struct RequestRecord<'a> {
    /// `rest` or `grpc`.
    pub protocol: &'static str,
    /// The route template (REST) or `/package.Service/Method` (gRPC).
    pub route: &'a str,
    /// The HTTP method (REST) or `POST` (gRPC).
    pub method: &'a str,
    /// The HTTP status (REST) or the gRPC code's name (gRPC).
    pub code: &'a str,
    pub elapsed: Duration,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("kuberay_apiserver");
        let requests = Family::<RequestLabels, Counter>::default();
        let durations = Family::<DurationLabels, Histogram>::new_with_constructor(|| {
            Histogram::new([
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ])
        });
        let authentications = Family::<OutcomeLabels, Counter>::default();
        let ray_requests = Family::<RayLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests by protocol, route, method and status code",
            requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time to answer a request, by protocol, route and method",
            durations.clone(),
        );
        registry.register(
            "authentications",
            "Authentications by outcome (token-reviewed, token-cached, certificate, rejected, error)",
            authentications.clone(),
        );
        registry.register(
            "ray_requests",
            "Requests to Ray heads by route (direct-service, proxy-service, ...) and outcome",
            ray_requests.clone(),
        );
        Self(Arc::new(Inner {
            registry,
            requests,
            durations,
            authentications,
            ray_requests,
        }))
    }

    /// Counts and times a finished request.
    pub fn request(&self, record: &RequestRecord<'_>) {
        let method = bounded_method(record.method);
        self.0
            .requests
            .get_or_create(&RequestLabels {
                protocol: record.protocol,
                route: record.route.to_string(),
                method: method.to_string(),
                code: record.code.to_string(),
            })
            .inc();
        self.0
            .durations
            .get_or_create(&DurationLabels {
                protocol: record.protocol,
                route: record.route.to_string(),
                method: method.to_string(),
            })
            .observe(record.elapsed.as_secs_f64());
    }

    /// Counts an authentication outcome.
    pub fn authentication(&self, outcome: &'static str) {
        self.0
            .authentications
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// Counts a request to a Ray head.
    pub fn ray_request(&self, route: &'static str, outcome: &'static str) {
        self.0
            .ray_requests
            .get_or_create(&RayLabels { route, outcome })
            .inc();
    }

    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.0.registry) {
            tracing::error!(error = %e, "encoding metrics");
        }
        text
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn bounded_method(method: &str) -> &str {
    match method {
        "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" => method,
        _ => "other",
    }
}
