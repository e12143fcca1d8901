//! Checks of the parts of a request: cluster specs and their groups, volumes, environment variables,
//! tolerations, and the job and service settings KubeRay's operator would otherwise reject later.

use std::collections::{HashMap, HashSet};

use kuberay_plugin_sdk::ray::jobs::{JobSubmitRequest, runtime_env_from_yaml};

use super::{invalid, is_qualified_name, is_quantity, syntax};
use crate::{
    api::{self, env_value_from::Source, volume::VolumeType},
    error::ApiResult,
};

const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent"];
const SERVICE_TYPES: &[&str] = &["ClusterIP", "NodePort", "LoadBalancer"];
const UPSCALING_MODES: &[&str] = &["Default", "Conservative", "Aggressive"];
const TOLERATION_OPERATORS: &[&str] = &["Exists", "Equal"];
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

fn one_of(field: &str, value: &str, allowed: &[&str]) -> ApiResult<()> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(invalid(format!(
        "{field} {value:?} is not one of {}",
        allowed.join(", ")
    )))
}

fn optional_one_of(field: &str, value: &str, allowed: &[&str]) -> ApiResult<()> {
    if value.is_empty() {
        return Ok(());
    }
    one_of(field, value, allowed)
}

fn quantity(field: &str, value: &str) -> ApiResult<()> {
    if !value.is_empty() && !is_quantity(value) {
        return Err(invalid(format!(
            "{field} {value:?} is not a Kubernetes quantity (such as 500m, 2 or 4Gi)"
        )));
    }
    Ok(())
}

/// Annotation keys (values are free).
pub(super) fn annotations(field: &str, map: &HashMap<String, String>) -> ApiResult<()> {
    match map.keys().find(|k| !is_qualified_name(k)) {
        Some(key) => Err(invalid(format!("{field}: {key:?} is not a valid annotation key"))),
        None => Ok(()),
    }
}

fn labels(field: &str, map: &HashMap<String, String>) -> ApiResult<()> {
    for (key, value) in map {
        if !is_qualified_name(key) {
            return Err(invalid(format!("{field}: {key:?} is not a valid label key")));
        }
        if !syntax::is_label_value(value) {
            return Err(invalid(format!(
                "{field}: the value {value:?} of {key:?} is not a valid label value"
            )));
        }
    }
    Ok(())
}

/// A cluster spec; `version` must be set when a group's image is derived from it.
pub(super) fn cluster_spec(field: &str, spec: &api::ClusterSpec, version: &str) -> ApiResult<()> {
    let head = spec
        .head_group_spec
        .as_ref()
        .ok_or_else(|| invalid(format!("{field}.headGroupSpec is required")))?;
    head_group(&format!("{field}.headGroupSpec"), head)?;
    let mut names = HashSet::new();
    for (i, worker) in spec.worker_group_spec.iter().enumerate() {
        let field = format!("{field}.workerGroupSpec[{i}]");
        worker_group(&field, worker)?;
        if !names.insert(worker.group_name.as_str()) {
            return Err(invalid(format!(
                "{field}.groupName {:?} is used by another worker group",
                worker.group_name
            )));
        }
    }
    let derived_image = head.image.is_empty() || spec.worker_group_spec.iter().any(|w| w.image.is_empty());
    if version.is_empty() && derived_image {
        return Err(invalid(format!(
            "version is empty: it is required when a group of {field} has no image (the default image is \
             rayproject/ray:<version>)"
        )));
    }
    annotations(
        &format!("{field}.headServiceAnnotations"),
        &spec.head_service_annotations,
    )?;
    if spec.enable_in_tree_autoscaling
        && let Some(options) = &spec.autoscaler_options
    {
        autoscaler(&format!("{field}.autoscalerOptions"), options)?;
    }
    Ok(())
}

/// The name of the compute template a group uses: one a template could have.
fn template_name(field: &str, name: &str) -> ApiResult<()> {
    if name.is_empty() {
        return Err(invalid(format!("{field}.computeTemplate is empty")));
    }
    if name.len() > 63 || !syntax::is_dns1123_subdomain(name) {
        return Err(invalid(format!(
            "{field}.computeTemplate {name:?} is not a valid template name"
        )));
    }
    Ok(())
}

fn head_group(field: &str, head: &api::HeadGroupSpec) -> ApiResult<()> {
    template_name(field, &head.compute_template)?;
    if head.ray_start_params.is_empty() {
        return Err(invalid(format!("{field}.rayStartParams is empty")));
    }
    optional_one_of(
        &format!("{field}.imagePullPolicy"),
        &head.image_pull_policy,
        PULL_POLICIES,
    )?;
    optional_one_of(&format!("{field}.serviceType"), &head.service_type, SERVICE_TYPES)?;
    node_group(
        field,
        &head.volumes,
        head.environment.as_ref(),
        &head.annotations,
        &head.labels,
    )
}

fn worker_group(field: &str, worker: &api::WorkerGroupSpec) -> ApiResult<()> {
    if worker.group_name.is_empty() {
        return Err(invalid(format!("{field}.groupName is empty")));
    }
    if !syntax::is_label_value(&worker.group_name) {
        return Err(invalid(format!(
            "{field}.groupName {:?} is not a valid label value",
            worker.group_name
        )));
    }
    template_name(field, &worker.compute_template)?;
    if worker.max_replicas <= 0 {
        return Err(invalid(format!("{field}.maxReplicas must be greater than 0")));
    }
    if worker.min_replicas < 0 || worker.replicas < 0 {
        return Err(invalid(format!(
            "{field}.replicas and minReplicas must not be negative"
        )));
    }
    if worker.min_replicas > worker.max_replicas {
        return Err(invalid(format!(
            "{field}.minReplicas ({}) is greater than maxReplicas ({})",
            worker.min_replicas, worker.max_replicas
        )));
    }
    optional_one_of(
        &format!("{field}.imagePullPolicy"),
        &worker.image_pull_policy,
        PULL_POLICIES,
    )?;
    node_group(
        field,
        &worker.volumes,
        worker.environment.as_ref(),
        &worker.annotations,
        &worker.labels,
    )
}

fn node_group(
    field: &str,
    volumes: &[api::Volume],
    environment_: Option<&api::EnvironmentVariables>,
    annotations_: &HashMap<String, String>,
    labels_: &HashMap<String, String>,
) -> ApiResult<()> {
    let mut names = HashSet::new();
    for (i, v) in volumes.iter().enumerate() {
        let field = format!("{field}.volumes[{i}]");
        volume(&field, v)?;
        if !names.insert(v.name.as_str()) {
            return Err(invalid(format!(
                "{field}.name {:?} is used by another volume",
                v.name
            )));
        }
    }
    if let Some(env) = environment_ {
        environment(&format!("{field}.environment"), env)?;
    }
    annotations(&format!("{field}.annotations"), annotations_)?;
    labels(&format!("{field}.labels"), labels_)
}

fn volume(field: &str, v: &api::Volume) -> ApiResult<()> {
    if v.name.is_empty() || !syntax::is_dns1123_label(&v.name) {
        return Err(invalid(format!(
            "{field}.name {:?} is not a valid volume name (a DNS-1123 label)",
            v.name
        )));
    }
    if v.mount_path.is_empty() {
        return Err(invalid(format!("{field}.mountPath is empty")));
    }
    let kind = VolumeType::try_from(v.volume_type).map_err(|_| {
        invalid(format!(
            "{field}.volumeType {} is not a volume type",
            v.volume_type
        ))
    })?;
    for (name, value, ok) in [
        (
            "hostPathType",
            v.host_path_type,
            api::volume::HostPathType::try_from(v.host_path_type).is_ok(),
        ),
        (
            "mountPropagationMode",
            v.mount_propagation_mode,
            api::volume::MountPropagationMode::try_from(v.mount_propagation_mode).is_ok(),
        ),
        (
            "accessMode",
            v.access_mode,
            api::volume::AccessMode::try_from(v.access_mode).is_ok(),
        ),
    ] {
        if !ok {
            return Err(invalid(format!("{field}.{name} {value} is not a known value")));
        }
    }
    let needs_source = matches!(
        kind,
        VolumeType::PersistentVolumeClaim | VolumeType::HostPath | VolumeType::Configmap | VolumeType::Secret
    );
    if needs_source && v.source.is_empty() {
        return Err(invalid(format!(
            "{field}.source is empty: a {} volume needs one",
            kind.as_str_name()
        )));
    }
    if kind == VolumeType::Ephemeral && v.storage.is_empty() {
        return Err(invalid(format!(
            "{field}.storage is empty: an EPHEMERAL volume needs its size"
        )));
    }
    quantity(&format!("{field}.storage"), &v.storage)
}

/// Environment variables: valid names and complete references.
pub(super) fn environment(field: &str, env: &api::EnvironmentVariables) -> ApiResult<()> {
    let names = env.values.keys().chain(env.values_from.keys());
    if let Some(name) = names.clone().find(|n| n.is_empty() || n.contains('=')) {
        return Err(invalid(format!("{field}: {name:?} is not a valid variable name")));
    }
    for (name, from) in &env.values_from {
        let source = Source::try_from(from.source).map_err(|_| {
            invalid(format!(
                "{field}.valuesFrom[{name:?}].source {} is not a known source",
                from.source
            ))
        })?;
        let needs_name = matches!(source, Source::Configmap | Source::Secret);
        if (needs_name && from.name.is_empty()) || from.key.is_empty() {
            return Err(invalid(format!(
                "{field}.valuesFrom[{name:?}] needs {} (source {})",
                if needs_name { "a name and a key" } else { "a key" },
                source.as_str_name()
            )));
        }
    }
    Ok(())
}

fn autoscaler(field: &str, options: &api::AutoscalerOptions) -> ApiResult<()> {
    optional_one_of(
        &format!("{field}.upscalingMode"),
        &options.upscaling_mode,
        UPSCALING_MODES,
    )?;
    optional_one_of(
        &format!("{field}.imagePullPolicy"),
        &options.image_pull_policy,
        PULL_POLICIES,
    )?;
    if options.idle_timeout_seconds < 0 {
        return Err(invalid(format!(
            "{field}.idleTimeoutSeconds must not be negative"
        )));
    }
    quantity(&format!("{field}.cpu"), &options.cpu)?;
    quantity(&format!("{field}.memory"), &options.memory)?;
    if let Some(env) = &options.envs {
        environment(&format!("{field}.envs"), env)?;
        // The autoscaler takes references as whole ConfigMaps or Secrets (`envFrom`).
        if let Some((name, _)) = env
            .values_from
            .iter()
            .find(|(_, f)| !matches!(f.source(), Source::Configmap | Source::Secret))
        {
            return Err(invalid(format!(
                "{field}.envs.valuesFrom[{name:?}]: the autoscaler only takes CONFIGMAP or SECRET sources"
            )));
        }
    }
    for (i, v) in options.volumes.iter().enumerate() {
        if v.name.is_empty() || v.mount_path.is_empty() {
            return Err(invalid(format!(
                "{field}.volumes[{i}] needs a name and a mountPath"
            )));
        }
    }
    Ok(())
}

/// A compute template's toleration.
pub(super) fn toleration(field: &str, t: &api::PodToleration) -> ApiResult<()> {
    one_of(&format!("{field}.operator"), &t.operator, TOLERATION_OPERATORS)?;
    one_of(&format!("{field}.effect"), &t.effect, TAINT_EFFECTS)?;
    if t.key.is_empty() && t.operator != "Exists" {
        return Err(invalid(format!(
            "{field}.key is empty: only an Exists toleration may leave it out"
        )));
    }
    if !t.key.is_empty() && !is_qualified_name(&t.key) {
        return Err(invalid(format!(
            "{field}.key {:?} is not a valid taint key",
            t.key
        )));
    }
    if t.operator == "Exists" && !t.value.is_empty() {
        return Err(invalid(format!(
            "{field}.value must be empty when the operator is Exists"
        )));
    }
    Ok(())
}

/// The job's own settings (not its cluster): numbers in range, a runtime environment and entrypoint
/// resources Ray can read, a complete submitter.
pub(super) fn job_settings(job: &api::RayJob) -> ApiResult<()> {
    for (name, value) in [
        ("ttlSecondsAfterFinished", job.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", job.active_deadline_seconds),
    ] {
        if value < 0 {
            return Err(invalid(format!("job.{name} must not be negative (got {value})")));
        }
    }
    for (name, value) in [
        ("entrypointNumCpus", job.entrypoint_num_cpus),
        ("entrypointNumGpus", job.entrypoint_num_gpus),
    ] {
        if !value.is_finite() || value < 0.0 {
            return Err(invalid(format!(
                "job.{name} must be a number of at least 0 (got {value})"
            )));
        }
    }
    runtime_env_from_yaml(&job.runtime_env).map_err(|e| invalid(format!("job.runtimeEnv: {e}")))?;
    JobSubmitRequest::default()
        .entrypoint_resources_json(Some(&job.entrypoint_resources))
        .map_err(|e| invalid(format!("job.{e}")))?;
    if let Some(submitter) = &job.job_submitter {
        if submitter.image.is_empty() {
            return Err(invalid("job.jobSubmitter.image is empty"));
        }
        quantity("job.jobSubmitter.cpu", &submitter.cpu)?;
        quantity("job.jobSubmitter.memory", &submitter.memory)?;
    }
    Ok(())
}

/// Ray Serve's config: required, and a YAML mapping.
pub(super) fn serve_config(config: &str) -> ApiResult<()> {
    if config.trim().is_empty() {
        return Err(invalid(
            "service.serveConfigV2 is empty: a RayService needs its Serve config",
        ));
    }
    match serde_yaml::from_str::<serde_yaml::Value>(config) {
        Ok(serde_yaml::Value::Mapping(_)) => Ok(()),
        Ok(_) => Err(invalid("service.serveConfigV2 is not a YAML mapping")),
        Err(e) => Err(invalid(format!("service.serveConfigV2 is not valid YAML: {e}"))),
    }
}
