//! A cluster with a head, CPU and GPU workers, volumes, environment, tolerations and autoscaling becomes
//! the RayCluster KubeRay's apiserver builds, and reads back as the same message.

use k8s_openapi::api::core::v1::{Container, EnvVar, PodTemplateSpec};

use super::*;
use crate::convert::fixtures::{self, map};

const CREATED: &str = "2024-05-01 10:20:30.5 +0000 UTC";

fn built() -> RayCluster {
    to_ray_cluster(&fixtures::cluster(), &fixtures::templates(), CREATED).unwrap_or_default()
}

fn container(template: &PodTemplateSpec) -> Container {
    template
        .spec
        .as_ref()
        .and_then(|s| s.containers.first().cloned())
        .unwrap_or_default()
}

fn env_names(env: &[EnvVar]) -> Vec<&str> {
    env.iter().map(|v| v.name.as_str()).collect()
}

fn quantity(c: &Container, kind: &str, name: &str) -> String {
    let r = c.resources.clone().unwrap_or_default();
    let list = if kind == "limits" { r.limits } else { r.requests };
    list.unwrap_or_default()
        .get(name)
        .map(|q| q.0.clone())
        .unwrap_or_default()
}

#[test]
fn labels_and_annotations_are_kuberays() {
    let rc = built();
    let labels = rc.metadata.labels.clone().unwrap_or_default();
    let expected = [
        ("ray.io/cluster-name", "demo"),
        ("ray.io/user", "alice"),
        ("ray.io/version", "2.9.0"),
        ("ray.io/environment", "STAGING"),
        ("app.kubernetes.io/name", "kuberay"),
        ("app.kubernetes.io/managed-by", "kuberay-apiserver"),
    ];
    assert_eq!(labels.len(), expected.len());
    for (k, v) in expected {
        assert_eq!(labels.get(k).map(String::as_str), Some(v), "{k}");
    }
    let annotations = rc.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations["ray.io/creation-timestamp"], CREATED);
    assert_eq!(annotations["example.com/purpose"], "demo");
    assert_eq!(annotations["ray.io/enable-serve-service"], "true");
    assert_eq!(rc.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(rc.spec.ray_version.as_deref(), Some("2.9.0"));
}

#[test]
fn head_pod_is_kuberays() {
    let rc = built();
    let head = &rc.spec.head_group_spec;
    assert_eq!(head.service_type.as_deref(), Some("ClusterIP"));
    assert_eq!(head.enable_ingress, Some(true));
    assert_eq!(
        head.ray_start_params
            .as_ref()
            .map(|p| p["dashboard-host"].as_str()),
        Some("0.0.0.0")
    );
    let meta = head.template.metadata.clone().unwrap_or_default();
    let annotations = meta.annotations.unwrap_or_default();
    assert_eq!(annotations["ray.io/compute-template"], "cpu-2");
    assert_eq!(annotations["ray.io/compute-image"], "");
    assert_eq!(annotations["example.com/owner"], "team-a");
    assert_eq!(meta.labels.unwrap_or_default()["team"], "a");

    let c = container(&head.template);
    assert_eq!(c.name, "ray-head");
    assert_eq!(c.image.as_deref(), Some("rayproject/ray:2.9.0"));
    assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
    let ports: Vec<_> = c
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.as_deref().unwrap_or_default(), p.container_port))
        .collect();
    assert_eq!(
        ports,
        [
            ("redis", 6379),
            ("head", 10001),
            ("dashboard", 8265),
            ("metrics", 8080),
            ("dashboard-agent", 52365),
            ("serve", 8000)
        ]
    );
    for kind in ["requests", "limits"] {
        assert_eq!(quantity(&c, kind, "cpu"), "2");
        assert_eq!(quantity(&c, kind, "memory"), "8Gi");
    }
    let env = c.env.clone().unwrap_or_default();
    assert_eq!(
        env_names(&env),
        [
            "MY_POD_IP",
            "RAY_LOG_LEVEL",
            "CPU",
            "DB_PASSWORD",
            "NODE",
            "SETTINGS"
        ]
    );
    let pod_ip = env[0].value_from.as_ref().and_then(|s| s.field_ref.as_ref());
    assert_eq!(pod_ip.map(|f| f.field_path.as_str()), Some("status.podIP"));
    assert_eq!(c.volume_mounts.as_ref().map(Vec::len), Some(6));
    let caps = c
        .security_context
        .as_ref()
        .and_then(|s| s.capabilities.clone())
        .unwrap_or_default();
    assert_eq!(caps.add, Some(vec!["SYS_PTRACE".to_owned()]));
    assert_eq!(caps.drop, Some(vec!["NET_RAW".to_owned()]));
    assert!(c.lifecycle.is_none());

    let spec = head.template.spec.clone().unwrap_or_default();
    assert_eq!(spec.volumes.as_ref().map(Vec::len), Some(6));
    assert_eq!(spec.service_account_name.as_deref(), Some("ray"));
    assert_eq!(spec.image_pull_secrets.unwrap_or_default()[0].name, "registry");
    assert!(spec.tolerations.is_none(), "the CPU template has no tolerations");
}

#[test]
fn worker_pods_are_kuberays() {
    let rc = built();
    let workers = rc.spec.worker_group_specs.clone().unwrap_or_default();
    assert_eq!(workers.len(), 2);
    let cpu = &workers[0];
    assert_eq!(
        (cpu.replicas, cpu.min_replicas, cpu.max_replicas),
        (Some(2), Some(1), Some(5))
    );
    let gpu = &workers[1];
    assert_eq!(
        (gpu.replicas, gpu.min_replicas, gpu.max_replicas),
        (Some(1), Some(1), Some(4))
    );
    // A min_replicas (or max_replicas) of 0 means replicas.
    let mut spec = fixtures::cluster_spec();
    spec.worker_group_spec[0].min_replicas = 0;
    let rc = cluster_spec("2.9.0", None, &spec, &fixtures::templates(), false).unwrap_or_default();
    assert_eq!(rc.worker_group_specs.unwrap_or_default()[0].min_replicas, Some(2));
    assert_eq!(gpu.group_name, "gpu");

    let c = container(&gpu.template);
    assert_eq!(c.name, "ray-worker");
    assert_eq!(c.image.as_deref(), Some("example.com/ray-ml:2.9.0-gpu"));
    assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
    for kind in ["requests", "limits"] {
        assert_eq!(quantity(&c, kind, "cpu"), "4");
        assert_eq!(quantity(&c, kind, "memory"), "16Gi");
        assert_eq!(quantity(&c, kind, "nvidia.com/a100"), "1");
        assert_eq!(quantity(&c, kind, "vpc.amazonaws.com/efa"), "2");
    }
    let env = c.env.clone().unwrap_or_default();
    assert_eq!(
        env_names(&env),
        [
            "RAY_DISABLE_DOCKER_CPU_WARNING",
            "TYPE",
            "CPU_REQUEST",
            "CPU_LIMITS",
            "MEMORY_REQUESTS",
            "MEMORY_LIMITS",
            "MY_POD_NAME",
            "MY_POD_IP",
            "CUDA_VISIBLE_DEVICES",
        ]
    );
    let cpu_request = env[2]
        .value_from
        .as_ref()
        .and_then(|s| s.resource_field_ref.as_ref());
    assert_eq!(
        cpu_request.and_then(|r| r.container_name.as_deref()),
        Some("ray-worker")
    );
    assert_eq!(
        c.ports.as_ref().map(|p| (p[0].name.clone(), p[0].container_port)),
        Some((None, 80))
    );
    let stop = c
        .lifecycle
        .and_then(|l| l.pre_stop)
        .and_then(|p| p.exec)
        .and_then(|e| e.command);
    assert_eq!(
        stop,
        Some(vec!["/bin/sh".to_owned(), "-c".to_owned(), "ray stop".to_owned()])
    );

    let spec = gpu.template.spec.clone().unwrap_or_default();
    let tolerations = spec.tolerations.unwrap_or_default();
    assert_eq!(tolerations.len(), 1);
    let t = &tolerations[0];
    assert_eq!(
        (
            t.key.as_deref(),
            t.operator.as_deref(),
            t.value.as_deref(),
            t.effect.as_deref()
        ),
        (Some("gpu"), Some("Equal"), Some("a100"), Some("NoSchedule"))
    );
    assert_eq!(
        spec.volumes
            .as_ref()
            .and_then(|v| v[0].config_map.as_ref())
            .map(|c| c.name.as_str()),
        Some("code-cm")
    );
    let annotations = gpu
        .template
        .metadata
        .clone()
        .unwrap_or_default()
        .annotations
        .unwrap_or_default();
    assert_eq!(
        annotations["ray.io/compute-image"],
        "example.com/ray-ml:2.9.0-gpu"
    );
}

#[test]
fn autoscaling_and_head_service_are_kuberays() {
    let rc = built();
    assert_eq!(rc.spec.enable_in_tree_autoscaling, Some(true));
    let options = rc.spec.autoscaler_options.clone().unwrap_or_default();
    assert_eq!(options.idle_timeout_seconds, Some(120));
    assert_eq!(options.upscaling_mode, Some(UpscalingMode::Conservative));
    assert_eq!(options.image_pull_policy.as_deref(), Some("Always"));
    let limits = options.resources.and_then(|r| r.limits).unwrap_or_default();
    assert_eq!(
        (limits["cpu"].0.as_str(), limits["memory"].0.as_str()),
        ("1", "1Gi")
    );
    assert_eq!(
        options.env.map(|e| e[0].name.clone()).as_deref(),
        Some("AUTOSCALER_LOG_LEVEL")
    );
    assert_eq!(
        rc.spec.head_service_annotations.unwrap_or_default()["service.beta.kubernetes.io/internal"],
        "true"
    );
    // Autoscaler resources default per field, as KubeRay's do.
    let mut spec = fixtures::cluster_spec();
    if let Some(o) = spec.autoscaler_options.as_mut() {
        o.cpu.clear();
    }
    let rc = cluster_spec("2.9.0", None, &spec, &fixtures::templates(), false).unwrap_or_default();
    let limits = rc
        .autoscaler_options
        .and_then(|o| o.resources)
        .and_then(|r| r.limits)
        .unwrap_or_default();
    assert_eq!(limits["cpu"].0, "500m");
}

/// What reading the built cluster back gives: the request itself, in the server's namespace.
#[test]
fn round_trip() {
    let back = from_ray_cluster(&built(), vec![]);
    assert_eq!(back, fixtures::cluster());
    // Without the Serve annotation the head has only the Ray ports.
    let mut plain = fixtures::cluster();
    plain.annotations.clear();
    let rc = to_ray_cluster(&plain, &fixtures::templates(), CREATED).unwrap_or_default();
    assert_eq!(
        container(&rc.spec.head_group_spec.template)
            .ports
            .map(|p| p.len()),
        Some(4)
    );
    assert_eq!(from_ray_cluster(&rc, vec![]), plain);
}

#[test]
fn cluster_wide_variables_come_back_in_every_group() {
    let mut c = fixtures::cluster();
    c.envs = Some(EnvironmentVariables {
        values: map(&[("GLOBAL", "1"), ("RAY_LOG_LEVEL", "info")]),
        ..Default::default()
    });
    let rc = to_ray_cluster(&c, &fixtures::templates(), CREATED).unwrap_or_default();
    let head_env = container(&rc.spec.head_group_spec.template)
        .env
        .unwrap_or_default();
    // The group's own value of a variable wins over the cluster's, without a duplicate.
    assert_eq!(head_env.iter().filter(|v| v.name == "RAY_LOG_LEVEL").count(), 1);
    assert_eq!(
        head_env
            .iter()
            .find(|v| v.name == "RAY_LOG_LEVEL")
            .and_then(|v| v.value.as_deref()),
        Some("debug")
    );
    let back = from_ray_cluster(&rc, vec![]);
    assert_eq!(back.envs, None);
    let spec = back.cluster_spec.unwrap_or_default();
    for env in spec
        .worker_group_spec
        .iter()
        .map(|w| w.environment.clone().unwrap_or_default())
    {
        assert_eq!(env.values.get("GLOBAL").map(String::as_str), Some("1"));
    }
}

#[test]
fn operator_additions_are_left_out_when_reading() {
    let mut rc = built();
    let template = &mut rc.spec.head_group_spec.template;
    if let Some(meta) = template.metadata.as_mut() {
        meta.labels
            .get_or_insert_default()
            .insert("ray.io/node-type".into(), "head".into());
        meta.annotations
            .get_or_insert_default()
            .insert("ray.io/ft-enabled".into(), "false".into());
    }
    if let Some(spec) = template.spec.as_mut() {
        spec.containers[0].env.get_or_insert_default().push(EnvVar {
            name: "RAY_ADDRESS".into(),
            value: Some("127.0.0.1:6379".into()),
            value_from: None,
        });
    }
    let mut status = kuberay_crds::RayClusterStatus {
        state: Some(kuberay_crds::ClusterState::Ready),
        endpoints: Some(BTreeMap::from([("dashboard".to_owned(), "8265".to_owned())])),
        ..Default::default()
    };
    rc.status = Some(status.clone());
    let back = from_ray_cluster(&rc, vec![]);
    assert_eq!(back.cluster_state, "ready");
    assert_eq!(back.service_endpoint, map(&[("dashboard", "8265")]));
    assert_eq!(back.cluster_spec, fixtures::cluster().cluster_spec);
    status.state = None;
    rc.status = Some(status);
    assert_eq!(from_ray_cluster(&rc, vec![]).cluster_state, "");
}

#[test]
fn a_missing_template_is_an_internal_error() {
    let mut templates = fixtures::templates();
    templates.remove("gpu-small");
    let err = to_ray_cluster(&fixtures::cluster(), &templates, CREATED).err();
    assert!(matches!(err, Some(ApiError::Internal(m)) if m.contains("gpu-small")));
}
