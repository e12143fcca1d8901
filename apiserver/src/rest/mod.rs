//! The REST gateway: KubeRay's `/apis/v1/...` REST API served by transcoding each HTTP+JSON request into
//! an in-process unary gRPC call, as grpc-gateway does for KubeRay. Everything is driven by the
//! `google.api.http` bindings in the descriptor set; there is no per-RPC code.
//!
//! A request is matched against the route table by path and method (an unknown path is 404, a known path
//! with another method 405 with an `Allow` header). Path segments are percent-decoded one by one (`%2F`
//! stays inside its segment); as in KubeRay's gateway, the empty segment after a trailing slash fills a
//! variable that ends a template of the request's method (`GET .../clusters/` asks for the cluster named "",
//! a 400), else the slash is ignored, and no other empty segment fills a variable (`/namespaces//clusters`
//! is 404); when two templates match, literal segments win over
//! variables (`.../{clustername}/log/{submissionid}` over `.../{clustername}/{submissionid}/...`). The
//! request message is built from the body (`body: "*"` fills the whole
//! message, `body: "field"` that field; protobuf's JSON mapping with both the lowerCamelCase and the proto
//! field names, enums by name or number, 64-bit integers as strings or numbers, unknown keys ignored), then
//! the path variables, then the query string for the fields neither fills. Any problem with the input is a
//! 400 that names the field. The answer is written as KubeRay's server writes it: lowerCamelCase names,
//! enums as numbers, 64-bit integers as strings, unpopulated fields omitted, `Empty` as `{}`. Failed calls
//! answer the HTTP status grpc-gateway gives the gRPC code and the body `{"code","message","details"}`.

mod call;
mod routes;
mod status;
mod template;
mod transcode;

#[cfg(test)]
mod tests;

use std::{fmt, sync::Arc};

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::LengthLimitError;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage};
use tonic::Code;
use tower::Service;

pub use routes::RouteError;
pub(crate) use routes::{BodyRule, Route, RouteTable, resolve_path_field};
pub use status::{error_response, error_response_with_status, http_status, payload_too_large};
pub use template::TemplateError;
pub(crate) use transcode::{is_scalar_wkt, response_json};

use crate::api::FILE_DESCRIPTOR_SET;
use template::{ends_in_slash, split_path};
use transcode::BadRequest;

/// The largest request body the gateway reads unless told otherwise (tonic's default message limit).
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The route a REST request matched, put into the response's extensions so that metrics and logs can
/// be labelled by route. Requests that match no route have none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedRoute {
    label: Arc<str>,
    grpc_path: Arc<str>,
}

impl MatchedRoute {
    /// `GET /apis/v1/namespaces/{namespace}/clusters/{name}`: the method and the path template.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The method's gRPC path, `/proto.ClusterService/GetCluster`.
    pub fn grpc_method(&self) -> &str {
        &self.grpc_path
    }
}

impl fmt::Display for MatchedRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// Why the gateway cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("the API's descriptor set cannot be decoded: {0}")]
    Descriptors(#[from] prost_reflect::DescriptorError),
    #[error("invalid HTTP binding: {0}")]
    Route(#[from] RouteError),
}

/// The REST gateway, built once from the descriptor set; [`Gateway::handle`] serves one request.
#[derive(Debug, Clone)]
pub struct Gateway {
    routes: RouteTable,
    body_limit: usize,
}

impl Gateway {
    /// The gateway of the API in [`crate::api::FILE_DESCRIPTOR_SET`]. Every binding is checked: a
    /// template naming a field the request lacks, or a body field that does not exist, is an error here.
    pub fn new() -> Result<Self, GatewayError> {
        Self::from_pool(&DescriptorPool::decode(FILE_DESCRIPTOR_SET)?)
    }

    /// The gateway of the bindings in `pool`.
    pub fn from_pool(pool: &DescriptorPool) -> Result<Self, GatewayError> {
        Ok(Self {
            routes: RouteTable::from_pool(pool)?,
            body_limit: DEFAULT_BODY_LIMIT,
        })
    }

    /// Sets the largest request body read; a larger one is answered 413.
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Serves one REST request by calling `grpc` (the gRPC services, e.g. tonic's `Routes` behind the
    /// authentication layer). The `authorization` and `x-request-id` headers become gRPC metadata and the
    /// request's extensions move to the gRPC request. Never fails: every problem is an error response.
    pub async fn handle<S, B>(&self, grpc: S, request: Request<Body>) -> Response<Body>
    where
        S: Service<Request<tonic::body::Body>, Response = Response<B>>,
        S::Error: Into<tower::BoxError>,
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<tower::BoxError>,
    {
        let path = match split_path(request.uri().path()) {
            Ok(path) => path,
            Err(e) => return error_response(Code::InvalidArgument, &e.to_string()),
        };
        let trailing = ends_in_slash(request.uri().path());
        let (route, captures) = match self.routes.lookup(request.method(), &path, trailing) {
            routes::Lookup::Found(route, captures) => (route, captures),
            routes::Lookup::NotFound => return error_response(Code::NotFound, "Not Found"),
            routes::Lookup::MethodNotAllowed(allowed) => return method_not_allowed(&allowed),
        };
        let mut response = self.call(grpc, route, captures, request).await;
        response.extensions_mut().insert(MatchedRoute {
            label: route.label.clone(),
            grpc_path: route.grpc_path.clone(),
        });
        response
    }

    async fn call<S, B>(
        &self,
        grpc: S,
        route: &Route,
        captures: Vec<template::Capture>,
        request: Request<Body>,
    ) -> Response<Body>
    where
        S: Service<Request<tonic::body::Body>, Response = Response<B>>,
        S::Error: Into<tower::BoxError>,
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<tower::BoxError>,
    {
        let (parts, body) = request.into_parts();
        let body = match axum::body::to_bytes(body, self.body_limit).await {
            Ok(body) => body,
            Err(e) if is_length_limit(&e) => return payload_too_large(self.body_limit),
            Err(e) => {
                return error_response(
                    Code::InvalidArgument,
                    &format!("reading the request body failed: {e}"),
                );
            }
        };
        let message = match transcode::request_message(route, captures, parts.uri.query(), &body) {
            Ok(message) => message,
            Err(BadRequest(reason)) => return error_response(Code::InvalidArgument, &reason),
        };
        let (answer, extensions) = call::unary(grpc, &route.grpc_path, message.encode_to_vec(), parts).await;
        let mut response = match answer.and_then(|bytes| response_body(route, bytes)) {
            Ok(json) => status::json_response(StatusCode::OK, json),
            Err(status) => error_response(status.code(), status.message()),
        };
        response.extensions_mut().extend(extensions);
        response
    }
}

/// The JSON of an encoded response message.
fn response_body(route: &Route, bytes: Bytes) -> Result<Vec<u8>, tonic::Status> {
    let message = DynamicMessage::decode(route.rpc.output(), bytes)
        .map_err(|e| tonic::Status::internal(format!("the gRPC response cannot be decoded: {e}")))?;
    response_json(&message)
        .map_err(|e| tonic::Status::internal(format!("the response cannot be written as JSON: {e}")))
}

/// 405 with an `Allow` header listing the methods the path has.
fn method_not_allowed(allowed: &[Method]) -> Response<Body> {
    let mut response = error_response_with_status(
        StatusCode::METHOD_NOT_ALLOWED,
        Code::Unimplemented,
        "Method Not Allowed",
    );
    let list: Vec<&str> = allowed.iter().map(Method::as_str).collect();
    if let Ok(value) = HeaderValue::from_str(&list.join(", ")) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

/// Whether reading a body failed because it is over a length limit (ours, or one a layer set).
fn is_length_limit(error: &axum::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if e.is::<LengthLimitError>() {
            return true;
        }
        current = e.source();
    }
    false
}
