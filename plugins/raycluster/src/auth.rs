//! `authOptions.mode: token`: Ray checks a bearer token on its dashboard, client and GCS endpoints. Every
//! Ray process of the cluster (and the autoscaler, and `wait-gcs-ready`) gets the token from a Secret,
//! the user's (`secretName`) or one the operator generates once; with `enableK8sTokenAuth`, Ray checks
//! Kubernetes ServiceAccount tokens instead and no Secret is needed.

use std::collections::BTreeMap;

use base64::{Engine, engine::general_purpose::STANDARD};
use k8s_openapi::{
    ByteString,
    api::core::v1::{PodSpec, Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::{AuthMode, RayCluster, constants::labels};
use kuberay_plugin_sdk::Host;
use kuberay_rules::{auth, consts::auth::TOKEN_SECRET_KEY, names};

use crate::{
    consts::WAIT_GCS_READY_CONTAINER_NAME,
    context::{Ctx, Failure},
};

pub use kuberay_rules::auth::{configure_container, enabled, secret_name};

/// The Ray container, the projected ServiceAccount token for Kubernetes token auth, and `wait-gcs-ready`.
pub fn configure_pod(spec: &mut PodSpec, cluster: &RayCluster, cluster_name: &str) {
    if let Some(ray) = spec.containers.first_mut() {
        configure_container(ray, cluster_name, &cluster.spec);
    }
    auth::add_token_volume(spec, &cluster.spec);
    for init in spec.init_containers.iter_mut().flatten() {
        if init.name == WAIT_GCS_READY_CONTAINER_NAME {
            configure_container(init, cluster_name, &cluster.spec);
        }
    }
}

/// How many random bytes a generated token carries (KubeRay's `generateRandomToken(32)`).
const TOKEN_BYTES: usize = 32;

/// A new token: 32 bytes from a cryptographically secure source, in standard base64 with padding (44
/// characters), as KubeRay makes it with Go's `crypto/rand`. In the component the bytes come from WASI's
/// `wasi:random/random` (the host's secure generator, not the insecure seed std's hash maps are keyed
/// with); in native tests, from the operating system.
fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(STANDARD.encode(bytes))
}

/// Creates the token Secret once when the operator must provide it. Like KubeRay, any `authOptions`
/// whose mode is not `disabled` gets one.
pub fn reconcile_secret<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    let spec = &ctx.cluster.spec;
    let Some(options) = &spec.auth_options else {
        return Ok(());
    };
    if options.mode == Some(AuthMode::Disabled)
        || auth::k8s_token_auth(spec)
        || auth::user_secret(spec).is_some()
    {
        return Ok(());
    }
    let name = names::check_name(&ctx.id.name);
    if ctx.get::<Secret>(&name)?.is_some() {
        return Ok(());
    }
    let token = random_token().map_err(|e| {
        Failure::error(format!(
            "no random bytes for the auth token of {}: {e}",
            ctx.key()
        ))
    })?;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(ctx.id.namespace.clone()),
            labels: Some(BTreeMap::from([(
                labels::RAY_CLUSTER.to_string(),
                ctx.id.name.clone(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            TOKEN_SECRET_KEY.to_string(),
            ByteString(token.into_bytes()),
        )])),
        ..Secret::default()
    };
    ctx.create(&secret)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn token() -> String {
        random_token().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_token_is_32_bytes_in_padded_standard_base64() {
        let token = token();
        assert_eq!(token.len(), 44);
        assert!(token.ends_with('='), "{token}");
        let bytes = STANDARD.decode(&token).unwrap_or_else(|e| panic!("{token}: {e}"));
        assert_eq!(bytes.len(), TOKEN_BYTES);
        assert_eq!(STANDARD.encode(&bytes), token);
    }

    #[test]
    fn tokens_do_not_repeat() {
        let tokens: BTreeSet<String> = (0..64).map(|_| token()).collect();
        assert_eq!(tokens.len(), 64);
    }

    #[test]
    fn token_bytes_are_not_constant() {
        // 32 random bytes all equal to each other has probability 2^-248: a source that returns zeros (or
        // any fixed byte) fails here.
        let bytes = STANDARD.decode(token()).unwrap_or_default();
        assert!(bytes.iter().any(|b| *b != bytes[0]), "{bytes:?}");
    }
}
