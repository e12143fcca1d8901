//! Clusters: `Cluster` to and from a `ray.io/v1` RayCluster, and the `ClusterSpec` that RayJobs and
//! RayServices embed as well.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::ResourceRequirements,
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use kuberay_crds::{
    AutoscalerOptions, HeadGroupSpec, RayCluster, RayClusterSpec, UpscalingMode, WorkerGroupSpec,
};

use super::{
    Templates, env, labels, non_empty, non_empty_vec,
    pod_template::{self, ClusterWide, NodeGroup, Role},
    sorted, time, unsorted, volumes,
};
use crate::{
    api::{self, ClusterEvent, EnvironmentVariables, cluster::Environment},
    error::{ApiError, ApiResult},
};

/// Default CPU of the autoscaler container when only its memory is given.
const AUTOSCALER_CPU: &str = "500m";
/// Default memory of the autoscaler container when only its CPU is given.
const AUTOSCALER_MEMORY: &str = "512Mi";

/// The RayCluster KubeRay's apiserver creates for `cluster` (validated, namespace set), its groups sized by
/// `templates`, stamped with `created_at`.
pub(crate) fn to_ray_cluster(
    cluster: &api::Cluster,
    templates: &Templates,
    created_at: &str,
) -> ApiResult<RayCluster> {
    let serve_ports = cluster
        .annotations
        .get(labels::ENABLE_SERVE_SERVICE)
        .is_some_and(|v| v == "true");
    let spec = cluster_spec(
        &cluster.version,
        cluster.envs.as_ref(),
        required_spec(cluster.cluster_spec.as_ref())?,
        templates,
        serve_ports,
    )?;
    let labels = labels::managed_labels([
        (labels::CLUSTER_NAME, cluster.name.as_str()),
        (labels::USER, cluster.user.as_str()),
        (labels::VERSION, cluster.version.as_str()),
        (labels::ENVIRONMENT, cluster.environment().as_str_name()),
    ]);
    let mut annotations: BTreeMap<_, _> = sorted(&cluster.annotations).unwrap_or_default();
    annotations.insert(labels::CREATION_TIMESTAMP.to_owned(), created_at.to_owned());
    Ok(RayCluster {
        metadata: ObjectMeta {
            name: Some(cluster.name.clone()),
            namespace: Some(cluster.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec,
        status: None,
    })
}

pub(crate) fn required_spec(spec: Option<&api::ClusterSpec>) -> ApiResult<&api::ClusterSpec> {
    spec.ok_or_else(|| ApiError::InvalidArgument("clusterSpec is required".into()))
}

/// The RayCluster spec of `spec`: head and workers sized by `templates`, each Ray container also getting
/// the cluster-wide `envs`.
pub(crate) fn cluster_spec(
    version: &str,
    envs: Option<&EnvironmentVariables>,
    spec: &api::ClusterSpec,
    templates: &Templates,
    serve_ports: bool,
) -> ApiResult<RayClusterSpec> {
    let head = spec
        .head_group_spec
        .as_ref()
        .ok_or_else(|| ApiError::InvalidArgument("clusterSpec.headGroupSpec is required".into()))?;
    let cluster = ClusterWide {
        version,
        env: envs,
        serve_ports,
    };
    let head_group = head_node_group(head);
    let head_template = pod_template::build(
        Role::Head,
        &head_group,
        template(templates, &head.compute_template)?,
        &cluster,
    );
    let workers = spec
        .worker_group_spec
        .iter()
        .map(|w| worker_group(w, templates, &cluster))
        .collect::<ApiResult<Vec<_>>>()?;
    let autoscaling = spec.enable_in_tree_autoscaling;
    Ok(RayClusterSpec {
        ray_version: non_empty(version),
        head_group_spec: HeadGroupSpec {
            template: head_template,
            service_type: non_empty(&head.service_type),
            enable_ingress: head.enable_ingress.then_some(true),
            ray_start_params: sorted(&head.ray_start_params),
            ..Default::default()
        },
        worker_group_specs: non_empty_vec(workers),
        head_service_annotations: sorted(&spec.head_service_annotations),
        enable_in_tree_autoscaling: autoscaling.then_some(true),
        autoscaler_options: spec
            .autoscaler_options
            .as_ref()
            .filter(|_| autoscaling)
            .map(autoscaler_options),
        ..Default::default()
    })
}

fn template<'a>(templates: &'a Templates, name: &str) -> ApiResult<&'a api::ComputeTemplate> {
    templates.get(name).ok_or_else(|| {
        ApiError::Internal(format!(
            "compute template {name:?} was not read before building the cluster"
        ))
    })
}

fn head_node_group(head: &api::HeadGroupSpec) -> NodeGroup {
    NodeGroup {
        compute_template: head.compute_template.clone(),
        image: head.image.clone(),
        image_pull_policy: head.image_pull_policy.clone(),
        volumes: head.volumes.clone(),
        service_account: head.service_account.clone(),
        image_pull_secret: head.image_pull_secret.clone(),
        environment: head.environment.clone(),
        annotations: head.annotations.clone(),
        labels: head.labels.clone(),
        security_context: head.security_context.clone(),
    }
}

fn worker_node_group(worker: &api::WorkerGroupSpec) -> NodeGroup {
    NodeGroup {
        compute_template: worker.compute_template.clone(),
        image: worker.image.clone(),
        image_pull_policy: worker.image_pull_policy.clone(),
        volumes: worker.volumes.clone(),
        service_account: worker.service_account.clone(),
        image_pull_secret: worker.image_pull_secret.clone(),
        environment: worker.environment.clone(),
        annotations: worker.annotations.clone(),
        labels: worker.labels.clone(),
        security_context: worker.security_context.clone(),
    }
}

/// A worker group; a `min_replicas` or `max_replicas` of 0 means `replicas`.
fn worker_group(
    worker: &api::WorkerGroupSpec,
    templates: &Templates,
    cluster: &ClusterWide<'_>,
) -> ApiResult<WorkerGroupSpec> {
    let group = worker_node_group(worker);
    let template = pod_template::build(
        Role::Worker,
        &group,
        template(templates, &worker.compute_template)?,
        cluster,
    );
    let or_replicas = |n: i32| if n == 0 { worker.replicas } else { n };
    Ok(WorkerGroupSpec {
        group_name: worker.group_name.clone(),
        replicas: Some(worker.replicas),
        min_replicas: Some(or_replicas(worker.min_replicas)),
        max_replicas: Some(or_replicas(worker.max_replicas)),
        ray_start_params: sorted(&worker.ray_start_params),
        template,
        ..Default::default()
    })
}

fn upscaling_mode(mode: &str) -> Option<UpscalingMode> {
    match mode {
        "Default" => Some(UpscalingMode::Default),
        "Aggressive" => Some(UpscalingMode::Aggressive),
        "Conservative" => Some(UpscalingMode::Conservative),
        _ => None,
    }
}

fn upscaling_mode_name(mode: UpscalingMode) -> &'static str {
    match mode {
        UpscalingMode::Default => "Default",
        UpscalingMode::Aggressive => "Aggressive",
        UpscalingMode::Conservative => "Conservative",
    }
}

fn autoscaler_options(options: &api::AutoscalerOptions) -> AutoscalerOptions {
    let (env, env_from) = options
        .envs
        .as_ref()
        .map(env::to_autoscaler_env)
        .unwrap_or_default();
    let resources = (!options.cpu.is_empty() || !options.memory.is_empty()).then(|| {
        let cpu = non_empty(&options.cpu).unwrap_or_else(|| AUTOSCALER_CPU.to_owned());
        let memory = non_empty(&options.memory).unwrap_or_else(|| AUTOSCALER_MEMORY.to_owned());
        let list = BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu)),
            ("memory".to_owned(), Quantity(memory)),
        ]);
        ResourceRequirements {
            limits: Some(list.clone()),
            requests: Some(list),
            claims: None,
        }
    });
    AutoscalerOptions {
        idle_timeout_seconds: (options.idle_timeout_seconds > 0).then_some(options.idle_timeout_seconds),
        upscaling_mode: upscaling_mode(&options.upscaling_mode),
        image: non_empty(&options.image),
        image_pull_policy: options
            .image_pull_policy
            .eq_ignore_ascii_case("always")
            .then(|| "Always".to_owned()),
        env,
        env_from,
        volume_mounts: non_empty_vec(volumes::to_mounts(&options.volumes)),
        resources,
        ..Default::default()
    }
}

fn from_autoscaler_options(options: &AutoscalerOptions) -> api::AutoscalerOptions {
    let limits = options.resources.as_ref().and_then(|r| {
        r.limits
            .as_ref()
            .filter(|l| !l.is_empty())
            .or(r.requests.as_ref())
    });
    let quantity = |name: &str| {
        limits
            .and_then(|l| l.get(name))
            .map(|q| q.0.clone())
            .unwrap_or_default()
    };
    let volumes = options
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| {
            let mut v = api::Volume {
                name: m.name.clone(),
                mount_path: m.mount_path.clone(),
                read_only: m.read_only.unwrap_or(false),
                ..Default::default()
            };
            v.set_mount_propagation_mode(match m.mount_propagation.as_deref() {
                Some("HostToContainer") => api::volume::MountPropagationMode::Hosttocontainer,
                Some("Bidirectional") => api::volume::MountPropagationMode::Bidirectional,
                _ => api::volume::MountPropagationMode::None,
            });
            v
        })
        .collect();
    api::AutoscalerOptions {
        idle_timeout_seconds: options.idle_timeout_seconds.unwrap_or_default(),
        upscaling_mode: options
            .upscaling_mode
            .map(upscaling_mode_name)
            .unwrap_or_default()
            .to_owned(),
        image: options.image.clone().unwrap_or_default(),
        image_pull_policy: options.image_pull_policy.clone().unwrap_or_default(),
        cpu: quantity("cpu"),
        memory: quantity("memory"),
        envs: env::from_autoscaler_env(options.env.as_ref(), options.env_from.as_ref()),
        volumes,
    }
}

/// The API's view of a cluster spec.
pub(crate) fn from_cluster_spec(spec: &RayClusterSpec) -> api::ClusterSpec {
    let autoscaling = spec.enable_in_tree_autoscaling == Some(true);
    api::ClusterSpec {
        head_group_spec: Some(from_head_group(&spec.head_group_spec)),
        worker_group_spec: spec
            .worker_group_specs
            .iter()
            .flatten()
            .map(from_worker_group)
            .collect(),
        enable_in_tree_autoscaling: autoscaling,
        autoscaler_options: spec
            .autoscaler_options
            .as_ref()
            .filter(|_| autoscaling)
            .map(from_autoscaler_options),
        head_service_annotations: unsorted(spec.head_service_annotations.as_ref()),
    }
}

fn from_head_group(head: &HeadGroupSpec) -> api::HeadGroupSpec {
    let g = pod_template::read(Role::Head, &head.template);
    api::HeadGroupSpec {
        compute_template: g.compute_template,
        image: g.image,
        service_type: head.service_type.clone().unwrap_or_default(),
        enable_ingress: head.enable_ingress == Some(true),
        ray_start_params: unsorted(head.ray_start_params.as_ref()),
        volumes: g.volumes,
        service_account: g.service_account,
        image_pull_secret: g.image_pull_secret,
        environment: g.environment,
        annotations: g.annotations,
        labels: g.labels,
        image_pull_policy: g.image_pull_policy,
        security_context: g.security_context,
    }
}

fn from_worker_group(worker: &WorkerGroupSpec) -> api::WorkerGroupSpec {
    let g = pod_template::read(Role::Worker, &worker.template);
    api::WorkerGroupSpec {
        group_name: worker.group_name.clone(),
        compute_template: g.compute_template,
        image: g.image,
        replicas: worker.replicas.unwrap_or_default(),
        min_replicas: worker.min_replicas.unwrap_or_default(),
        max_replicas: worker.max_replicas.unwrap_or_default(),
        ray_start_params: unsorted(worker.ray_start_params.as_ref()),
        volumes: g.volumes,
        service_account: g.service_account,
        image_pull_secret: g.image_pull_secret,
        environment: g.environment,
        annotations: g.annotations,
        labels: g.labels,
        image_pull_policy: g.image_pull_policy,
        security_context: g.security_context,
    }
}

/// The API's view of a RayCluster, with `events` about it. The annotations the API stamps on the
/// RayCluster are left out of the cluster's own.
pub(crate) fn from_ray_cluster(cluster: &RayCluster, events: Vec<ClusterEvent>) -> api::Cluster {
    let meta = &cluster.metadata;
    let mut annotations = meta.annotations.clone().unwrap_or_default();
    annotations.remove(labels::CREATION_TIMESTAMP);
    let environment =
        Environment::from_str_name(labels::label(meta, labels::ENVIRONMENT)).unwrap_or_default();
    let status = cluster.status.as_ref();
    api::Cluster {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        user: labels::label(meta, labels::USER).to_owned(),
        version: labels::label(meta, labels::VERSION).to_owned(),
        environment: environment.into(),
        cluster_spec: Some(from_cluster_spec(&cluster.spec)),
        annotations: unsorted(Some(&annotations)),
        envs: None,
        created_at: time(meta.creation_timestamp.as_ref()),
        deleted_at: time(meta.deletion_timestamp.as_ref()),
        cluster_state: status
            .and_then(|s| s.state.as_ref())
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        events,
        service_endpoint: unsorted(status.and_then(|s| s.endpoints.as_ref())),
    }
}

#[cfg(test)]
mod tests;
