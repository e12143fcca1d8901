//! Worker Pods (KubeRay's `DefaultWorkerPodTemplate` + `BuildPod`): the group's template with the worker
//! labels, the replica indices of multi-host groups, an init container that waits for the GCS, and the
//! address of the head in `ray start`.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, Pod, ResourceRequirements},
    apimachinery::pkg::api::resource::Quantity,
};
use kuberay_crds::{
    RayCluster, WorkerGroupSpec,
    constants::{annotations, labels as label_keys, node_type},
};
use kuberay_rules::{labels, names};

use super::{
    BuildError, Finish, add_metrics_port, add_pod_defaults, finish, gcs_ft, history, meta_mut, ray_container,
    shell_command, tls,
};
use crate::{
    auth,
    cluster::{self, Creator, Identity},
    consts::WAIT_GCS_READY_CONTAINER_NAME,
    ray_start::{self, NodeType},
};
use kuberay_rules::operator_env::OperatorEnv;

/// Where a worker sits in its group: the replica index, and for multi-host groups the replica's name and
/// the host's index within it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub replica_index: usize,
    pub replica_name: Option<String>,
    pub host_index: usize,
}

/// The shell loop of `wait-gcs-ready`, as KubeRay writes it (tabs included): quiet for two minutes, then
/// verbose so that a stuck worker explains itself in its logs.
fn wait_gcs_script(fqdn: &str, port: &str) -> String {
    let t = "\t\t\t\t\t";
    format!(
        "\n{t}SECONDS=0\n{t}while true; do\n{t}\tif (( SECONDS <= 120 )); then\n\
         {t}\t\tif ray health-check --address {fqdn}:{port} > /dev/null 2>&1; then\n\
         {t}\t\t\techo \"GCS is ready.\"\n{t}\t\t\tbreak\n{t}\t\tfi\n\
         {t}\t\techo \"$SECONDS seconds elapsed: Waiting for GCS to be ready.\"\n{t}\telse\n\
         {t}\t\tif ray health-check --address {fqdn}:{port}; then\n\
         {t}\t\t\techo \"GCS is ready. Any error messages above can be safely ignored.\"\n{t}\t\t\tbreak\n{t}\t\tfi\n\
         {t}\t\techo \"$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to \
         the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html.\"\n{t}\tfi\n\
         {t}\tsleep 5\n{t}done\n\t\t\t\t"
    )
}

fn fixed_resources(cpu: &str, memory: &str) -> ResourceRequirements {
    let list = BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.to_string())),
        ("memory".to_string(), Quantity(memory.to_string())),
    ]);
    ResourceRequirements {
        limits: Some(list.clone()),
        requests: Some(list),
        ..ResourceRequirements::default()
    }
}

/// `wait-gcs-ready`: the Ray image polling the head until the GCS answers, with the Ray container's
/// environment and mounts (TLS settings live there) and small fixed resources.
fn wait_gcs_ready(ray: &Container, fqdn: &str, port: &str, env: &OperatorEnv) -> Container {
    Container {
        name: WAIT_GCS_READY_CONTAINER_NAME.into(),
        image: ray.image.clone(),
        image_pull_policy: ray.image_pull_policy.clone(),
        command: Some(shell_command(env)),
        args: Some(vec![wait_gcs_script(fqdn, port)]),
        security_context: ray.security_context.clone(),
        env: ray.env.clone(),
        volume_mounts: ray.volume_mounts.clone(),
        resources: Some(fixed_resources("200m", "256Mi")),
        ..Container::default()
    }
}

pub fn build(
    cluster: &RayCluster,
    id: &Identity,
    group: &WorkerGroupSpec,
    placement: &Placement,
) -> Result<Pod, BuildError> {
    let spec = &cluster.spec;
    let mut template = group.template.clone();
    let meta = meta_mut(&mut template);
    meta.generate_name = Some(names::worker_pod_generate_name(&id.name, &group.group_name));
    meta.namespace = Some(id.namespace.clone());
    meta.name = None;
    let fqdn = names::head_fqdn(&id.name, &id.namespace, spec, &id.cluster_domain);
    let head_port = cluster::head_port(spec);

    // KubeRay's ENABLE_INIT_CONTAINER_INJECTION=false leaves the wait for the GCS to the user's template.
    if id.env.init_container_injection {
        let init = wait_gcs_ready(ray_container(&mut template)?, &fqdn, &head_port, &id.env);
        template
            .spec
            .get_or_insert_with(Default::default)
            .init_containers
            .get_or_insert_with(Vec::new)
            .push(init);
    }

    let mut params = group.ray_start_params.clone().unwrap_or_default();
    ray_start::apply_group_resources(&mut params, group.resources.as_ref());
    ray_start::apply_group_labels(&mut params, group.labels.as_ref());
    let mut pod_labels = labels::pod_labels(
        &id.name,
        node_type::WORKER,
        &group.group_name,
        group.template.metadata.as_ref().and_then(|m| m.labels.as_ref()),
        group.labels.as_ref(),
    );
    pod_labels.insert(
        label_keys::RAY_WORKER_GROUP_REPLICA_INDEX.into(),
        placement.replica_index.to_string(),
    );
    if let Some(replica_name) = &placement.replica_name {
        pod_labels.insert(
            label_keys::RAY_WORKER_GROUP_REPLICA_NAME.into(),
            replica_name.clone(),
        );
        pod_labels.insert(
            label_keys::RAY_REPLICA_HOST_INDEX.into(),
            placement.host_index.to_string(),
        );
    }
    meta_mut(&mut template).labels = Some(pod_labels);
    ray_start::set_missing(&mut params, NodeType::Worker, &head_port, &fqdn);
    if cluster::overwrite_container_cmd(cluster) {
        meta_mut(&mut template)
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(annotations::RAY_OVERWRITE_CONTAINER_CMD.into(), "true".into());
    }
    gcs_ft::configure(&mut template, cluster, id, NodeType::Worker, &mut params)?;
    add_metrics_port(ray_container(&mut template)?);
    let autoscaling = cluster::autoscaling(spec);
    if autoscaling && cluster::autoscaler_v2(spec) {
        template.spec.get_or_insert_with(Default::default).restart_policy = Some("Never".into());
    }
    if auth::enabled(spec) {
        auth::configure_pod(
            template.spec.get_or_insert_with(Default::default),
            cluster,
            &id.name,
        );
    }
    if kuberay_rules::tls::enabled(spec, id.gates.mtls) {
        tls::configure(&mut template, &id.name, kuberay_rules::tls::Node::Worker)?;
    }
    if let Some(options) = history::collector_options(cluster, id) {
        let collector = history::collector(cluster, id, options, NodeType::Worker, &fqdn);
        template
            .spec
            .get_or_insert_with(Default::default)
            .containers
            .push(collector);
    }
    add_pod_defaults(
        &mut template,
        &id.env.pod_defaults.worker_sidecar_containers,
        &id.env,
    );
    finish(
        template,
        Finish {
            node: NodeType::Worker,
            params: &mut params,
            head_port: &head_port,
            autoscaling,
            creator: Creator::of(cluster),
            fqdn: &fqdn,
            ray_version: spec.ray_version.as_deref().unwrap_or_default(),
            env: &id.env,
            history_server: id.gates.history_server,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_gcs_script_is_kuberays_byte_for_byte() {
        let expected = "\n\t\t\t\t\tSECONDS=0\n\t\t\t\t\twhile true; do\n\t\t\t\t\t\tif (( SECONDS <= 120 )); then\n\t\t\t\t\t\t\tif ray health-check --address FQDN:PORT > /dev/null 2>&1; then\n\t\t\t\t\t\t\t\techo \"GCS is ready.\"\n\t\t\t\t\t\t\t\tbreak\n\t\t\t\t\t\t\tfi\n\t\t\t\t\t\t\techo \"$SECONDS seconds elapsed: Waiting for GCS to be ready.\"\n\t\t\t\t\t\telse\n\t\t\t\t\t\t\tif ray health-check --address FQDN:PORT; then\n\t\t\t\t\t\t\t\techo \"GCS is ready. Any error messages above can be safely ignored.\"\n\t\t\t\t\t\t\t\tbreak\n\t\t\t\t\t\t\tfi\n\t\t\t\t\t\t\techo \"$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html.\"\n\t\t\t\t\t\tfi\n\t\t\t\t\t\tsleep 5\n\t\t\t\t\tdone\n\t\t\t\t";
        assert_eq!(wait_gcs_script("FQDN", "PORT"), expected);
    }
}
