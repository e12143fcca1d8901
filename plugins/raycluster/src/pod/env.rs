//! The environment KubeRay gives the Ray container: where the cluster and its head are, the generated
//! `ray start` command, and usage-stats tags. Most variables are added only when the user has not set
//! them; the identity variables (`RAY_CLUSTER_NAME`, `RAY_NODE_TYPE_NAME`, ...) always are.

use k8s_openapi::api::core::v1::{Container, EnvVar};
use kuberay_crds::constants::labels;
use kuberay_rules::names;

use crate::{
    cluster::Creator,
    consts::{KUBERAY_VERSION, LOCAL_HOST, env},
    ray_start::NodeType,
};

pub use kuberay_rules::env::{exists, field, push, push_if_absent, value};

/// A variable read from one of the Pod's labels (downward API).
pub fn label_field(name: &str, label: &str) -> EnvVar {
    field(name, &format!("metadata.labels['{label}']"))
}

/// Every init container learns the head's address (the worker's `wait-gcs-ready` polls it).
pub fn set_init_container_env(container: &mut Container, fqdn: &str) {
    push(container, value(env::FQ_RAY_IP, fqdn));
    push(container, value(env::RAY_IP, names::ray_ip_from_fqdn(fqdn)));
}

/// The Ray container's variables, in KubeRay's order.
pub fn set_ray_container_env(
    container: &mut Container,
    node: NodeType,
    fqdn: &str,
    head_port: &str,
    ray_start_cmd: &str,
    creator: Creator,
) {
    let ip = match node {
        NodeType::Head => LOCAL_HOST,
        NodeType::Worker => {
            push(container, value(env::FQ_RAY_IP, fqdn));
            push(container, value(env::RAY_IP, names::ray_ip_from_fqdn(fqdn)));
            fqdn
        }
    };
    push(container, label_field(env::RAY_CLUSTER_NAME, labels::RAY_CLUSTER));
    push(container, field(env::RAY_CLUSTER_NAMESPACE, "metadata.namespace"));
    push(container, field(env::RAY_CLOUD_INSTANCE_ID, "metadata.name"));
    push(
        container,
        label_field(env::RAY_NODE_TYPE_NAME, labels::RAY_NODE_GROUP),
    );
    push(container, value(env::KUBERAY_GEN_RAY_START_CMD, ray_start_cmd));
    push_if_absent(container, value(env::RAY_PORT, head_port));
    if creator == Creator::RayService {
        push_if_absent(
            container,
            value(env::RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO, "0"),
        );
        push_if_absent(container, value(env::RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS, "5"));
        push_if_absent(container, value(env::RAY_SERVE_KV_TIMEOUT_S, "5"));
    }
    push_if_absent(container, value(env::RAY_ADDRESS, &format!("{ip}:{head_port}")));
    push_if_absent(container, value(env::RAY_USAGE_STATS_KUBERAY_IN_USE, "1"));
    if node == NodeType::Head {
        let tags = format!(
            "kuberay_version={KUBERAY_VERSION};kuberay_crd={}",
            creator.as_str()
        );
        push(container, value(env::RAY_USAGE_STATS_EXTRA_TAGS, &tags));
    }
    push_if_absent(container, value(env::RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE, "1"));
}
