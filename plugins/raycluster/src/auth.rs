//! `authOptions.mode: token`: Ray checks a bearer token on its dashboard, client and GCS endpoints. Every
//! Ray process of the cluster (and the autoscaler, and `wait-gcs-ready`) gets the token from a Secret,
//! the user's (`secretName`) or one the operator generates once; with `enableK8sTokenAuth`, Ray checks
//! Kubernetes ServiceAccount tokens instead and no Secret is needed.

use std::{
    collections::BTreeMap,
    hash::{BuildHasher, Hasher},
};

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

/// 32 random bytes, base64: from the standard library's randomly keyed SipHash, the only source of
/// randomness a WASI component has without extra imports (its keys come from the host's random source).
fn random_token() -> String {
    let state = std::collections::hash_map::RandomState::new();
    let mut bytes = Vec::with_capacity(32);
    for i in 0u64..4 {
        let mut hasher = state.build_hasher();
        hasher.write_u64(i);
        bytes.extend_from_slice(&hasher.finish().to_le_bytes());
    }
    base64(&bytes)
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                let index = usize::try_from((n >> (18 - 6 * i)) & 63).unwrap_or(0);
                out.push(char::from(ALPHABET[index]));
            } else {
                out.push('=');
            }
        }
    }
    out
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
            ByteString(random_token().into_bytes()),
        )])),
        ..Secret::default()
    };
    ctx.create(&secret)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn tokens_are_random() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 44);
        assert_ne!(a, b);
    }
}
