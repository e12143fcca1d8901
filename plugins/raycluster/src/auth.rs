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
    api::core::v1::{
        Container, EnvVar, EnvVarSource, PodSpec, ProjectedVolumeSource, Secret, SecretKeySelector,
        ServiceAccountTokenProjection, Volume, VolumeMount, VolumeProjection,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::{AuthMode, RayCluster, RayClusterSpec, constants::labels};
use kuberay_plugin_sdk::Host;

use crate::{
    consts::{WAIT_GCS_READY_CONTAINER_NAME, env as env_names},
    context::{Ctx, Failure},
    pod::env,
};
use kuberay_rules::names;

const TOKEN_KEY: &str = "auth_token";
const TOKEN_VOLUME: &str = "ray-token";
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/ray.io/serviceaccount";

/// Token authentication is on (KubeRay's `IsAuthEnabled`: the mode must say `token` explicitly).
pub fn enabled(spec: &RayClusterSpec) -> bool {
    spec.auth_options.as_ref().and_then(|a| a.mode) == Some(AuthMode::Token)
}

fn k8s_auth(spec: &RayClusterSpec) -> bool {
    spec.auth_options.as_ref().and_then(|a| a.enable_k8s_token_auth) == Some(true)
}

fn user_secret(spec: &RayClusterSpec) -> Option<&str> {
    spec.auth_options
        .as_ref()
        .and_then(|a| a.secret_name.as_deref())
        .filter(|s| !s.is_empty())
}

/// The Secret holding the token: the user's, else `<cluster>`.
pub fn secret_name(cluster: &RayCluster, cluster_name: &str) -> String {
    user_secret(&cluster.spec).map_or_else(|| names::check_name(cluster_name), str::to_string)
}

/// Adds the token settings the container does not have yet.
pub fn configure_container(container: &mut Container, cluster: &RayCluster, cluster_name: &str) {
    env::push_if_absent(container, env::value(env_names::RAY_AUTH_MODE, "token"));
    if k8s_auth(&cluster.spec) {
        env::push_if_absent(
            container,
            env::value(env_names::RAY_ENABLE_K8S_TOKEN_AUTH, "true"),
        );
        let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
        if !mounts.iter().any(|m| m.name == TOKEN_VOLUME) {
            mounts.push(VolumeMount {
                name: TOKEN_VOLUME.into(),
                mount_path: TOKEN_MOUNT_PATH.into(),
                read_only: Some(true),
                ..VolumeMount::default()
            });
        }
    } else {
        env::push_if_absent(
            container,
            EnvVar {
                name: env_names::RAY_AUTH_TOKEN.into(),
                value: None,
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: secret_name(cluster, cluster_name),
                        key: TOKEN_KEY.into(),
                        optional: None,
                    }),
                    ..EnvVarSource::default()
                }),
            },
        );
    }
}

/// The Ray container, the projected ServiceAccount token for Kubernetes token auth, and `wait-gcs-ready`.
pub fn configure_pod(spec: &mut PodSpec, cluster: &RayCluster, cluster_name: &str) {
    if let Some(ray) = spec.containers.first_mut() {
        configure_container(ray, cluster, cluster_name);
    }
    if k8s_auth(&cluster.spec) {
        let volumes = spec.volumes.get_or_insert_with(Vec::new);
        if !volumes.iter().any(|v| v.name == TOKEN_VOLUME) {
            volumes.push(Volume {
                name: TOKEN_VOLUME.into(),
                projected: Some(ProjectedVolumeSource {
                    sources: Some(vec![VolumeProjection {
                        service_account_token: Some(ServiceAccountTokenProjection {
                            path: "token".into(),
                            ..ServiceAccountTokenProjection::default()
                        }),
                        ..VolumeProjection::default()
                    }]),
                    ..ProjectedVolumeSource::default()
                }),
                ..Volume::default()
            });
        }
    }
    for init in spec.init_containers.iter_mut().flatten() {
        if init.name == WAIT_GCS_READY_CONTAINER_NAME {
            configure_container(init, cluster, cluster_name);
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
    if options.mode == Some(AuthMode::Disabled) || k8s_auth(spec) || user_secret(spec).is_some() {
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
            TOKEN_KEY.to_string(),
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
