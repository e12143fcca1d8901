//! The validation matrix: every rule with a request it refuses (and the field its message names) and a
//! request it accepts.

use super::*;
use crate::{
    api::{EnvValueFrom, PodToleration, env_value_from::Source, volume::VolumeType},
    convert::fixtures::{self, map},
};

#[track_caller]
fn refused<T: std::fmt::Debug>(result: ApiResult<T>, needle: &str) {
    match result {
        Err(ApiError::InvalidArgument(message)) => {
            assert!(
                message.contains(needle),
                "{message:?} does not mention {needle:?}"
            );
        }
        other => panic!("expected InvalidArgument mentioning {needle:?}, got {other:?}"),
    }
}

#[track_caller]
fn accepted<T: std::fmt::Debug>(result: ApiResult<T>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("expected the request to be accepted, got {e:?}"),
    }
}

fn create_cluster_with(change: impl FnOnce(&mut api::CreateClusterRequest)) -> ApiResult<api::Cluster> {
    let mut request = api::CreateClusterRequest {
        cluster: Some(fixtures::cluster()),
        namespace: "team-a".into(),
    };
    change(&mut request);
    create_cluster(request)
}

fn cluster_with(change: impl FnOnce(&mut api::Cluster)) -> ApiResult<api::Cluster> {
    create_cluster_with(|r| {
        if let Some(c) = r.cluster.as_mut() {
            change(c);
        }
    })
}

fn spec_with(change: impl FnOnce(&mut api::ClusterSpec)) -> ApiResult<api::Cluster> {
    cluster_with(|c| {
        if let Some(s) = c.cluster_spec.as_mut() {
            change(s);
        }
    })
}

fn head_with(change: impl FnOnce(&mut api::HeadGroupSpec)) -> ApiResult<api::Cluster> {
    spec_with(|s| {
        if let Some(h) = s.head_group_spec.as_mut() {
            change(h);
        }
    })
}

fn worker_with(change: impl FnOnce(&mut api::WorkerGroupSpec)) -> ApiResult<api::Cluster> {
    spec_with(|s| change(&mut s.worker_group_spec[0]))
}

fn head_volume_with(change: impl FnOnce(&mut api::Volume)) -> ApiResult<api::Cluster> {
    head_with(|h| change(&mut h.volumes[0]))
}

fn autoscaler_with(change: impl FnOnce(&mut api::AutoscalerOptions)) -> ApiResult<api::Cluster> {
    spec_with(|s| {
        if let Some(o) = s.autoscaler_options.as_mut() {
            change(o);
        }
    })
}

#[test]
fn the_sample_cluster_is_valid_and_takes_the_paths_namespace() {
    let cluster = accepted(create_cluster_with(|_| {}));
    assert_eq!(cluster.namespace, "team-a");
    let cluster = accepted(cluster_with(|c| c.namespace.clear()));
    assert_eq!(cluster.namespace, "team-a");
}

#[test]
fn request_paths() {
    refused(create_cluster_with(|r| r.namespace.clear()), "namespace is empty");
    refused(
        create_cluster_with(|r| r.namespace = "Team_A".into()),
        "not a valid namespace",
    );
    refused(create_cluster_with(|r| r.cluster = None), "cluster is required");
    refused(
        cluster_with(|c| c.namespace = "other".into()),
        "cluster.namespace \"other\" differs",
    );
    refused(
        object_ref("Cluster", "team-a", ""),
        "Cluster name is empty. Please specify a valid value.",
    );
    refused(object_ref("Cluster", "", "x"), "namespace is empty");
    accepted(object_ref("Cluster", "team-a", "x"));
    accepted(object_ref("Cluster", "team-a", "made.by-kubectl.1"));
    // Names no object can have never reach Kubernetes (as path segments they would change the request).
    for bad in [
        "#x",
        "x?watch=true",
        "a/../b",
        "x\u{10}",
        "Upper",
        "é",
        ".x",
        &"x".repeat(254),
    ] {
        refused(
            object_ref("Cluster", "team-a", bad),
            "is not a valid Kubernetes object name",
        );
    }
    refused(
        path_name("clustername", "c#"),
        "clustername \"c#\" is not a valid",
    );
    refused(page_size("limit", -1), "limit must not be negative");
    accepted(page_size("limit", 0));
}

#[test]
fn cluster_identity() {
    refused(cluster_with(|c| c.name.clear()), "cluster.name is empty");
    refused(
        cluster_with(|c| c.name = "Demo".into()),
        "not a valid RayCluster name",
    );
    refused(
        cluster_with(|c| c.name = "1demo".into()),
        "not a valid RayCluster name",
    );
    refused(cluster_with(|c| c.name = "a".repeat(54)), "at most 53 characters");
    accepted(cluster_with(|c| c.name = "a".repeat(53)));
    refused(cluster_with(|c| c.user.clear()), "cluster.user is empty");
    refused(
        cluster_with(|c| c.user = "alice@example.com".into()),
        "cluster.user \"alice@example.com\" is not a valid label value",
    );
    refused(cluster_with(|c| c.version = "2.9 beta".into()), "cluster.version");
    refused(cluster_with(|c| c.environment = 9), "cluster.environment");
    refused(
        cluster_with(|c| c.annotations = map(&[("bad key", "x")])),
        "cluster.annotations",
    );
}

#[test]
fn version_is_needed_only_for_default_images() {
    refused(cluster_with(|c| c.version.clear()), "version is empty");
    accepted(cluster_with(|c| {
        c.version.clear();
        if let Some(s) = c.cluster_spec.as_mut() {
            if let Some(h) = s.head_group_spec.as_mut() {
                h.image = "example.com/ray:custom".into();
            }
            for w in &mut s.worker_group_spec {
                w.image = "example.com/ray:custom".into();
            }
        }
    }));
}

#[test]
fn environment_variables() {
    let with_env = |name: &str, from: EnvValueFrom| {
        cluster_with(|c| {
            c.envs = Some(api::EnvironmentVariables {
                values_from: [(name.to_owned(), from)].into(),
                ..Default::default()
            });
        })
    };
    let from = |source: i32, name: &str, key: &str| EnvValueFrom {
        source,
        name: name.into(),
        key: key.into(),
    };
    refused(
        with_env("A=B", from(0, "cm", "k")),
        "\"A=B\" is not a valid variable name",
    );
    refused(
        with_env("A", from(7, "cm", "k")),
        "cluster.envs.valuesFrom[\"A\"].source 7",
    );
    refused(
        with_env("A", from(Source::Configmap.into(), "", "k")),
        "needs a name and a key",
    );
    refused(with_env("A", from(Source::Field.into(), "", "")), "needs a key");
    accepted(with_env("A", from(Source::Field.into(), "", "status.hostIP")));
    refused(
        head_with(|h| {
            h.environment = Some(api::EnvironmentVariables {
                values: map(&[("", "x")]),
                ..Default::default()
            })
        }),
        "headGroupSpec.environment",
    );
}

#[test]
fn head_group() {
    refused(
        spec_with(|s| s.head_group_spec = None),
        "cluster.clusterSpec.headGroupSpec is required",
    );
    refused(
        cluster_with(|c| c.cluster_spec = None),
        "cluster.clusterSpec is required",
    );
    refused(
        head_with(|h| h.compute_template.clear()),
        "headGroupSpec.computeTemplate is empty",
    );
    refused(
        head_with(|h| h.compute_template = "a/b".into()),
        "headGroupSpec.computeTemplate \"a/b\" is not a valid template name",
    );
    refused(
        head_with(|h| h.ray_start_params.clear()),
        "headGroupSpec.rayStartParams is empty",
    );
    refused(
        head_with(|h| h.image_pull_policy = "Never".into()),
        "headGroupSpec.imagePullPolicy \"Never\"",
    );
    refused(
        head_with(|h| h.image_pull_policy = "always".into()),
        "headGroupSpec.imagePullPolicy",
    );
    accepted(head_with(|h| h.image_pull_policy = "IfNotPresent".into()));
    refused(
        head_with(|h| h.service_type = "ExternalName".into()),
        "headGroupSpec.serviceType",
    );
    accepted(head_with(|h| h.service_type = "NodePort".into()));
    refused(
        head_with(|h| h.labels = map(&[("team", "a b")])),
        "headGroupSpec.labels",
    );
    refused(
        head_with(|h| h.labels = map(&[("a/b/c", "x")])),
        "headGroupSpec.labels",
    );
    refused(
        head_with(|h| h.annotations = map(&[("-x", "1")])),
        "headGroupSpec.annotations",
    );
    refused(
        spec_with(|s| s.head_service_annotations = map(&[("bad key", "1")])),
        "headServiceAnnotations",
    );
}

#[test]
fn worker_groups() {
    refused(
        worker_with(|w| w.group_name.clear()),
        "workerGroupSpec[0].groupName is empty",
    );
    refused(
        worker_with(|w| w.group_name = "cpu workers".into()),
        "workerGroupSpec[0].groupName",
    );
    refused(
        worker_with(|w| w.compute_template.clear()),
        "workerGroupSpec[0].computeTemplate is empty",
    );
    refused(
        worker_with(|w| w.compute_template = "Big".into()),
        "workerGroupSpec[0].computeTemplate \"Big\"",
    );
    refused(
        worker_with(|w| w.max_replicas = 0),
        "workerGroupSpec[0].maxReplicas must be greater than 0",
    );
    refused(
        worker_with(|w| w.min_replicas = 6),
        "workerGroupSpec[0].minReplicas (6) is greater than maxReplicas (5)",
    );
    refused(worker_with(|w| w.replicas = -1), "must not be negative");
    refused(
        worker_with(|w| w.image_pull_policy = "Sometimes".into()),
        "workerGroupSpec[0].imagePullPolicy",
    );
    accepted(worker_with(|w| w.image_pull_policy = "Always".into()));
    refused(
        spec_with(|s| s.worker_group_spec[1].group_name = "cpu".into()),
        "workerGroupSpec[1].groupName \"cpu\" is used",
    );
    accepted(spec_with(|s| s.worker_group_spec.clear()));
}

#[test]
fn volumes() {
    refused(head_volume_with(|v| v.name.clear()), "volumes[0].name");
    refused(
        head_volume_with(|v| v.name = "Code".into()),
        "volumes[0].name \"Code\"",
    );
    refused(
        head_volume_with(|v| v.mount_path.clear()),
        "volumes[0].mountPath is empty",
    );
    refused(
        head_volume_with(|v| v.volume_type = 42),
        "volumes[0].volumeType 42",
    );
    refused(
        head_volume_with(|v| v.mount_propagation_mode = 9),
        "volumes[0].mountPropagationMode 9",
    );
    refused(
        head_volume_with(|v| v.source.clear()),
        "volumes[0].source is empty",
    );
    refused(head_volume_with(|v| v.access_mode = 5), "volumes[0].accessMode 5");
    refused(
        head_with(|h| h.volumes[1].name = "code".into()),
        "volumes[1].name \"code\" is used",
    );
    refused(
        head_with(|h| h.volumes[5].storage.clear()),
        "volumes[5].storage is empty",
    );
    refused(
        head_with(|h| h.volumes[5].storage = "10 GB".into()),
        "volumes[5].storage \"10 GB\"",
    );
    refused(
        head_with(|h| h.volumes[2].storage = "lots".into()),
        "volumes[2].storage",
    );
    accepted(head_with(|h| h.volumes[2].storage.clear()));
    accepted(head_volume_with(|v| v.set_volume_type(VolumeType::EmptyDir)));
}

#[test]
fn autoscaler_options() {
    refused(
        autoscaler_with(|o| o.upscaling_mode = "Fast".into()),
        "autoscalerOptions.upscalingMode \"Fast\"",
    );
    accepted(autoscaler_with(|o| o.upscaling_mode = "Aggressive".into()));
    refused(
        autoscaler_with(|o| o.image_pull_policy = "Never".into()),
        "autoscalerOptions.imagePullPolicy",
    );
    refused(
        autoscaler_with(|o| o.cpu = "lots".into()),
        "autoscalerOptions.cpu \"lots\"",
    );
    refused(
        autoscaler_with(|o| o.memory = "1 Gi".into()),
        "autoscalerOptions.memory",
    );
    refused(
        autoscaler_with(|o| o.idle_timeout_seconds = -1),
        "autoscalerOptions.idleTimeoutSeconds",
    );
    refused(
        autoscaler_with(|o| {
            o.envs = Some(api::EnvironmentVariables {
                values_from: [(
                    "X".to_owned(),
                    EnvValueFrom {
                        source: Source::Field.into(),
                        name: String::new(),
                        key: "x".into(),
                    },
                )]
                .into(),
                ..Default::default()
            });
        }),
        "only takes CONFIGMAP or SECRET",
    );
    refused(
        autoscaler_with(|o| o.volumes = vec![api::Volume::default()]),
        "autoscalerOptions.volumes[0]",
    );
    // Options of a cluster without autoscaling are ignored.
    accepted(spec_with(|s| {
        s.enable_in_tree_autoscaling = false;
        if let Some(o) = s.autoscaler_options.as_mut() {
            o.upscaling_mode = "Fast".into();
        }
    }));
}

fn template_with(change: impl FnOnce(&mut api::ComputeTemplate)) -> ApiResult<api::ComputeTemplate> {
    let mut template = fixtures::gpu_template();
    change(&mut template);
    create_compute_template(api::CreateComputeTemplateRequest {
        compute_template: Some(template),
        namespace: "team-a".into(),
    })
}

fn toleration_with(change: impl FnOnce(&mut PodToleration)) -> ApiResult<api::ComputeTemplate> {
    template_with(|t| change(&mut t.tolerations[0]))
}

#[test]
fn compute_templates() {
    accepted(template_with(|_| {}));
    assert_eq!(
        accepted(template_with(|t| t.namespace.clear())).namespace,
        "team-a"
    );
    refused(
        template_with(|t| t.namespace = "team-b".into()),
        "computeTemplate.namespace \"team-b\" differs",
    );
    refused(
        create_compute_template(api::CreateComputeTemplateRequest {
            compute_template: None,
            namespace: "team-a".into(),
        }),
        "computeTemplate is required",
    );
    refused(template_with(|t| t.name.clear()), "computeTemplate.name is empty");
    refused(
        template_with(|t| t.name = "Small_T".into()),
        "computeTemplate.name \"Small_T\"",
    );
    refused(template_with(|t| t.name = "t".repeat(64)), "computeTemplate.name");
    accepted(template_with(|t| t.name = "small.v2".into()));
    refused(
        template_with(|t| t.cpu = 0),
        "computeTemplate.cpu must be greater than 0",
    );
    refused(
        template_with(|t| t.memory = 0),
        "computeTemplate.memory must be greater than 0",
    );
    refused(
        template_with(|t| t.memory_unit = "GB".into()),
        "computeTemplate.memoryUnit \"GB\"",
    );
    refused(
        template_with(|t| t.memory_unit = "m".into()),
        "computeTemplate.memoryUnit",
    );
    accepted(template_with(|t| t.memory_unit = "Mi".into()));
    accepted(template_with(|t| t.memory_unit.clear()));
    refused(
        template_with(|t| t.gpu_accelerator = "nvidia gpu".into()),
        "computeTemplate.gpuAccelerator",
    );
    refused(
        template_with(|t| t.extended_resources = [("bad name".to_owned(), 1)].into()),
        "computeTemplate.extendedResources",
    );
}

#[test]
fn tolerations() {
    refused(
        toleration_with(|t| t.operator = "In".into()),
        "computeTemplate.tolerations[0].operator \"In\"",
    );
    refused(toleration_with(|t| t.operator.clear()), "tolerations[0].operator");
    refused(
        toleration_with(|t| t.effect = "Sometimes".into()),
        "computeTemplate.tolerations[0].effect",
    );
    refused(toleration_with(|t| t.effect.clear()), "tolerations[0].effect");
    refused(toleration_with(|t| t.key.clear()), "tolerations[0].key is empty");
    refused(
        toleration_with(|t| t.key = "a b".into()),
        "tolerations[0].key \"a b\"",
    );
    refused(
        toleration_with(|t| t.operator = "Exists".into()),
        "tolerations[0].value must be empty",
    );
    accepted(toleration_with(|t| {
        t.operator = "Exists".into();
        t.key.clear();
        t.value.clear();
    }));
}

fn job() -> api::RayJob {
    api::RayJob {
        name: "train".into(),
        user: "alice".into(),
        version: "2.9.0".into(),
        entrypoint: "python train.py".into(),
        cluster_spec: Some(fixtures::cluster_spec()),
        runtime_env: "env_vars:\n  A: b\n".into(),
        entrypoint_resources: r#"{"custom": 1}"#.into(),
        ..Default::default()
    }
}

fn job_with(change: impl FnOnce(&mut api::RayJob)) -> ApiResult<api::RayJob> {
    let mut job = job();
    change(&mut job);
    create_job(api::CreateRayJobRequest {
        job: Some(job),
        namespace: "team-a".into(),
    })
}

#[test]
fn jobs() {
    assert_eq!(accepted(job_with(|_| {})).namespace, "team-a");
    refused(
        create_job(api::CreateRayJobRequest {
            job: None,
            namespace: "team-a".into(),
        }),
        "job is required",
    );
    refused(
        job_with(|j| j.namespace = "x".into()),
        "job.namespace \"x\" differs",
    );
    refused(job_with(|j| j.name = "j".repeat(48)), "at most 47 characters");
    accepted(job_with(|j| j.name = "j".repeat(47)));
    refused(job_with(|j| j.name = "Train".into()), "not a valid RayJob name");
    refused(job_with(|j| j.user.clear()), "job.user is empty");
    refused(job_with(|j| j.entrypoint = " ".into()), "job.entrypoint is empty");
    refused(
        job_with(|j| j.metadata = map(&[("bad key", "1")])),
        "job.metadata",
    );
    refused(
        job_with(|j| j.ttl_seconds_after_finished = -1),
        "job.ttlSecondsAfterFinished",
    );
    refused(
        job_with(|j| j.active_deadline_seconds = -5),
        "job.activeDeadlineSeconds",
    );
    refused(
        job_with(|j| j.entrypoint_num_cpus = -1.0),
        "job.entrypointNumCpus",
    );
    refused(
        job_with(|j| j.entrypoint_num_gpus = f32::NAN),
        "job.entrypointNumGpus",
    );
    refused(
        job_with(|j| j.runtime_env = "- a\n- b\n".into()),
        "job.runtimeEnv",
    );
    refused(job_with(|j| j.runtime_env = "a: [".into()), "job.runtimeEnv");
    refused(
        job_with(|j| j.entrypoint_resources = "{".into()),
        "job.entrypointResources",
    );
    refused(
        job_with(|j| j.entrypoint_resources = r#"{"a": "x"}"#.into()),
        "job.entrypointResources",
    );
    refused(
        job_with(|j| j.job_submitter = Some(api::RayJobSubmitter::default())),
        "job.jobSubmitter.image is empty",
    );
    refused(
        job_with(|j| {
            j.job_submitter = Some(api::RayJobSubmitter {
                image: "ray".into(),
                cpu: "one".into(),
                memory: String::new(),
            })
        }),
        "job.jobSubmitter.cpu",
    );
    refused(
        job_with(|j| j.cluster_spec = None),
        "job.clusterSpec (or job.clusterSelector) is required",
    );
    refused(
        job_with(|j| {
            if let Some(s) = j.cluster_spec.as_mut() {
                s.head_group_spec = None
            }
        }),
        "job.clusterSpec.headGroupSpec is required",
    );
}

#[test]
fn jobs_on_existing_clusters() {
    refused(
        job_with(|j| j.cluster_selector = map(&[("team", "a")])),
        "job.clusterSelector must name the cluster",
    );
    refused(
        job_with(|j| j.cluster_selector = map(&[("ray.io/cluster", "")])),
        "job.clusterSelector",
    );
    // The cluster spec is not checked (nor needed) when the job selects a cluster.
    accepted(job_with(|j| {
        j.cluster_selector = map(&[("ray.io/cluster", "demo")]);
        j.cluster_spec = None;
        j.version.clear();
    }));
}

fn service() -> api::RayService {
    api::RayService {
        name: "fruit".into(),
        user: "alice".into(),
        version: "2.9.0".into(),
        serve_config_v2: "applications:\n  - name: fruit\n    import_path: fruit.graph\n".into(),
        cluster_spec: Some(fixtures::cluster_spec()),
        ..Default::default()
    }
}

fn service_with(change: impl FnOnce(&mut api::RayService)) -> ApiResult<api::RayService> {
    let mut service = service();
    change(&mut service);
    create_service(api::CreateRayServiceRequest {
        service: Some(service),
        namespace: "team-a".into(),
    })
}

#[test]
fn services() {
    accepted(service_with(|_| {}));
    refused(
        create_service(api::CreateRayServiceRequest {
            service: None,
            namespace: "team-a".into(),
        }),
        "service is required",
    );
    refused(
        service_with(|s| s.namespace = "x".into()),
        "service.namespace \"x\" differs",
    );
    refused(
        service_with(|s| s.name = "s".repeat(48)),
        "not a valid RayService name",
    );
    refused(service_with(|s| s.user.clear()), "service.user is empty");
    refused(
        service_with(|s| s.serve_config_v2.clear()),
        "service.serveConfigV2 is empty",
    );
    refused(
        service_with(|s| s.serve_config_v2 = "just text".into()),
        "service.serveConfigV2 is not a YAML mapping",
    );
    refused(
        service_with(|s| s.serve_config_v2 = "a: [".into()),
        "service.serveConfigV2 is not valid YAML",
    );
    refused(
        service_with(|s| s.cluster_spec = None),
        "service.clusterSpec is required",
    );
    refused(service_with(|s| s.version.clear()), "version is empty");
}

#[test]
fn service_updates_follow_the_path() {
    let update = |name: &str, body_name: &str| {
        update_service(api::UpdateRayServiceRequest {
            service: Some(api::RayService {
                name: body_name.into(),
                ..service()
            }),
            namespace: "team-a".into(),
            name: name.into(),
        })
    };
    refused(update("", "fruit"), "name is empty");
    refused(update("fruit", "veggie"), "service.name \"veggie\" differs");
    let accepted_ = accepted(update("fruit", ""));
    assert_eq!(
        (accepted_.name.as_str(), accepted_.namespace.as_str()),
        ("fruit", "team-a")
    );
    accepted(update("fruit", "fruit"));
    refused(
        update_service(api::UpdateRayServiceRequest {
            service: None,
            namespace: "team-a".into(),
            name: "fruit".into(),
        }),
        "service is required",
    );
}
