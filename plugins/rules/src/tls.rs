//! Mutual TLS between a cluster's Ray processes (`spec.tlsOptions.enabled` with KubeRay's `RayClusterMTLS`
//! gate): the names of the cert-manager objects and Secrets KubeRay v1.7 makes per cluster, the environment
//! and mount it gives Ray containers, and the rules a spec must keep so that the operator's TLS settings are
//! the only ones.

use k8s_openapi::api::core::v1::{Container, EnvVar, VolumeMount};
use kuberay_crds::RayClusterSpec;

use crate::env::exists;

/// Ray's switch for TLS on its gRPC channels.
pub const RAY_USE_TLS: &str = "RAY_USE_TLS";
/// The certificate a Ray process presents.
pub const RAY_TLS_SERVER_CERT: &str = "RAY_TLS_SERVER_CERT";
/// Its private key.
pub const RAY_TLS_SERVER_KEY: &str = "RAY_TLS_SERVER_KEY";
/// The CA that signs every certificate of the cluster.
pub const RAY_TLS_CA_CERT: &str = "RAY_TLS_CA_CERT";
/// The operator's TLS variables, which a TLS-enabled spec may not set itself.
pub const MANAGED_ENV: [&str; 4] = [
    RAY_USE_TLS,
    RAY_TLS_SERVER_CERT,
    RAY_TLS_SERVER_KEY,
    RAY_TLS_CA_CERT,
];
/// The volume of the node's certificate Secret.
pub const VOLUME_NAME: &str = "ray-tls";
/// Where that volume is mounted.
pub const MOUNT_PATH: &str = "/etc/ray/tls";
/// The init container that waits until the certificate names the Pod's IP.
pub const WAIT_FOR_IP_SAN_CONTAINER: &str = "wait-for-tls-ip-san";
/// The group and version of cert-manager's Issuer and Certificate.
pub const CERT_MANAGER_API_VERSION: &str = "cert-manager.io/v1";

/// Which of a cluster's certificates: the head's or the one all workers share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    Head,
    Worker,
}

impl Node {
    /// `head` or `worker`, as the names of its Certificate and Secret spell it.
    pub fn name(self) -> &'static str {
        match self {
            Node::Head => "head",
            Node::Worker => "worker",
        }
    }
}

/// Whether the cluster runs with mutual TLS: the `RayClusterMTLS` gate is on (`gate`) and the spec asks for it.
pub fn enabled(spec: &RayClusterSpec, gate: bool) -> bool {
    gate && spec.tls_options.as_ref().and_then(|t| t.enabled) == Some(true)
}

/// The Secret cert-manager writes the cluster's CA into: `<cluster>-ca-secret-<first 8 characters of the
/// uid>`, so that a cluster re-created under the same name never trusts its predecessor's CA.
pub fn ca_secret_name(cluster: &str, uid: &str) -> String {
    let suffix: String = uid.chars().take(8).collect();
    format!("{cluster}-ca-secret-{suffix}")
}

/// The Secret of a node's certificate (`ray-head-secret-<cluster>`, `ray-worker-secret-<cluster>`).
pub fn secret_name(cluster: &str, node: Node) -> String {
    format!("ray-{}-secret-{cluster}", node.name())
}

/// The Certificate of a node (`ray-head-cert-<cluster>`, `ray-worker-cert-<cluster>`).
pub fn certificate_name(cluster: &str, node: Node) -> String {
    format!("ray-{}-cert-{cluster}", node.name())
}

/// The self-signed Issuer that signs the CA.
pub fn self_signed_issuer_name(cluster: &str) -> String {
    format!("ray-selfsigned-issuer-{cluster}")
}

/// The CA's Certificate.
pub fn ca_certificate_name(cluster: &str) -> String {
    format!("ray-ca-certificate-{cluster}")
}

/// The Issuer that signs the node certificates with the CA.
pub fn ca_issuer_name(cluster: &str) -> String {
    format!("ray-ca-issuer-{cluster}")
}

fn tls_env() -> [EnvVar; 4] {
    let var = |name: &str, value: String| EnvVar {
        name: name.to_string(),
        value: Some(value),
        value_from: None,
    };
    [
        var(RAY_USE_TLS, "1".into()),
        var(RAY_TLS_SERVER_CERT, format!("{MOUNT_PATH}/tls.crt")),
        var(RAY_TLS_SERVER_KEY, format!("{MOUNT_PATH}/tls.key")),
        var(RAY_TLS_CA_CERT, format!("{MOUNT_PATH}/ca.crt")),
    ]
}

/// Gives `container` the TLS variables it lacks and the certificate mount, unless a mount of that name or
/// path is there already (KubeRay's `SetContainerTLSConfig`; idempotent).
pub fn configure_container(container: &mut Container) {
    let env = container.env.get_or_insert_with(Vec::new);
    for var in tls_env() {
        if !env.iter().any(|e| e.name == var.name) {
            env.push(var);
        }
    }
    let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    if !mounts
        .iter()
        .any(|m| m.name == VOLUME_NAME || m.mount_path == MOUNT_PATH)
    {
        mounts.push(VolumeMount {
            name: VOLUME_NAME.into(),
            mount_path: MOUNT_PATH.into(),
            read_only: Some(true),
            ..Default::default()
        });
    }
}

fn conflicting_mount<'a>(
    mounts: impl IntoIterator<Item = &'a VolumeMount>,
    location: &str,
) -> Result<(), String> {
    for mount in mounts {
        if mount.name == VOLUME_NAME {
            return Err(format!(
                "cannot use volume mount named {VOLUME_NAME:?} in {location} when tlsOptions is set - the \
                 operator manages TLS configuration automatically"
            ));
        }
        if mount.mount_path == MOUNT_PATH {
            return Err(format!(
                "cannot use volume mount at path {MOUNT_PATH:?} in {location} when tlsOptions is set - the \
                 operator manages TLS configuration automatically"
            ));
        }
    }
    Ok(())
}

fn ray_container_free(container: Option<&Container>, location: &str) -> Result<(), String> {
    let Some(container) = container else {
        return Ok(());
    };
    for name in MANAGED_ENV {
        if exists(container, name) {
            return Err(format!(
                "cannot set {name} environment variable in {location} when tlsOptions is set - the operator \
                 manages TLS configuration automatically"
            ));
        }
    }
    conflicting_mount(container.volume_mounts.iter().flatten(), location)
}

/// KubeRay's `validateTLSOptions`: with TLS on, no Ray container (nor the autoscaler's options) sets the
/// operator's TLS variables or mounts something at its certificate volume's name or path.
pub fn validate(spec: &RayClusterSpec, gate: bool) -> Result<(), String> {
    if !enabled(spec, gate) {
        return Ok(());
    }
    let first = |t: &k8s_openapi::api::core::v1::PodTemplateSpec| {
        t.spec.as_ref().and_then(|s| s.containers.first()).cloned()
    };
    ray_container_free(first(&spec.head_group_spec.template).as_ref(), "head Pod")?;
    for group in spec.worker_group_specs.iter().flatten() {
        let location = format!("worker group {:?}", group.group_name);
        ray_container_free(first(&group.template).as_ref(), &location)?;
    }
    if let Some(options) = &spec.autoscaler_options {
        for name in MANAGED_ENV {
            if options.env.iter().flatten().any(|e| e.name == name) {
                return Err(format!(
                    "cannot set {name} environment variable in autoscalerOptions.env when tlsOptions is set - \
                     the operator manages TLS configuration for the autoscaler automatically"
                ));
            }
        }
        conflicting_mount(
            options.volume_mounts.iter().flatten(),
            "autoscalerOptions.volumeMounts",
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuberay_crds::TlsOptions;
    use serde_json::json;

    fn spec(value: serde_json::Value) -> RayClusterSpec {
        serde_json::from_value(value).unwrap()
    }

    fn tls_spec(head_env: serde_json::Value, worker_mounts: serde_json::Value) -> RayClusterSpec {
        spec(json!({
            "tlsOptions": {"enabled": true},
            "headGroupSpec": {"template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray:2.55.1", "env": head_env}]}}},
            "workerGroupSpecs": [{"groupName": "small-group", "template": {"spec": {"containers": [
                {"name": "ray-worker", "image": "rayproject/ray:2.55.1", "volumeMounts": worker_mounts}]}}}],
        }))
    }

    const ON: bool = true;

    #[test]
    fn names_are_kuberays() {
        assert_eq!(
            ca_secret_name("raycluster-mtls", "0f3a9c1e-22aa-4b1c-9d1e-123456789abc"),
            "raycluster-mtls-ca-secret-0f3a9c1e"
        );
        assert_eq!(secret_name("c", Node::Head), "ray-head-secret-c");
        assert_eq!(secret_name("c", Node::Worker), "ray-worker-secret-c");
        assert_eq!(certificate_name("c", Node::Head), "ray-head-cert-c");
        assert_eq!(certificate_name("c", Node::Worker), "ray-worker-cert-c");
        assert_eq!(self_signed_issuer_name("c"), "ray-selfsigned-issuer-c");
        assert_eq!(ca_certificate_name("c"), "ray-ca-certificate-c");
        assert_eq!(ca_issuer_name("c"), "ray-ca-issuer-c");
    }

    #[test]
    fn enabled_needs_the_gate_and_enabled_true() {
        let mut s = tls_spec(json!([]), json!([]));
        assert!(enabled(&s, ON));
        assert!(!enabled(&s, false));
        s.tls_options = Some(TlsOptions { enabled: None });
        assert!(!enabled(&s, ON));
        s.tls_options = Some(TlsOptions { enabled: Some(false) });
        assert!(!enabled(&s, ON));
    }

    #[test]
    fn a_spec_that_sets_the_operators_tls_settings_is_refused_with_kuberays_messages() {
        let head_env = tls_spec(json!([{"name": "RAY_TLS_CA_CERT", "value": "/x"}]), json!([]));
        assert_eq!(
            validate(&head_env, ON).unwrap_err(),
            "cannot set RAY_TLS_CA_CERT environment variable in head Pod when tlsOptions is set - the operator \
             manages TLS configuration automatically"
        );
        assert!(validate(&head_env, false).is_ok());
        let worker_mount = tls_spec(json!([]), json!([{"name": "certs", "mountPath": "/etc/ray/tls"}]));
        assert_eq!(
            validate(&worker_mount, ON).unwrap_err(),
            "cannot use volume mount at path \"/etc/ray/tls\" in worker group \"small-group\" when tlsOptions \
             is set - the operator manages TLS configuration automatically"
        );
        let mut autoscaler = tls_spec(json!([]), json!([]));
        autoscaler.autoscaler_options =
            serde_json::from_value(json!({"volumeMounts": [{"name": "ray-tls", "mountPath": "/t"}]}))
                .unwrap();
        assert_eq!(
            validate(&autoscaler, ON).unwrap_err(),
            "cannot use volume mount named \"ray-tls\" in autoscalerOptions.volumeMounts when tlsOptions is set \
             - the operator manages TLS configuration automatically"
        );
        assert!(validate(&tls_spec(json!([]), json!([])), ON).is_ok());
    }

    #[test]
    fn a_container_gets_the_variables_it_lacks_and_one_mount() {
        let mut container: Container = serde_json::from_value(json!({
            "name": "ray-head",
            "env": [{"name": "RAY_USE_TLS", "value": "0"}],
        }))
        .unwrap();
        configure_container(&mut container);
        configure_container(&mut container);
        let env: Vec<(String, String)> = container
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            env,
            [
                ("RAY_USE_TLS".to_string(), "0".to_string()),
                ("RAY_TLS_SERVER_CERT".into(), "/etc/ray/tls/tls.crt".into()),
                ("RAY_TLS_SERVER_KEY".into(), "/etc/ray/tls/tls.key".into()),
                ("RAY_TLS_CA_CERT".into(), "/etc/ray/tls/ca.crt".into()),
            ]
        );
        assert_eq!(
            serde_json::to_value(&container.volume_mounts).unwrap(),
            json!([{"name": "ray-tls", "mountPath": "/etc/ray/tls", "readOnly": true}])
        );
    }
}
