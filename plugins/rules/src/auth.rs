//! Token authentication (`authOptions.mode: token`) as every container that talks to Ray sees it: Ray
//! processes, the autoscaler, `wait-gcs-ready` and RayJob submitters get `RAY_AUTH_MODE=token` and either
//! the cluster's token from its auth Secret or, with `enableK8sTokenAuth`, a projected ServiceAccount token
//! that Ray checks against Kubernetes.

use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, PodSpec, ProjectedVolumeSource, SecretKeySelector,
    ServiceAccountTokenProjection, Volume, VolumeMount, VolumeProjection,
};
use kuberay_crds::{AuthMode, RayClusterSpec};

use crate::{
    consts::auth::{RAY_AUTH_MODE, RAY_AUTH_TOKEN, TOKEN_SECRET_KEY},
    env::{push_if_absent, value},
    names,
};

/// The projected ServiceAccount token volume for Kubernetes token authentication.
pub const TOKEN_VOLUME: &str = "ray-token";
/// Where that volume is mounted.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/ray.io/serviceaccount";
/// The variable that tells Ray to accept Kubernetes ServiceAccount tokens.
pub const RAY_ENABLE_K8S_TOKEN_AUTH: &str = "RAY_ENABLE_K8S_TOKEN_AUTH";

/// Token authentication is on (KubeRay's `IsAuthEnabled`: the mode must say `token` explicitly).
pub fn enabled(spec: &RayClusterSpec) -> bool {
    spec.auth_options.as_ref().and_then(|a| a.mode) == Some(AuthMode::Token)
}

/// Ray checks Kubernetes ServiceAccount tokens instead of the cluster's own token.
pub fn k8s_token_auth(spec: &RayClusterSpec) -> bool {
    spec.auth_options.as_ref().and_then(|a| a.enable_k8s_token_auth) == Some(true)
}

/// The user's token Secret (`authOptions.secretName`), if given and not empty.
pub fn user_secret(spec: &RayClusterSpec) -> Option<&str> {
    spec.auth_options
        .as_ref()
        .and_then(|a| a.secret_name.as_deref())
        .filter(|s| !s.is_empty())
}

/// The Secret holding a cluster's token: the user's, else the one the operator generates, named after the
/// cluster (`CheckName`).
pub fn secret_name(cluster: &str, spec: &RayClusterSpec) -> String {
    user_secret(spec).map_or_else(|| names::check_name(cluster), str::to_string)
}

/// Adds the token settings `container` does not have yet: `RAY_AUTH_MODE`, then either the Kubernetes
/// token switch and mount or `RAY_AUTH_TOKEN` from the cluster's Secret. Variables the user set win.
pub fn configure_container(container: &mut Container, cluster: &str, spec: &RayClusterSpec) {
    push_if_absent(container, value(RAY_AUTH_MODE, "token"));
    if k8s_token_auth(spec) {
        push_if_absent(container, value(RAY_ENABLE_K8S_TOKEN_AUTH, "true"));
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
        push_if_absent(container, secret_token(&secret_name(cluster, spec)));
    }
}

/// Adds the projected ServiceAccount token volume the mount of [`configure_container`] needs, when the
/// cluster uses Kubernetes token authentication and the Pod does not have it yet.
pub fn add_token_volume(pod: &mut PodSpec, spec: &RayClusterSpec) {
    if !k8s_token_auth(spec) {
        return;
    }
    let volumes = pod.volumes.get_or_insert_with(Vec::new);
    if volumes.iter().any(|v| v.name == TOKEN_VOLUME) {
        return;
    }
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

/// `RAY_AUTH_TOKEN` read from `secret`.
fn secret_token(secret: &str) -> EnvVar {
    EnvVar {
        name: RAY_AUTH_TOKEN.into(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: TOKEN_SECRET_KEY.into(),
                optional: None,
            }),
            ..EnvVarSource::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(auth: serde_json::Value) -> RayClusterSpec {
        serde_json::from_value(json!({"authOptions": auth, "headGroupSpec": {"template": {}}}))
            .unwrap_or_default()
    }

    fn env<'a>(c: &'a Container, name: &str) -> Option<&'a EnvVar> {
        c.env.iter().flatten().find(|v| v.name == name)
    }

    #[test]
    fn the_token_comes_from_the_generated_or_the_users_secret() {
        let generated = spec(json!({"mode": "token"}));
        assert!(enabled(&generated));
        let mut c = Container::default();
        configure_container(&mut c, "1demo", &generated);
        assert_eq!(
            env(&c, RAY_AUTH_MODE).and_then(|v| v.value.as_deref()),
            Some("token")
        );
        let from = env(&c, RAY_AUTH_TOKEN)
            .and_then(|v| v.value_from.as_ref())
            .and_then(|f| f.secret_key_ref.as_ref())
            .map(|s| (s.name.as_str(), s.key.as_str()));
        assert_eq!(from, Some(("rdemo", "auth_token")));
        let users = spec(json!({"mode": "token", "secretName": "mine"}));
        assert_eq!(secret_name("demo", &users), "mine");
        assert!(!enabled(&spec(json!({"mode": "disabled"}))));
    }

    #[test]
    fn kubernetes_tokens_are_mounted_once_and_user_variables_win() {
        let k8s = spec(json!({"mode": "token", "enableK8sTokenAuth": true}));
        let mut c = Container {
            env: Some(vec![value(RAY_AUTH_MODE, "mine")]),
            ..Container::default()
        };
        configure_container(&mut c, "demo", &k8s);
        configure_container(&mut c, "demo", &k8s);
        assert_eq!(
            env(&c, RAY_AUTH_MODE).and_then(|v| v.value.as_deref()),
            Some("mine")
        );
        assert!(env(&c, RAY_AUTH_TOKEN).is_none());
        assert_eq!(c.volume_mounts.as_ref().map(Vec::len), Some(1));
        let mut pod = PodSpec::default();
        add_token_volume(&mut pod, &k8s);
        add_token_volume(&mut pod, &k8s);
        assert_eq!(pod.volumes.as_ref().map(Vec::len), Some(1));
        let mut plain = PodSpec::default();
        add_token_volume(&mut plain, &spec(json!({"mode": "token"})));
        assert!(plain.volumes.is_none());
    }
}
