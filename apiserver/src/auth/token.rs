//! Bearer tokens: the Kubernetes API server says whose a token is (a TokenReview, made with the server's
//! own credentials), and the answer is remembered for a short while so that a client's burst of calls
//! costs one review, as kube-apiserver's webhook authenticator caches its answers.
//!
//! The cache is keyed by the SHA-256 of the token, never the token itself. Only accepted tokens are
//! cached; a rejected token is reviewed again on its next use (so a token that just became valid works at
//! once). A cached identity outlives a revoked token by at most the cache's TTL (`--token-cache-ttl`, 0 to
//! turn the cache off).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::{Api, api::PostParams};
use sha2::{Digest, Sha256};

use crate::{
    context::Caller,
    error::{ApiError, ApiResult},
};

/// The token of an `Authorization: Bearer <token>` header, or of one that holds nothing but the token (as
/// KubeRay's Python apiserver client sends its `token` parameter); `None` without one, an error for another
/// scheme or an unreadable value.
pub(crate) fn bearer(headers: &http::HeaderMap) -> ApiResult<Option<String>> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| ApiError::Unauthenticated("the Authorization header is not readable text".into()))?
        .trim();
    let Some((scheme, token)) = value.split_once(' ') else {
        if value.is_empty() || value.eq_ignore_ascii_case("bearer") {
            return Err(ApiError::Unauthenticated("the bearer token is empty".into()));
        }
        return Ok(Some(value.to_string()));
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::Unauthenticated(format!(
            "unsupported authorization scheme {scheme:?}: send `Authorization: Bearer <Kubernetes token>`"
        )));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(ApiError::Unauthenticated("the bearer token is empty".into()));
    }
    Ok(Some(token.to_string()))
}

/// At most this many identities are remembered; past that, expired ones are dropped, then all of them.
const MAX_CACHED: usize = 10_000;

type TokenDigest = [u8; 32];

/// Reviews tokens with the server's own client (which needs `create` on `tokenreviews`).
pub(crate) struct TokenReviewer {
    server: kube::Client,
    audiences: Vec<String>,
    ttl: Duration,
    cache: Mutex<HashMap<TokenDigest, (Instant, Caller)>>,
}

/// How a token was judged, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Cached,
    Reviewed,
}

impl TokenReviewer {
    pub(crate) fn new(server: kube::Client, audiences: Vec<String>, ttl: Duration) -> Self {
        Self {
            server,
            audiences,
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Who `token` belongs to. An unknown, expired or wrong-audience token is Unauthenticated; an API
    /// server that cannot be asked is Unavailable.
    pub(crate) async fn review(&self, token: &str) -> ApiResult<(Caller, Verdict)> {
        let digest: TokenDigest = Sha256::digest(token.as_bytes()).into();
        if let Some(caller) = self.cached(&digest) {
            return Ok((caller, Verdict::Cached));
        }
        let caller = self.ask(token).await?;
        self.remember(digest, &caller);
        Ok((caller, Verdict::Reviewed))
    }

    fn cached(&self, digest: &TokenDigest) -> Option<Caller> {
        let cache = self.cache.lock().ok()?;
        let (expires, caller) = cache.get(digest)?;
        (Instant::now() < *expires).then(|| caller.clone())
    }

    fn remember(&self, digest: TokenDigest, caller: &Caller) {
        if self.ttl.is_zero() {
            return;
        }
        let Ok(mut cache) = self.cache.lock() else {
            return;
        };
        let now = Instant::now();
        if cache.len() >= MAX_CACHED {
            cache.retain(|_, (expires, _)| now < *expires);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(digest, (now + self.ttl, caller.clone()));
    }

    async fn ask(&self, token: &str) -> ApiResult<Caller> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: (!self.audiences.is_empty()).then(|| self.audiences.clone()),
            },
            ..TokenReview::default()
        };
        let api: Api<TokenReview> = Api::all(self.server.clone());
        let answer = api.create(&PostParams::default(), &review).await.map_err(|e| {
            match ApiError::kube("reviewing the bearer token", e) {
                // The server's own ServiceAccount lacks `create tokenreviews`: a deployment error, not the
                // caller's.
                ApiError::PermissionDenied(m) => ApiError::Unavailable(format!(
                    "this server may not review tokens (its ServiceAccount needs create on tokenreviews): {m}"
                )),
                other => other,
            }
        })?;
        let status = answer.status.unwrap_or_default();
        let user = status.user.filter(|_| status.authenticated == Some(true));
        let Some(user) = user.filter(|u| u.username.as_deref().is_some_and(|n| !n.is_empty())) else {
            let reason = status
                .error
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "the token is unknown, expired or for another audience".into());
            return Err(ApiError::Unauthenticated(format!(
                "the Kubernetes API server did not accept the bearer token: {reason}"
            )));
        };
        Ok(Caller {
            username: user.username.unwrap_or_default(),
            uid: user.uid.filter(|u| !u.is_empty()),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        map.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_str(value).unwrap(),
        );
        map
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        assert_eq!(bearer(&http::HeaderMap::new()), Ok(None));
        assert_eq!(bearer(&headers("Bearer abc.def")), Ok(Some("abc.def".into())));
        assert_eq!(bearer(&headers("bearer  abc ")), Ok(Some("abc".into())));
        // KubeRay's Python client sends the token alone.
        assert_eq!(bearer(&headers("abc.def")), Ok(Some("abc.def".into())));
        for bad in ["Basic YWxpY2U6cHc=", "Bearer", "Bearer   ", "", "Token a b"] {
            assert!(
                matches!(bearer(&headers(bad)), Err(ApiError::Unauthenticated(_))),
                "{bad}"
            );
        }
    }
}
