//! Ray Pods: the head and the workers are built from the user's template in two steps, as KubeRay does.
//! [`head`] and [`worker`] add what is specific to the node type (labels, injected containers, start
//! parameters); [`finish`] then turns the template into a Pod: shared memory, the rewritten command,
//! the environment and the probes.

pub mod autoscaler;
pub mod env;
pub mod gcs_ft;
pub mod head;
pub mod history;
pub mod tls;
pub mod worker;

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{
        Container, ContainerPort, EmptyDirVolumeSource, Pod, PodSpec, PodTemplateSpec, Volume, VolumeMount,
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use kuberay_crds::constants::{annotations, labels};
use kuberay_rules::operator_env::OperatorEnv;

use crate::{
    cluster::Creator,
    consts::{
        AUTOSCALER_CONTAINER_NAME, DEFAULT_METRICS_PORT, METRICS_PORT_NAME, RAY_LOG_MOUNT_PATH,
        RAY_LOG_VOLUME_NAME, SHARED_MEMORY_MOUNT_PATH, SHARED_MEMORY_VOLUME_NAME, env as env_names,
    },
    probes,
    ray_start::{self, NodeType, Params},
};

/// The template's metadata, created empty if absent.
pub fn meta_mut(template: &mut PodTemplateSpec) -> &mut ObjectMeta {
    template.metadata.get_or_insert_with(ObjectMeta::default)
}

/// Why a Pod could not be built from its template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(pub String);

/// `/bin/bash -c --`: KubeRay no longer uses a login shell (`-lc`) by default since v1.4, unless
/// `ENABLE_LOGIN_SHELL` says so.
pub fn shell_command(env: &OperatorEnv) -> Vec<String> {
    env.shell_command("")
}

/// The Ray container, which KubeRay requires to be the first one.
pub fn ray_container(template: &mut PodTemplateSpec) -> Result<&mut Container, BuildError> {
    template
        .spec
        .as_mut()
        .and_then(|s| s.containers.first_mut())
        .ok_or_else(|| BuildError("the Pod template has no container".into()))
}

/// Adds the `metrics` container port (8080) Prometheus scrapes, unless one is named so already.
pub fn add_metrics_port(container: &mut Container) {
    let ports = container.ports.get_or_insert_with(Vec::new);
    if !ports.iter().any(|p| p.name.as_deref() == Some(METRICS_PORT_NAME)) {
        ports.push(ContainerPort {
            name: Some(METRICS_PORT_NAME.into()),
            container_port: DEFAULT_METRICS_PORT,
            ..ContainerPort::default()
        });
    }
}

/// What KubeRay's Configuration file adds to a Ray Pod before it is built: its sidecars (after the Pod's own
/// containers), and its default labels and annotations where the template has none of that key.
pub fn add_pod_defaults(template: &mut PodTemplateSpec, sidecars: &[Container], env: &OperatorEnv) {
    let defaults = &env.pod_defaults;
    let meta = meta_mut(template);
    for (map, extra) in [
        (&mut meta.labels, &defaults.default_pod_labels),
        (&mut meta.annotations, &defaults.default_pod_annotations),
    ] {
        if !extra.is_empty() {
            let map = map.get_or_insert_with(BTreeMap::new);
            for (key, value) in extra {
                map.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    if !sidecars.is_empty() {
        template
            .spec
            .get_or_insert_with(Default::default)
            .containers
            .extend(sidecars.iter().cloned());
    }
}

/// What [`finish`] needs besides the template.
pub struct Finish<'a> {
    pub node: NodeType,
    pub params: &'a mut Params,
    pub head_port: &'a str,
    pub autoscaling: bool,
    pub creator: Creator,
    pub fqdn: &'a str,
    pub ray_version: &'a str,
    /// KubeRay's environment toggles: the login shell and the probes.
    pub env: &'a OperatorEnv,
    /// The `RayClusterHistoryServer` gate: a container named like the collector shares Ray's logs.
    pub history_server: bool,
}

/// Turns a prepared template into the Pod to create (KubeRay's `BuildPod`).
pub fn finish(mut template: PodTemplateSpec, f: Finish<'_>) -> Result<Pod, BuildError> {
    if f.creator == Creator::RayService {
        let serve = if f.node == NodeType::Head { "false" } else { "true" };
        meta_mut(&mut template)
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(labels::RAY_SERVE.into(), serve.into());
    }
    let overwrite = meta_mut(&mut template)
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::RAY_OVERWRITE_CONTAINER_CMD))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let mut spec = template.spec.unwrap_or_default();
    if spec.containers.is_empty() {
        return Err(BuildError("the Pod template has no container".into()));
    }

    // Ray's object store lives in /dev/shm, which is tiny by default in a container.
    if !f.params.contains_key("plasma-directory") {
        add_empty_dir(
            &mut spec.volumes,
            &mut spec.containers[0],
            SHARED_MEMORY_VOLUME_NAME,
            SHARED_MEMORY_MOUNT_PATH,
            true,
        );
    }
    // The autoscaler writes its logs where the head's log monitor reads them.
    if f.node == NodeType::Head && f.autoscaling {
        add_empty_dir(
            &mut spec.volumes,
            &mut spec.containers[0],
            RAY_LOG_VOLUME_NAME,
            RAY_LOG_MOUNT_PATH,
            false,
        );
        if let Some(autoscaler) = spec
            .containers
            .iter_mut()
            .find(|c| c.name == AUTOSCALER_CONTAINER_NAME)
        {
            add_empty_dir(
                &mut spec.volumes,
                autoscaler,
                RAY_LOG_VOLUME_NAME,
                RAY_LOG_MOUNT_PATH,
                false,
            );
        }
    }

    if f.history_server {
        share_logs_with_collector(&mut spec);
    }

    let ray = &mut spec.containers[0];
    let mut user_cmd = String::new();
    for part in ray.command.iter().flatten().chain(ray.args.iter().flatten()) {
        user_cmd.push_str(&format!(" {part} "));
    }
    let ulimit = format!("ulimit -n ${{{}:-65536}}", env_names::RAY_START_ULIMIT_OPEN_FILES);
    let ray_start_cmd = ray_start::command(f.node, f.params, ray.resources.as_ref());
    // A command that already runs `ray start` is the user's own launcher; KubeRay leaves it alone.
    if !overwrite && !user_cmd.contains("ray start") {
        let generated = format!("{ulimit}; {ray_start_cmd}");
        let args = if user_cmd.is_empty() {
            generated
        } else {
            format!("{user_cmd} && {generated}")
        };
        ray.command = Some(shell_command(f.env));
        ray.args = Some(vec![args]);
    }

    for init in spec.init_containers.iter_mut().flatten() {
        env::set_init_container_env(init, f.fqdn);
    }
    let export_events = f.history_server && history::has_collector(&spec.containers);
    let ray = &mut spec.containers[0];
    for var in &f.env.pod_defaults.default_container_envs {
        kuberay_rules::env::push_if_absent(ray, var.clone());
    }
    env::set_ray_container_env(ray, f.node, f.fqdn, f.head_port, &ray_start_cmd, f.creator);
    if export_events {
        history::set_ray_container_env(ray);
    }
    if f.env.probes_injection {
        probes::inject(ray, f.node, f.creator, f.params, f.ray_version);
    }

    Ok(Pod {
        metadata: template.metadata.unwrap_or_default(),
        spec: Some(spec),
        status: None,
    })
}

/// The history server's collector reads Ray's log directory: both mount the `ray-logs` emptyDir.
fn share_logs_with_collector(spec: &mut PodSpec) {
    let Some(index) = spec
        .containers
        .iter()
        .position(|c| c.name == history::COLLECTOR_CONTAINER_NAME)
    else {
        return;
    };
    for i in [0, index] {
        add_empty_dir(
            &mut spec.volumes,
            &mut spec.containers[i],
            RAY_LOG_VOLUME_NAME,
            RAY_LOG_MOUNT_PATH,
            false,
        );
    }
}

/// Mounts an emptyDir at `path` unless the container mounts something there already. A memory-backed one
/// is capped at the container's memory limit (or request).
fn add_empty_dir(
    volumes: &mut Option<Vec<Volume>>,
    container: &mut Container,
    name: &str,
    path: &str,
    memory: bool,
) {
    if container
        .volume_mounts
        .iter()
        .flatten()
        .any(|m| m.mount_path == path)
    {
        return;
    }
    let volumes = volumes.get_or_insert_with(Vec::new);
    if !volumes.iter().any(|v| v.name == name) {
        let size_limit = memory.then(|| memory_limit_or_request(container)).flatten();
        volumes.push(Volume {
            name: name.into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: memory.then(|| "Memory".to_string()),
                size_limit,
            }),
            ..Volume::default()
        });
    }
    container
        .volume_mounts
        .get_or_insert_with(Vec::new)
        .push(VolumeMount {
            name: name.into(),
            mount_path: path.into(),
            ..VolumeMount::default()
        });
}

fn memory_limit_or_request(container: &Container) -> Option<Quantity> {
    let resources = container.resources.as_ref()?;
    resources
        .limits
        .as_ref()
        .and_then(|l| l.get("memory"))
        .or_else(|| resources.requests.as_ref().and_then(|r| r.get("memory")))
        .cloned()
}
