//! Authentication in front of the gRPC services: every call but the health and reflection services is
//! authenticated first; an authenticated call carries its [`CallContext`] in the request's extensions, a
//! refused one never reaches a service and ends with UNAUTHENTICATED (or UNAVAILABLE when the API server
//! cannot be asked). REST calls pass through here too, as in-process gRPC calls from the gateway.

use std::{
    convert::Infallible,
    sync::Arc,
    task::{Context, Poll},
};

use futures::future::BoxFuture;
use tonic::body::Body;

use super::Authenticator;

/// Services that answer without credentials: they reveal nothing but the API's shape and liveness.
const PUBLIC_PREFIXES: &[&str] = &["/grpc.health.v1.", "/grpc.reflection."];

/// The name of the authenticated caller, in the response's extensions, for request logs.
#[derive(Debug, Clone)]
pub struct AuthenticatedAs(pub String);

/// Wraps the gRPC routes with authentication.
#[derive(Clone)]
pub struct AuthLayer {
    auth: Arc<Authenticator>,
}

impl AuthLayer {
    pub fn new(auth: Arc<Authenticator>) -> Self {
        Self { auth }
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = Authenticated<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authenticated {
            inner,
            auth: self.auth.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Authenticated<S> {
    inner: S,
    auth: Arc<Authenticator>,
}

impl<S, B> tower::Service<http::Request<B>> for Authenticated<S>
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

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let path = request.uri().path();
        if PUBLIC_PREFIXES.iter().any(|prefix| path.starts_with(prefix)) {
            return Box::pin(inner.call(request));
        }
        let auth = self.auth.clone();
        Box::pin(async move {
            match auth.authenticate(request.headers(), request.extensions()).await {
                Ok(context) => {
                    let who = context.who().to_string();
                    request.extensions_mut().insert(context);
                    let mut response = inner.call(request).await?;
                    response.extensions_mut().insert(AuthenticatedAs(who));
                    Ok(response)
                }
                Err(error) => Ok(tonic::Status::from(error).into_http()),
            }
        })
    }
}
