//! A Kubernetes client that acts as the caller: every request the server makes for a call carries
//! `Impersonate-User`, `Impersonate-Uid`, `Impersonate-Group` and `Impersonate-Extra-*` headers naming the
//! identity the API server itself authenticated, so the API server's RBAC (and audit log) sees the user,
//! not this server. The server's ServiceAccount needs `impersonate` on users, groups, serviceaccounts, uids
//! and userextras, and nothing else.
//!
//! All callers share the server's connection pool: the impersonating client is a thin layer over the
//! server's client that sets the headers (and first removes any it finds, so nothing upstream can add an
//! identity of its own choosing).

use std::{sync::Arc, task::Poll};

use futures::future::BoxFuture;
use http::{HeaderName, HeaderValue, Request, Response};
use kube::client::Body;

use crate::{
    context::Caller,
    error::{ApiError, ApiResult},
};

const USER: &str = "impersonate-user";
const UID: &str = "impersonate-uid";
const GROUP: &str = "impersonate-group";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// A client that impersonates `caller` over `server`'s connections.
pub(crate) fn client_as(server: &kube::Client, caller: &Caller) -> ApiResult<kube::Client> {
    let headers = headers_for(caller)?;
    let service = Impersonating {
        server: server.clone(),
        headers: Arc::new(headers),
    };
    Ok(kube::Client::new(service, server.default_namespace()))
}

fn value(text: &str, what: &str) -> ApiResult<HeaderValue> {
    HeaderValue::from_str(text).map_err(|_| {
        ApiError::Unauthenticated(format!("the authenticated {what} cannot be sent in a header"))
    })
}

fn headers_for(caller: &Caller) -> ApiResult<Vec<(HeaderName, HeaderValue)>> {
    let mut headers = vec![(
        HeaderName::from_static(USER),
        value(&caller.username, "user name")?,
    )];
    if let Some(uid) = &caller.uid {
        headers.push((HeaderName::from_static(UID), value(uid, "uid")?));
    }
    for group in &caller.groups {
        headers.push((HeaderName::from_static(GROUP), value(group, "group")?));
    }
    for (key, values) in &caller.extra {
        let name = HeaderName::try_from(format!("{EXTRA_PREFIX}{}", encode_extra_key(key)))
            .map_err(|_| ApiError::Unauthenticated(format!("the extra attribute {key:?} cannot be sent")))?;
        for v in values {
            headers.push((name.clone(), value(v, "extra attribute")?));
        }
    }
    Ok(headers)
}

/// Extra keys travel in header names, percent-encoded where a header name could not hold them (lower case,
/// as Kubernetes compares them after decoding).
fn encode_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.to_ascii_lowercase().bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[derive(Clone)]
struct Impersonating {
    server: kube::Client,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
}

impl tower::Service<Request<Body>> for Impersonating {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, kube::Error>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let map = request.headers_mut();
        let foreign: Vec<HeaderName> = map
            .keys()
            .filter(|name| name.as_str().starts_with("impersonate-"))
            .cloned()
            .collect();
        for name in foreign {
            map.remove(name);
        }
        for (name, value) in self.headers.iter() {
            map.append(name.clone(), value.clone());
        }
        let server = self.server.clone();
        Box::pin(async move { server.send(request).await })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn every_part_of_the_identity_becomes_a_header() {
        let caller = Caller {
            username: "system:serviceaccount:ns:sa".into(),
            uid: Some("u-1".into()),
            groups: vec!["system:authenticated".into(), "team-a".into()],
            extra: BTreeMap::from([(
                "authentication.kubernetes.io/pod-name".to_string(),
                vec!["p".to_string()],
            )]),
        };
        let headers = headers_for(&caller).unwrap();
        let pairs: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("impersonate-user", "system:serviceaccount:ns:sa"),
                ("impersonate-uid", "u-1"),
                ("impersonate-group", "system:authenticated"),
                ("impersonate-group", "team-a"),
                ("impersonate-extra-authentication.kubernetes.io%2fpod-name", "p"),
            ]
            .map(|(n, v)| (n.to_string(), v.to_string()))
        );
    }

    #[test]
    fn identities_that_cannot_travel_in_headers_are_refused() {
        let caller = Caller {
            username: "bad\nname".into(),
            ..Caller::default()
        };
        assert!(matches!(headers_for(&caller), Err(ApiError::Unauthenticated(_))));
    }
}
