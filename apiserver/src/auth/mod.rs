//! Who is calling, and acting as them.
//!
//! # Threat model
//!
//! Clients are untrusted; the Kubernetes API server is the authority on identities and rights. Every call
//! must carry the caller's Kubernetes credentials: a bearer token (checked with a TokenReview) or, when the
//! server runs with `--client-ca-file`, a client certificate signed by that CA. The server then acts toward
//! the Kubernetes API **as that identity** (impersonation, [`impersonate`]), so the API server's RBAC
//! decides every read and write, in exactly the namespaces the caller may use, and its audit log names the
//! caller. Reaching a Ray head directly (not through the API server) is allowed only if the caller could
//! have gone through the API server's `services/proxy` ([`access`]). No call ever acts with the server's
//! own rights, which are only `create` on TokenReviews and SubjectAccessReviews and `impersonate`.
//!
//! What this does not protect against: whoever controls this server's ServiceAccount token can impersonate
//! anyone (that is what `impersonate` means), so the token must be guarded like a cluster-admin
//! credential. Bearer tokens reach this server in clear unless TLS is configured (`--tls-cert-file`) or a
//! TLS-terminating proxy sits in front. `--auth none` turns all of this off and acts as the server itself for
//! everyone, as KubeRay's apiserver does; it is logged as a warning at start.

pub mod access;
mod certificate;
mod impersonate;
mod layer;
mod token;

use std::time::Duration;

use self::token::{TokenReviewer, Verdict};
pub use self::{
    certificate::ClientCertificate,
    layer::{AuthLayer, AuthenticatedAs},
};
use crate::{
    context::CallContext,
    error::{ApiError, ApiResult},
    metrics::Metrics,
};

/// Whether calls are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    /// Bearer tokens (TokenReview) or client certificates, then impersonation (the default).
    Kubernetes,
    /// No authentication: everyone acts as the server's own ServiceAccount (KubeRay's behaviour).
    None,
}

/// Authenticates calls and builds their [`CallContext`].
pub struct Authenticator {
    mode: AuthMode,
    server: kube::Client,
    /// The server's client for watches (no read timeout); `server` unless set.
    streaming: kube::Client,
    tokens: TokenReviewer,
    metrics: Metrics,
}

impl Authenticator {
    /// `audiences` are the TokenReview audiences (empty: the API server's own); identities of accepted tokens
    /// are remembered for `cache_ttl`.
    pub fn new(
        server: kube::Client,
        mode: AuthMode,
        audiences: Vec<String>,
        cache_ttl: Duration,
        metrics: Metrics,
    ) -> Self {
        Self {
            mode,
            tokens: TokenReviewer::new(server.clone(), audiences, cache_ttl),
            streaming: server.clone(),
            server,
            metrics,
        }
    }

    /// Uses `client` (the server's own identity, without a read timeout) for watches.
    #[must_use]
    pub fn with_streaming_client(mut self, client: kube::Client) -> Self {
        self.streaming = client;
        self
    }

    pub fn mode(&self) -> AuthMode {
        self.mode
    }

    /// The identity of a request (from its headers, or the client certificate the TLS layer put into its
    /// extensions) and a client acting as it.
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
        extensions: &http::Extensions,
    ) -> ApiResult<CallContext> {
        if self.mode == AuthMode::None {
            return Ok(CallContext {
                caller: None,
                kube: self.server.clone(),
            });
        }
        let result = self.identify(headers, extensions).await;
        let outcome = match &result {
            Ok((_, outcome)) => *outcome,
            Err(ApiError::Unauthenticated(_)) => "rejected",
            Err(_) => "error",
        };
        self.metrics.authentication(outcome);
        let (caller, _) = result?;
        let kube = impersonate::client_as(&self.server, &caller)?;
        Ok(CallContext {
            caller: Some(caller),
            kube,
        })
    }

    /// The context of an authenticated call for a watch: the same caller over the server's client for
    /// watches, whose answers may stay silent for longer than a read timeout allows.
    pub fn for_streaming(&self, context: &CallContext) -> ApiResult<CallContext> {
        let kube = match &context.caller {
            Some(caller) => impersonate::client_as(&self.streaming, caller)?,
            None => self.streaming.clone(),
        };
        Ok(CallContext {
            caller: context.caller.clone(),
            kube,
        })
    }

    async fn identify(
        &self,
        headers: &http::HeaderMap,
        extensions: &http::Extensions,
    ) -> ApiResult<(crate::context::Caller, &'static str)> {
        if let Some(certificate) = extensions.get::<ClientCertificate>() {
            return Ok((certificate.0.clone(), "certificate"));
        }
        let Some(token) = token::bearer(headers)? else {
            return Err(ApiError::Unauthenticated(
                "no credentials: send a Kubernetes bearer token (`Authorization: Bearer <token>`)".into(),
            ));
        };
        let (caller, verdict) = self.tokens.review(&token).await?;
        let outcome = match verdict {
            Verdict::Cached => "token-cached",
            Verdict::Reviewed => "token-reviewed",
        };
        Ok((caller, outcome))
    }
}
