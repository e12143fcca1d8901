//! The head Pod (KubeRay's `DefaultHeadPodTemplate` + `BuildPod`): the user's template with the head's
//! labels and start parameters, the autoscaler sidecar when autoscaling is on, and GCS fault tolerance.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kuberay_crds::{
    RayCluster,
    constants::{HEAD_GROUP_NAME, annotations, node_type},
};
use kuberay_rules::{labels, names};

use super::{
    BuildError, Finish, add_metrics_port, add_pod_defaults, autoscaler as pod_autoscaler, env, finish,
    gcs_ft, history, meta_mut, ray_container, tls,
};
use crate::{
    auth, autoscaler,
    cluster::{self, Creator, Identity},
    consts::{KUBERAY_VERSION, env as env_names},
    ray_start::{self, NodeType},
};

/// Builds the head Pod. `spec_hash` (the `Recreate` upgrade hash) is recorded on Pods that are created;
/// the Redis clean-up Job reuses the head Pod without it.
pub fn build(cluster: &RayCluster, id: &Identity, spec_hash: Option<&str>) -> Result<Pod, BuildError> {
    let spec = &cluster.spec;
    let head = &spec.head_group_spec;
    let mut template = head.template.clone();
    let meta = meta_mut(&mut template);
    if id.env.deterministic_head_pod_name {
        meta.name = Some(names::head_pod_name(&id.name));
    } else {
        meta.generate_name = Some(names::head_pod_generate_name(&id.name));
    }
    meta.namespace = Some(id.namespace.clone());

    let mut params = head.ray_start_params.clone().unwrap_or_default();
    ray_start::apply_group_resources(&mut params, head.resources.as_ref());
    ray_start::apply_group_labels(&mut params, head.labels.as_ref());
    meta.labels = Some(labels::pod_labels(
        &id.name,
        node_type::HEAD,
        HEAD_GROUP_NAME,
        head.template.metadata.as_ref().and_then(|m| m.labels.as_ref()),
        head.labels.as_ref(),
    ));
    let fqdn = names::head_fqdn(&id.name, &id.namespace, spec, &id.cluster_domain);
    let head_port = cluster::head_port(spec);
    ray_start::set_missing(&mut params, NodeType::Head, &head_port, &fqdn);
    let pod_annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    if cluster::overwrite_container_cmd(cluster) {
        pod_annotations.insert(annotations::RAY_OVERWRITE_CONTAINER_CMD.into(), "true".into());
    }

    let autoscaling = cluster::autoscaling(spec);
    if autoscaling {
        // The sidecar replaces Ray's own monitor process, which does not know Kubernetes.
        params.insert("no-monitor".into(), "true".into());
        let pod_spec = template.spec.get_or_insert_with(Default::default);
        pod_spec.service_account_name =
            Some(names::check_name(&autoscaler::service_account_name(cluster, id)));
        let image = pod_spec.containers.first().and_then(|c| c.image.clone());
        let mut sidecar = pod_autoscaler::container(image.as_deref(), None, &id.env);
        if auth::enabled(spec) {
            auth::configure_container(&mut sidecar, &id.name, spec);
        }
        // The sidecar reaches the GCS at 127.0.0.1 or the head's IP, both in the head's certificate.
        if kuberay_rules::tls::enabled(spec, id.gates.mtls) {
            kuberay_rules::tls::configure_container(&mut sidecar);
        }
        pod_autoscaler::apply_options(&mut sidecar, spec.autoscaler_options.as_ref());
        pod_spec.containers.push(sidecar);
        match cluster::autoscaler_version(spec) {
            Some(kuberay_crds::AutoscalerVersion::V2) => {
                env::push(
                    ray_container(&mut template)?,
                    env::value(env_names::RAY_ENABLE_AUTOSCALER_V2, "true"),
                );
                // Autoscaler v2 replaces failed nodes itself; a restarting container would confuse it.
                template.spec.get_or_insert_with(Default::default).restart_policy = Some("Never".into());
            }
            Some(kuberay_crds::AutoscalerVersion::V1) => {
                env::push(
                    ray_container(&mut template)?,
                    env::value(env_names::RAY_ENABLE_AUTOSCALER_V2, "false"),
                );
            }
            None => {}
        }
    }

    gcs_ft::configure(&mut template, cluster, id, NodeType::Head, &mut params)?;
    add_metrics_port(ray_container(&mut template)?);
    if auth::enabled(spec) {
        auth::configure_pod(
            template.spec.get_or_insert_with(Default::default),
            cluster,
            &id.name,
        );
    }
    if kuberay_rules::tls::enabled(spec, id.gates.mtls) {
        tls::configure(&mut template, &id.name, kuberay_rules::tls::Node::Head)?;
    }
    if let Some(options) = history::collector_options(cluster, id) {
        let collector = history::collector(cluster, id, options, NodeType::Head, &fqdn);
        template
            .spec
            .get_or_insert_with(Default::default)
            .containers
            .push(collector);
    }

    add_pod_defaults(
        &mut template,
        &id.env.pod_defaults.head_sidecar_containers,
        &id.env,
    );
    let mut pod = finish(
        template,
        Finish {
            node: NodeType::Head,
            params: &mut params,
            head_port: &head_port,
            autoscaling,
            creator: Creator::of(cluster),
            fqdn: &fqdn,
            ray_version: spec.ray_version.as_deref().unwrap_or_default(),
            env: &id.env,
            history_server: id.gates.history_server,
        },
    )?;
    if let Some(hash) = spec_hash {
        let pod_annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
        pod_annotations.insert(
            annotations::RAY_UPGRADE_STRATEGY_RECREATE_HASH.into(),
            hash.into(),
        );
        pod_annotations.insert(annotations::KUBERAY_VERSION.into(), KUBERAY_VERSION.into());
    }
    Ok(pod)
}
