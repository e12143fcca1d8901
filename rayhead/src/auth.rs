//! Ray token authentication: a RayCluster with `authOptions.mode: token` keeps its token in a Secret (the one
//! `authOptions.secretName` names, else `<cluster>`, key `auth_token`). It is read through the caller's
//! [`ObjectLookup`] (the operator with its own credentials, so plugins never see it; a server acting for a
//! user with the user's) and sent as `x-ray-authorization`, which Ray accepts and which, unlike
//! `Authorization`, survives the API server's proxy.
//!
//! The Secret must be the cluster's: controlled by it (the one KubeRay or our plugin generates), or, when
//! `secretName` names the user's own Secret, one no object controls. A Secret another object controls (another
//! cluster's generated token) is refused, so a cluster cannot borrow another's token.

use kuberay_plugin_sdk::{HostError, Kind, ownership::controller_uid};
use serde_json::Value;

use crate::{
    ObjectLookup,
    identity::{Failure, require_controlled},
};

pub(crate) const HEADER: &str = "x-ray-authorization";

/// The header value for `cluster`, if it uses token authentication.
pub(crate) async fn header(
    lookup: &impl ObjectLookup,
    namespace: &str,
    cluster: &Value,
) -> Result<Option<String>, Failure> {
    if cluster.pointer("/spec/authOptions/mode").and_then(Value::as_str) != Some("token") {
        return Ok(None);
    }
    let named = cluster
        .pointer("/spec/authOptions/secretName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let name = named
        .or_else(|| cluster.pointer("/metadata/name").and_then(Value::as_str))
        .unwrap_or_default();
    let secret = lookup
        .get(&Kind::new("", "v1", "Secret"), namespace, name)
        .await?
        .ok_or_else(|| HostError::Unavailable(format!("the auth token Secret {name} does not exist yet")))?;
    let users_own = named.is_some() && controller_uid(&secret).is_none();
    if !users_own {
        require_controlled(&secret, cluster, "the auth token Secret")?;
    }
    let encoded = secret
        .pointer("/data/auth_token")
        .and_then(Value::as_str)
        .ok_or_else(|| HostError::Unavailable(format!("Secret {name} has no auth_token")))?;
    let token = decode_base64(encoded)
        .ok_or_else(|| HostError::Unavailable(format!("Secret {name} holds an invalid auth_token")))?;
    Ok(Some(format!("Bearer {}", token.trim())))
}

/// Standard base64, as Kubernetes encodes Secret data.
fn decode_base64(text: &str) -> Option<String> {
    let mut bits: u32 = 0;
    let mut count = 0;
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(value);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push(((bits >> count) & 0xff) as u8);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::decode_base64;

    #[test]
    fn decodes_secret_data() {
        assert_eq!(decode_base64("c2VjcmV0LXRva2Vu").as_deref(), Some("secret-token"));
        assert_eq!(decode_base64("YQ==").as_deref(), Some("a"));
        assert_eq!(decode_base64("not base64!"), None);
    }
}
