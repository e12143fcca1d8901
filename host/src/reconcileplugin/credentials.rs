//! Registry credentials from a `kubernetes.io/dockerconfigjson` Secret (the format of `kubectl create secret
//! docker-registry` and of image pull Secrets): `{"auths": {"<registry>": {"auth": base64("user:pass")}}}`,
//! or `username`/`password` in place of `auth`. Hand-parsed: it is a few lines of serde, and the
//! docker-credential crates bring credential helpers an operator must not run.

use std::collections::BTreeMap;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// Why a Secret's credentials cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error(
        "the Secret {0} has no .dockerconfigjson key (it must be of type kubernetes.io/dockerconfigjson)"
    )]
    Missing(String),
    #[error("the Secret {secret}'s .dockerconfigjson is not a Docker config: {message}")]
    Malformed { secret: String, message: String },
    #[error("the Secret {secret} has no credentials for {registry}")]
    NoEntry { secret: String, registry: String },
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// The credentials for `registry` (`host[:port]`) in the `.dockerconfigjson` bytes of the Secret `secret`.
pub fn from_docker_config(
    secret: &str,
    json: &[u8],
    registry: &str,
) -> Result<RegistryAuth, CredentialsError> {
    let malformed = |message: String| CredentialsError::Malformed {
        secret: secret.into(),
        message,
    };
    let config: DockerConfig = serde_json::from_slice(json).map_err(|e| malformed(e.to_string()))?;
    let entry = config
        .auths
        .iter()
        .find(|(key, _)| registry_host(key) == registry)
        .map(|(_, entry)| entry)
        .ok_or_else(|| CredentialsError::NoEntry {
            secret: secret.into(),
            registry: registry.into(),
        })?;
    if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
        return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
    }
    let encoded = entry
        .auth
        .as_deref()
        .ok_or_else(|| malformed(format!("the entry for {registry} has neither auth nor username")))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| malformed(format!("the auth of {registry}: {e}")))?;
    let decoded =
        String::from_utf8(decoded).map_err(|_| malformed(format!("the auth of {registry} is not text")))?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or_else(|| malformed(format!("the auth of {registry} is not user:password")))?;
    Ok(RegistryAuth::Basic(user.into(), password.into()))
}

/// `host[:port]` of a Docker config key, which may be a URL (`https://index.docker.io/v1/`).
fn registry_host(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_found_by_registry_in_either_spelling() {
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cr:et");
        let json = format!(
            r#"{{"auths": {{"https://reg.example:5000/v1/": {{"auth": "{auth}"}}, "other:1": {{"username": "bob", "password": "pw"}}}}}}"#
        );
        let basic = |r: &str| match from_docker_config("s", json.as_bytes(), r) {
            Ok(RegistryAuth::Basic(u, p)) => (u, p),
            other => panic!("{r}: {other:?}"),
        };
        assert_eq!(basic("reg.example:5000"), ("alice".into(), "s3cr:et".into()));
        assert_eq!(basic("other:1"), ("bob".into(), "pw".into()));
        assert!(matches!(
            from_docker_config("s", json.as_bytes(), "reg.example"),
            Err(CredentialsError::NoEntry { .. })
        ));
        assert!(matches!(
            from_docker_config("s", br#"{"auths": 5}"#, "reg.example"),
            Err(CredentialsError::Malformed { .. })
        ));
        let bad = r#"{"auths": {"r:1": {"auth": "!!!"}}}"#;
        assert!(matches!(
            from_docker_config("s", bad.as_bytes(), "r:1"),
            Err(CredentialsError::Malformed { .. })
        ));
    }
}
