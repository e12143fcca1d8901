//! The request timeout of gRPC calls (and so of REST calls, which become gRPC calls): the shorter of the
//! server's `--request-timeout` and the client's `grpc-timeout`. A call past it ends with
//! DEADLINE_EXCEEDED (HTTP 504 on REST) and its work is dropped.

use std::{
    convert::Infallible,
    task::{Context, Poll},
    time::Duration,
};

use futures::future::BoxFuture;
use tonic::body::Body;

#[derive(Clone)]
pub struct DeadlineLayer {
    limit: Duration,
}

impl DeadlineLayer {
    pub fn new(limit: Duration) -> Self {
        Self { limit }
    }
}

impl<S> tower::Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline {
            inner,
            limit: self.limit,
        }
    }
}

#[derive(Clone)]
pub struct Deadline<S> {
    inner: S,
    limit: Duration,
}

/// A `grpc-timeout` header value: digits and a unit (H, M, S, m, u, n).
fn grpc_timeout(headers: &http::HeaderMap) -> Option<Duration> {
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let value: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(value.saturating_mul(3600)),
        "M" => Duration::from_secs(value.saturating_mul(60)),
        "S" => Duration::from_secs(value),
        "m" => Duration::from_millis(value),
        "u" => Duration::from_micros(value),
        "n" => Duration::from_nanos(value),
        _ => return None,
    })
}

impl<S, B> tower::Service<http::Request<B>> for Deadline<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let limit = grpc_timeout(request.headers()).map_or(self.limit, |client| client.min(self.limit));
        Box::pin(async move {
            match tokio::time::timeout(limit, inner.call(request)).await {
                Ok(response) => response,
                Err(_) => Ok(tonic::Status::deadline_exceeded(format!(
                    "the call did not finish within {limit:?}"
                ))
                .into_http()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_are_read() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(grpc_timeout(&headers), None);
        headers.insert("grpc-timeout", http::HeaderValue::from_static("1500m"));
        assert_eq!(grpc_timeout(&headers), Some(Duration::from_millis(1500)));
        headers.insert("grpc-timeout", http::HeaderValue::from_static("2S"));
        assert_eq!(grpc_timeout(&headers), Some(Duration::from_secs(2)));
        headers.insert("grpc-timeout", http::HeaderValue::from_static("x"));
        assert_eq!(grpc_timeout(&headers), None);
    }
}
