//! A mocked API server for unit tests, as kube-rs tests its clients: a [`kube::Client`] over an in-process
//! service that records every request and answers it with a function of it. Nothing leaves the process, so
//! what the host sends (paths, field managers, bodies) and what it does with the answers (errors included)
//! is tested in milliseconds; the end-to-end tests run the same code against a real API server.

use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::BodyExt;
use serde_json::{Value, json};

/// One request the mocked API server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) method: http::Method,
    /// The path and query, e.g. `/apis/ray.io/v1/namespaces/ns/rayclusters/c/status?fieldManager=...`.
    pub(crate) uri: String,
    /// The body as JSON (`null` when empty or not JSON).
    pub(crate) body: Value,
}

impl Received {
    /// The path without the query.
    pub(crate) fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or_default()
    }
}

/// An answer: a status code and a JSON body.
pub(crate) type Answer = (u16, Value);

/// The requests received so far, shared with the client's service.
#[derive(Clone, Default)]
pub(crate) struct MockApi {
    received: Arc<Mutex<Vec<Received>>>,
}

impl MockApi {
    /// A client of this mocked API server, whose requests `answer` answers.
    pub(crate) fn client(
        &self,
        answer: impl Fn(&Received) -> Answer + Send + Sync + 'static,
    ) -> kube::Client {
        let (received, answer) = (self.received.clone(), Arc::new(answer));
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let (received, answer) = (received.clone(), answer.clone());
            async move {
                let (parts, body) = request.into_parts();
                let bytes = body.collect().await.map_err(tower::BoxError::from)?.to_bytes();
                let request = Received {
                    method: parts.method,
                    uri: parts
                        .uri
                        .path_and_query()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                };
                let (status, body) = answer(&request);
                received
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(request);
                http::Response::builder()
                    .status(status)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(kube::client::Body::from(body.to_string().into_bytes()))
                    .map_err(tower::BoxError::from)
            }
        });
        kube::Client::new(service, "default")
    }

    /// The requests received so far, in order.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The discovery document of one group version serving `resources` (`(plural, Kind)`, namespaced, with a
/// status subresource), as `GET /apis/{group}/{version}` answers it.
pub(crate) fn resource_list(group_version: &str, resources: &[(&str, &str)]) -> Value {
    let mut list = Vec::new();
    for (plural, kind) in resources {
        list.push(
            json!({"name": plural, "singularName": kind.to_lowercase(), "namespaced": true, "kind": kind,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}),
        );
        list.push(
            json!({"name": format!("{plural}/status"), "singularName": "", "namespaced": true,
            "kind": kind, "verbs": ["get", "patch", "update"]}),
        );
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list})
}

/// A `Status` failure, as the API server sends it with `code`.
pub(crate) fn status(code: u16, reason: &str, message: &str) -> Answer {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code});
    (code, body)
}
