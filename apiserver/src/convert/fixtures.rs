//! Requests the conversion and validation tests share: a cluster with a head, a CPU worker group and a GPU
//! worker group, volumes of every kind, environment variables of every source, a security context and
//! autoscaling, and the compute templates it uses.

use std::collections::HashMap;

use super::Templates;
use crate::api::{
    self, ComputeTemplate, EnvValueFrom, EnvironmentVariables, PodToleration,
    env_value_from::Source,
    volume::{AccessMode, HostPathType, MountPropagationMode, VolumeType},
};

pub(crate) fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub(crate) fn cpu_template() -> ComputeTemplate {
    ComputeTemplate {
        name: "cpu-2".into(),
        namespace: "team-a".into(),
        cpu: 2,
        memory: 8,
        memory_unit: "Gi".into(),
        ..Default::default()
    }
}

pub(crate) fn gpu_template() -> ComputeTemplate {
    ComputeTemplate {
        name: "gpu-small".into(),
        namespace: "team-a".into(),
        cpu: 4,
        memory: 16,
        gpu: 1,
        gpu_accelerator: "nvidia.com/a100".into(),
        tolerations: vec![PodToleration {
            key: "gpu".into(),
            operator: "Equal".into(),
            value: "a100".into(),
            effect: "NoSchedule".into(),
        }],
        extended_resources: HashMap::from([("vpc.amazonaws.com/efa".into(), 2)]),
        memory_unit: "Gi".into(),
    }
}

pub(crate) fn templates() -> Templates {
    [cpu_template(), gpu_template()]
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect()
}

fn volume(name: &str, kind: VolumeType, source: &str) -> api::Volume {
    let mut v = api::Volume {
        name: name.into(),
        mount_path: format!("/mnt/{name}"),
        source: source.into(),
        ..Default::default()
    };
    v.set_volume_type(kind);
    v
}

/// One volume of every type, each with the options it supports.
pub(crate) fn volumes() -> Vec<api::Volume> {
    let mut config = volume("code", VolumeType::Configmap, "code-cm");
    config.items = map(&[("main.py", "main.py")]);
    config.read_only = true;
    let mut secret = volume("creds", VolumeType::Secret, "creds-secret");
    secret.items = map(&[("token", "auth/token")]);
    let mut scratch = volume("scratch", VolumeType::EmptyDir, "");
    scratch.storage = "5Gi".into();
    let mut host = volume("logs", VolumeType::HostPath, "/var/log/ray");
    host.set_host_path_type(HostPathType::File);
    host.set_mount_propagation_mode(MountPropagationMode::Hosttocontainer);
    let mut claim = volume("data", VolumeType::PersistentVolumeClaim, "data-pvc");
    claim.read_only = true;
    claim.set_mount_propagation_mode(MountPropagationMode::Bidirectional);
    let mut cache = volume("cache", VolumeType::Ephemeral, "");
    cache.storage = "10Gi".into();
    cache.storage_class_name = "fast".into();
    cache.set_access_mode(AccessMode::Rwx);
    vec![config, secret, scratch, host, claim, cache]
}

fn from(source: Source, name: &str, key: &str) -> EnvValueFrom {
    EnvValueFrom {
        source: source.into(),
        name: name.into(),
        key: key.into(),
    }
}

/// Variables of every source.
pub(crate) fn environment() -> EnvironmentVariables {
    EnvironmentVariables {
        values: map(&[("RAY_LOG_LEVEL", "debug")]),
        values_from: HashMap::from([
            ("DB_PASSWORD".into(), from(Source::Secret, "db", "password")),
            ("SETTINGS".into(), from(Source::Configmap, "settings", "mode")),
            (
                "CPU".into(),
                from(Source::Resourcefield, "ray-head", "limits.cpu"),
            ),
            ("NODE".into(), from(Source::Field, "", "spec.nodeName")),
        ]),
    }
}

pub(crate) fn head() -> api::HeadGroupSpec {
    api::HeadGroupSpec {
        compute_template: "cpu-2".into(),
        image: String::new(),
        service_type: "ClusterIP".into(),
        enable_ingress: true,
        ray_start_params: map(&[("dashboard-host", "0.0.0.0"), ("num-cpus", "0")]),
        volumes: volumes(),
        service_account: "ray".into(),
        image_pull_secret: "registry".into(),
        environment: Some(environment()),
        annotations: map(&[("example.com/owner", "team-a")]),
        labels: map(&[("team", "a")]),
        image_pull_policy: "Always".into(),
        security_context: Some(api::SecurityContext {
            capabilities: Some(api::Capabilities {
                add: vec!["SYS_PTRACE".into()],
                drop: vec!["NET_RAW".into()],
            }),
            privileged: Some(false),
        }),
    }
}

pub(crate) fn gpu_workers() -> api::WorkerGroupSpec {
    api::WorkerGroupSpec {
        group_name: "gpu".into(),
        compute_template: "gpu-small".into(),
        image: "example.com/ray-ml:2.9.0-gpu".into(),
        replicas: 1,
        min_replicas: 1,
        max_replicas: 4,
        ray_start_params: map(&[("num-gpus", "1")]),
        volumes: volumes()[..1].to_vec(),
        environment: Some(EnvironmentVariables {
            values: map(&[("CUDA_VISIBLE_DEVICES", "0")]),
            ..Default::default()
        }),
        labels: map(&[("accelerator", "a100")]),
        ..Default::default()
    }
}

pub(crate) fn cpu_workers() -> api::WorkerGroupSpec {
    api::WorkerGroupSpec {
        group_name: "cpu".into(),
        compute_template: "cpu-2".into(),
        replicas: 2,
        min_replicas: 1,
        max_replicas: 5,
        ray_start_params: map(&[("num-cpus", "2")]),
        environment: Some(EnvironmentVariables::default()),
        ..Default::default()
    }
}

pub(crate) fn cluster_spec() -> api::ClusterSpec {
    api::ClusterSpec {
        head_group_spec: Some(head()),
        worker_group_spec: vec![cpu_workers(), gpu_workers()],
        enable_in_tree_autoscaling: true,
        autoscaler_options: Some(api::AutoscalerOptions {
            idle_timeout_seconds: 120,
            upscaling_mode: "Conservative".into(),
            image: String::new(),
            image_pull_policy: "Always".into(),
            cpu: "1".into(),
            memory: "1Gi".into(),
            envs: Some(EnvironmentVariables {
                values: map(&[("AUTOSCALER_LOG_LEVEL", "debug")]),
                ..Default::default()
            }),
            volumes: vec![],
        }),
        head_service_annotations: map(&[("service.beta.kubernetes.io/internal", "true")]),
    }
}

pub(crate) fn cluster() -> api::Cluster {
    let mut cluster = api::Cluster {
        name: "demo".into(),
        namespace: "team-a".into(),
        user: "alice".into(),
        version: "2.9.0".into(),
        cluster_spec: Some(cluster_spec()),
        annotations: map(&[
            ("ray.io/enable-serve-service", "true"),
            ("example.com/purpose", "demo"),
        ]),
        ..Default::default()
    };
    cluster.set_environment(api::cluster::Environment::Staging);
    cluster
}
