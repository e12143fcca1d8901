//! Sending one request on a resolved route, with a timeout and a cap on the answer, and telling a Ray
//! answer from an API server error: through the proxy, a missing Service or an unready endpoint comes back
//! as a Kubernetes `Status`, which must not be mistaken for what Ray said.

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{client::legacy::Client as HttpClient, rt::TokioExecutor};
use kuberay_plugin_sdk::{HostError, RayRequest, RayResponse};

use crate::{HostResult, route::Route};

/// Largest answer passed on (16 MiB); a longer one is an [`HostError::Unavailable`].
pub const MAX_RESPONSE: usize = 16 << 20;

/// Headers a request may not set: the sender owns the connection and the credentials.
const HOST_OWNED: &[&str] = &[
    "host",
    "authorization",
    "x-ray-authorization",
    "connection",
    "transfer-encoding",
    "content-length",
    "proxy-authorization",
    "upgrade",
    "te",
];

pub(crate) type DirectClient = HttpClient<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

pub(crate) fn direct_client() -> DirectClient {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_connect_timeout(Some(Duration::from_secs(2)));
    connector.set_nodelay(true);
    HttpClient::builder(TokioExecutor::new()).build(connector)
}

fn build(
    method: &Method,
    uri: &str,
    request: &RayRequest,
    auth: Option<&str>,
) -> HostResult<http::request::Builder> {
    let mut builder = Request::builder().method(method.clone()).uri(uri);
    for (name, value) in &request.headers {
        let lower = name.to_ascii_lowercase();
        if HOST_OWNED.contains(&lower.as_str()) {
            continue;
        }
        let name =
            HeaderName::try_from(lower).map_err(|e| HostError::Invalid(format!("header name: {e}")))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|e| HostError::Invalid(format!("header value: {e}")))?;
        builder = builder.header(name, value);
    }
    if !request.body.is_empty()
        && !request
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        builder = builder.header(header::CONTENT_TYPE, "application/json");
    }
    if let Some(token) = auth {
        let value = HeaderValue::try_from(token)
            .map_err(|_| HostError::Internal("the auth token is not a valid header".into()))?;
        builder = builder.header(super::auth::HEADER, value);
    }
    Ok(builder)
}

async fn read_body<B>(body: B) -> HostResult<Vec<u8>>
where
    B: http_body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Limited::new(body, MAX_RESPONSE)
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .map_err(|e| {
            HostError::Unavailable(format!("reading the answer (at most {MAX_RESPONSE} bytes): {e}"))
        })
}

fn headers_of(map: &http::HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

/// A Kubernetes `Status` in place of a Ray answer: the API server refusing the sender's credentials (401,
/// 403: it may not use the proxy subresource) is Forbidden with the API server's own message; anything else
/// (no endpoints, no such Service) means the head cannot be reached.
fn api_server_error(status: u16, body: &[u8]) -> Option<HostError> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    (value["kind"] == "Status" && value["apiVersion"] == "v1").then(|| {
        let message = value["message"].as_str().unwrap_or("no message");
        match status {
            401 | 403 => HostError::Forbidden(message.to_string()),
            _ => HostError::Unavailable(format!(
                "the API server could not reach the Ray head ({status}): {message}"
            )),
        }
    })
}

pub(crate) async fn send(
    direct: &DirectClient,
    api: &kube::Client,
    route: &Route,
    request: &RayRequest,
    auth: Option<&str>,
    timeout: Duration,
) -> HostResult<RayResponse> {
    let method = Method::from_bytes(request.method.to_ascii_uppercase().as_bytes())
        .map_err(|_| HostError::Invalid(format!("invalid HTTP method {:?}", request.method)))?;
    let body = Bytes::from(request.body.clone());
    let exchange = async {
        match route {
            Route::Direct { authority, addrs, .. } => {
                let mut last = None;
                for addr in addrs {
                    match send_direct(direct, &method, *addr, authority, request, auth, body.clone()).await {
                        Ok(response) => return Ok(response),
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| HostError::Unavailable(format!("{authority} has no address"))))
            }
            Route::Proxy { prefix, .. } => {
                let uri = format!("{prefix}{}", request.path);
                let http_request = build(&method, &uri, request, auth)?
                    .body(kube::client::Body::from(body.to_vec()))
                    .map_err(|e| HostError::Invalid(e.to_string()))?;
                let response = api
                    .send(http_request)
                    .await
                    .map_err(|e| HostError::Unavailable(format!("the API server proxy: {e}")))?;
                let status = response.status().as_u16();
                let headers = headers_of(response.headers());
                let body = read_body(response.into_body()).await?;
                if !(200..300).contains(&status)
                    && let Some(e) = api_server_error(status, &body)
                {
                    return Err(e);
                }
                Ok(RayResponse {
                    status,
                    headers,
                    body,
                })
            }
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| HostError::Unavailable(format!("the Ray head did not answer within {timeout:?}")))?
}

async fn send_direct(
    client: &DirectClient,
    method: &Method,
    addr: SocketAddr,
    authority: &str,
    request: &RayRequest,
    auth: Option<&str>,
    body: Bytes,
) -> HostResult<RayResponse> {
    let uri = format!("http://{addr}{}", request.path);
    let http_request = build(method, &uri, request, auth)?
        .header(header::HOST, authority)
        .body(Full::new(body))
        .map_err(|e| HostError::Invalid(e.to_string()))?;
    let response = client
        .request(http_request)
        .await
        .map_err(|e| HostError::Unavailable(format!("connecting to {authority} ({addr}): {e}")))?;
    let status = response.status().as_u16();
    let headers = headers_of(response.headers());
    let body = read_body(response.into_body()).await?;
    Ok(RayResponse {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_server_statuses_are_told_apart_from_ray_answers() {
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no endpoints available for service \"x\"","code":503}"#;
        assert!(
            matches!(api_server_error(503, status), Some(HostError::Unavailable(m)) if m.contains("no endpoints"))
        );
        let forbidden = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"services \"c-head-svc:dashboard\" is forbidden: User \"alice\" cannot create resource \"services/proxy\"","reason":"Forbidden","code":403}"#;
        assert!(
            matches!(api_server_error(403, forbidden), Some(HostError::Forbidden(m)) if m.starts_with("services \"c-head-svc:dashboard\" is forbidden: User \"alice\""))
        );
        assert!(api_server_error(404, b"Job raysubmit_x does not exist").is_none());
        assert!(api_server_error(500, br#"{"kind":"Job"}"#).is_none());
    }
}
