//! The Pod templates of a cluster's head and worker groups, built as KubeRay builds them: one Ray
//! container (`ray-head` or `ray-worker`) sized by a compute template, with KubeRay's ports, environment
//! and lifecycle, the group's volumes, annotations, labels and security context, and the template's
//! tolerations. The reverse reads the group's own settings back, leaving out what KubeRay and the operator
//! add.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, ExecAction, Lifecycle, LifecycleHandler,
    LocalObjectReference, ObjectFieldSelector, PodSpec, PodTemplateSpec, ResourceFieldSelector,
    ResourceRequirements, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{compute_template, env, labels, non_empty, non_empty_vec, volumes};
use crate::api::{self, ComputeTemplate, EnvironmentVariables};

/// The image repository of Ray's official images; the tag is the cluster's Ray version.
pub(crate) const DEFAULT_IMAGE_REPOSITORY: &str = "rayproject/ray";

/// Which kind of Ray node a group's Pods run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Head,
    Worker,
}

impl Role {
    /// The name of the Ray container.
    pub(crate) fn container(self) -> &'static str {
        match self {
            Self::Head => "ray-head",
            Self::Worker => "ray-worker",
        }
    }

    /// Variables KubeRay or the operator set in the Ray container; they are not the group's own.
    fn reserved_env(self) -> &'static [&'static str] {
        match self {
            Self::Head => &[
                "MY_POD_IP",
                "RAY_CLUSTER_NAME",
                "RAY_PORT",
                "RAY_ADDRESS",
                "RAY_USAGE_STATS_KUBERAY_IN_USE",
            ],
            Self::Worker => &[
                "RAY_DISABLE_DOCKER_CPU_WARNING",
                "TYPE",
                "CPU_REQUEST",
                "CPU_LIMITS",
                "MEMORY_REQUESTS",
                "MEMORY_LIMITS",
                "MY_POD_NAME",
                "MY_POD_IP",
                "FQ_RAY_IP",
                "RAY_IP",
                "RAY_CLUSTER_NAME",
                "RAY_PORT",
                "RAY_ADDRESS",
                "RAY_USAGE_STATS_KUBERAY_IN_USE",
                "REDIS_PASSWORD",
            ],
        }
    }
}

/// The fields of a head or worker group spec that shape its Pods (the API repeats them in both messages).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct NodeGroup {
    pub(crate) compute_template: String,
    /// As the request named it; empty means `rayproject/ray:<version>`.
    pub(crate) image: String,
    pub(crate) image_pull_policy: String,
    pub(crate) volumes: Vec<api::Volume>,
    pub(crate) service_account: String,
    pub(crate) image_pull_secret: String,
    pub(crate) environment: Option<EnvironmentVariables>,
    pub(crate) annotations: HashMap<String, String>,
    pub(crate) labels: HashMap<String, String>,
    pub(crate) security_context: Option<api::SecurityContext>,
}

/// What the cluster as a whole adds to every group's Pods.
pub(crate) struct ClusterWide<'a> {
    /// The Ray version, the tag of the default image.
    pub(crate) version: &'a str,
    /// The cluster's variables, set in every Ray container before the group's own.
    pub(crate) env: Option<&'a EnvironmentVariables>,
    /// Opens the dashboard-agent and Serve ports on the head (RayServices, `ray.io/enable-serve-service`).
    pub(crate) serve_ports: bool,
}

/// The Pod template of a group sized by `template`.
pub(crate) fn build(
    role: Role,
    group: &NodeGroup,
    template: &ComputeTemplate,
    cluster: &ClusterWide<'_>,
) -> PodTemplateSpec {
    let image = if group.image.is_empty() {
        format!("{DEFAULT_IMAGE_REPOSITORY}:{}", cluster.version)
    } else {
        group.image.clone()
    };
    let (pod_volumes, mounts) = volumes::to_volumes(&group.volumes);
    let resources = compute_template::resources(template);
    let mut env = default_env(role);
    env::merge(&mut env, env::to_env_vars(cluster.env));
    env::merge(&mut env, env::to_env_vars(group.environment.as_ref()));
    let container = Container {
        name: role.container().to_owned(),
        image: Some(image),
        image_pull_policy: Some(pull_policy(&group.image_pull_policy).to_owned()),
        env: Some(env),
        ports: Some(ports(role, cluster.serve_ports)),
        lifecycle: (role == Role::Worker).then(ray_stop),
        resources: Some(ResourceRequirements {
            limits: Some(resources.clone()),
            requests: Some(resources),
            claims: None,
        }),
        volume_mounts: non_empty_vec(mounts),
        security_context: group.security_context.as_ref().map(security_context),
        ..Default::default()
    };
    let mut annotations = std::collections::BTreeMap::from([
        (labels::COMPUTE_TEMPLATE.to_owned(), template.name.clone()),
        (labels::COMPUTE_IMAGE.to_owned(), group.image.clone()),
    ]);
    annotations.extend(group.annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            annotations: Some(annotations),
            labels: super::sorted(&group.labels),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            volumes: non_empty_vec(pod_volumes),
            tolerations: non_empty_vec(compute_template::tolerations(template)),
            service_account_name: non_empty(&group.service_account),
            image_pull_secrets: non_empty(&group.image_pull_secret)
                .map(|name| vec![LocalObjectReference { name }]),
            ..Default::default()
        }),
    }
}

/// `Always` only when asked for; Kubernetes' default otherwise.
fn pull_policy(policy: &str) -> &'static str {
    if policy.eq_ignore_ascii_case("always") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_owned(),
                api_version: None,
            }),
            ..Default::default()
        }),
    }
}

fn resource_env(name: &str, resource: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: Some(Role::Worker.container().to_owned()),
                resource: resource.to_owned(),
                divisor: None,
            }),
            ..Default::default()
        }),
    }
}

fn value_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

/// KubeRay's fixed variables of each Ray container.
fn default_env(role: Role) -> Vec<EnvVar> {
    match role {
        Role::Head => vec![field_env("MY_POD_IP", "status.podIP")],
        Role::Worker => vec![
            value_env("RAY_DISABLE_DOCKER_CPU_WARNING", "1"),
            value_env("TYPE", "worker"),
            resource_env("CPU_REQUEST", "requests.cpu"),
            resource_env("CPU_LIMITS", "limits.cpu"),
            resource_env("MEMORY_REQUESTS", "requests.memory"),
            resource_env("MEMORY_LIMITS", "limits.memory"),
            field_env("MY_POD_NAME", "metadata.name"),
            field_env("MY_POD_IP", "status.podIP"),
        ],
    }
}

fn port(name: Option<&str>, number: i32) -> ContainerPort {
    ContainerPort {
        name: name.map(str::to_owned),
        container_port: number,
        ..Default::default()
    }
}

/// The head's Ray ports (plus the Serve ports when asked for); KubeRay's single unnamed port 80 on workers.
fn ports(role: Role, serve_ports: bool) -> Vec<ContainerPort> {
    match role {
        Role::Head => {
            let mut ports = vec![
                port(Some("redis"), 6379),
                port(Some("head"), 10001),
                port(Some("dashboard"), 8265),
                port(Some("metrics"), 8080),
            ];
            if serve_ports {
                ports.push(port(Some("dashboard-agent"), 52365));
                ports.push(port(Some("serve"), 8000));
            }
            ports
        }
        Role::Worker => vec![port(None, 80)],
    }
}

/// Workers leave the cluster cleanly before their Pod stops.
fn ray_stop() -> Lifecycle {
    Lifecycle {
        pre_stop: Some(LifecycleHandler {
            exec: Some(ExecAction {
                command: Some(vec!["/bin/sh".into(), "-c".into(), "ray stop".into()]),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn security_context(context: &api::SecurityContext) -> SecurityContext {
    let caps = context.capabilities.clone().unwrap_or_default();
    SecurityContext {
        privileged: context.privileged,
        capabilities: Some(Capabilities {
            add: non_empty_vec(caps.add),
            drop: non_empty_vec(caps.drop),
        }),
        ..Default::default()
    }
}

fn from_security_context(context: &SecurityContext) -> api::SecurityContext {
    let caps = context.capabilities.clone().unwrap_or_default();
    api::SecurityContext {
        privileged: context.privileged,
        capabilities: Some(api::Capabilities {
            add: caps.add.unwrap_or_default(),
            drop: caps.drop.unwrap_or_default(),
        }),
    }
}

/// The group's own settings in a Pod template, without what KubeRay or the operator added.
pub(crate) fn read(role: Role, template: &PodTemplateSpec) -> NodeGroup {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    let annotation = |key: &str| annotations.get(key).cloned().unwrap_or_default();
    let mut group = NodeGroup {
        compute_template: annotation(labels::COMPUTE_TEMPLATE),
        image: annotation(labels::COMPUTE_IMAGE),
        volumes: volumes::from_pod_template(template),
        ..Default::default()
    };
    annotations.retain(|k, _| !labels::NODE_DEFAULT_ANNOTATIONS.contains(&k.as_str()));
    group.annotations = super::unsorted(Some(&annotations));
    let mut pod_labels = meta.labels.unwrap_or_default();
    pod_labels.retain(|k, _| !labels::NODE_DEFAULT_LABELS.contains(&k.as_str()));
    group.labels = super::unsorted(Some(&pod_labels));
    let Some(spec) = &template.spec else {
        return group;
    };
    group.service_account = spec.service_account_name.clone().unwrap_or_default();
    group.image_pull_secret = spec
        .image_pull_secrets
        .as_ref()
        .and_then(|s| s.first())
        .map(|s| s.name.clone())
        .unwrap_or_default();
    if let Some(container) = spec.containers.iter().find(|c| c.name == role.container()) {
        if let Some(vars) = container.env.as_ref().filter(|e| !e.is_empty()) {
            group.environment = Some(env::from_env_vars(vars, role.reserved_env()));
        }
        group.security_context = container.security_context.as_ref().map(from_security_context);
        if container.image_pull_policy.as_deref() == Some("Always") {
            group.image_pull_policy = "Always".to_owned();
        }
    }
    group
}
