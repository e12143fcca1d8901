//! Mutual TLS in Ray Pods (KubeRay's `configureTLS`): the node's certificate Secret as a volume, the TLS
//! variables and mount in the Ray container and `wait-gcs-ready`, and, first of all init containers, one that
//! waits until cert-manager has added the Pod's IP to the certificate (the GCS dials workers by IP, and the
//! autoscaler reaches the head's GCS by IP).

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{
        Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodTemplateSpec, ResourceRequirements,
        SecretVolumeSource, Volume, VolumeMount,
    },
    apimachinery::pkg::api::resource::Quantity,
};
use kuberay_rules::tls::{self, MOUNT_PATH, Node, VOLUME_NAME, WAIT_FOR_IP_SAN_CONTAINER};

use super::{BuildError, ray_container};
use crate::consts::WAIT_GCS_READY_CONTAINER_NAME;

/// The shell loop of `wait-for-tls-ip-san`, as KubeRay writes it.
fn wait_script() -> String {
    format!(
        r#"CERT="{MOUNT_PATH}/tls.crt"
if [ -z "${{POD_IP}}" ]; then
  POD_IP=$(hostname -i 2>/dev/null | awk '{{print $1}}')
fi
if ! command -v openssl >/dev/null 2>&1; then
  echo "openssl not found; cannot verify IP SAN" >&2
  exit 1
fi
echo "Waiting for TLS cert to include IP SAN for ${{POD_IP}}..."
while true; do
  if openssl x509 -in "${{CERT}}" -noout -text 2>/dev/null | grep -qE "IP Address:${{POD_IP}}([^0-9.]|$)"; then
    echo "TLS cert now includes IP SAN for ${{POD_IP}}"
    exit 0
  fi
  echo "IP SAN for ${{POD_IP}} not yet in cert, retrying in 5s..."
  sleep 5
done"#
    )
}

fn wait_for_ip_san(ray: &Container) -> Container {
    let list = BTreeMap::from([
        ("cpu".to_string(), Quantity("50m".into())),
        ("memory".to_string(), Quantity("64Mi".into())),
    ]);
    Container {
        name: WAIT_FOR_IP_SAN_CONTAINER.into(),
        image: ray.image.clone(),
        image_pull_policy: ray.image_pull_policy.clone(),
        command: Some(vec!["sh".into(), "-c".into()]),
        args: Some(vec![wait_script()]),
        security_context: ray.security_context.clone(),
        env: Some(vec![EnvVar {
            name: "POD_IP".into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "status.podIP".into(),
                    api_version: None,
                }),
                ..Default::default()
            }),
        }]),
        volume_mounts: Some(vec![VolumeMount {
            name: VOLUME_NAME.into(),
            mount_path: MOUNT_PATH.into(),
            read_only: Some(true),
            ..Default::default()
        }]),
        resources: Some(ResourceRequirements {
            limits: Some(list.clone()),
            requests: Some(list),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Configures a Pod template of node type `node` of cluster `cluster` for TLS (idempotent).
pub fn configure(template: &mut PodTemplateSpec, cluster: &str, node: Node) -> Result<(), BuildError> {
    let ray = ray_container(template)?;
    tls::configure_container(ray);
    let wait = wait_for_ip_san(ray);
    let spec = template.spec.get_or_insert_with(Default::default);
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    if !volumes.iter().any(|v| v.name == VOLUME_NAME) {
        volumes.push(Volume {
            name: VOLUME_NAME.into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(tls::secret_name(cluster, node)),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    let init = spec.init_containers.get_or_insert_with(Vec::new);
    for container in init
        .iter_mut()
        .filter(|c| c.name == WAIT_GCS_READY_CONTAINER_NAME)
    {
        tls::configure_container(container);
    }
    if !init.iter().any(|c| c.name == WAIT_FOR_IP_SAN_CONTAINER) {
        init.insert(0, wait);
    }
    Ok(())
}

/// Takes `wait-for-tls-ip-san` out again: a Pod whose IP no certificate will ever name (the Redis clean-up
/// Job's) would wait forever.
pub fn remove_wait(init_containers: &mut Option<Vec<Container>>) {
    if let Some(init) = init_containers {
        init.retain(|c| c.name != WAIT_FOR_IP_SAN_CONTAINER);
    }
}
