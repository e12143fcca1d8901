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

/// Methods a request may use (Ray's Jobs and Serve APIs need no others).
pub const ALLOWED_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];

/// Headers a request may set, by allow-list: the sender owns the connection (`Host`, hop-by-hop headers,
/// lengths) and the credentials (`Authorization`, `X-Ray-Authorization`, cookies), which it adds itself.
pub const ALLOWED_HEADERS: &[&str] = &["content-type", "accept", "user-agent"];

/// The request's method, if it is an allowed one, after checking that every header it sets is allowed.
pub(crate) fn checked_method(request: &RayRequest) -> HostResult<Method> {
    let upper = request.method.to_ascii_uppercase();
    if !ALLOWED_METHODS.contains(&upper.as_str()) {
        return Err(HostError::Forbidden(format!(
            "HTTP method {:?} is not allowed (allowed: {})",
            request.method.escape_debug().to_string(),
            ALLOWED_METHODS.join(", ")
        )));
    }
    if let Some((name, _)) = request
        .headers
        .iter()
        .find(|(name, _)| !ALLOWED_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
    {
        return Err(HostError::Forbidden(format!(
            "header {:?} may not be set (allowed: {}; the host adds credentials itself)",
            name.escape_debug().to_string(),
            ALLOWED_HEADERS.join(", ")
        )));
    }
    Method::from_bytes(upper.as_bytes())
        .map_err(|_| HostError::Invalid(format!("invalid HTTP method {:?}", request.method)))
}

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
        if !ALLOWED_HEADERS.contains(&lower.as_str()) {
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
    let method = checked_method(request)?;
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

    fn request(method: &str, headers: &[(&str, &str)]) -> RayRequest {
        RayRequest {
            cluster: "c".into(),
            role: kuberay_plugin_sdk::PortRole::Dashboard,
            target: kuberay_plugin_sdk::RayTarget::Cluster,
            method: method.into(),
            path: "/api/jobs/".into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn only_allowed_methods_and_headers_pass() {
        for method in ["GET", "post", "PUT", "PATCH", "DELETE", "HEAD"] {
            assert!(checked_method(&request(method, &[])).is_ok(), "{method}");
        }
        for method in [
            "CONNECT",
            "TRACE",
            "OPTIONS",
            "PROPFIND",
            "GET /x HTTP/1.1\r\nHost: evil",
            "",
        ] {
            assert!(
                matches!(
                    checked_method(&request(method, &[])),
                    Err(HostError::Forbidden(_))
                ),
                "{method:?} passed"
            );
        }
        let fine = [("Content-Type", "application/json"), ("accept", "*/*")];
        assert!(checked_method(&request("POST", &fine)).is_ok());
        for header in [
            "Authorization",
            "x-ray-authorization",
            "Host",
            "Cookie",
            "Connection",
            "Transfer-Encoding",
            "Content-Length",
            "Proxy-Authorization",
            "Upgrade",
            "TE",
            "X-Forwarded-For",
            "Impersonate-User",
        ] {
            let refused = checked_method(&request("GET", &[(header, "x")]));
            assert!(
                matches!(&refused, Err(HostError::Forbidden(m)) if m.contains("may not be set")),
                "{header}: {refused:?}"
            );
        }
    }

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
