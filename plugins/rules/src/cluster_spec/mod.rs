//! KubeRay's `ValidateRayClusterSpec`: groups, autoscaling, GCS fault tolerance, authentication and the
//! feature-gated options, with KubeRay's messages. The RayCluster plugin checks a cluster with it before
//! creating anything; the RayJob and RayService plugins check the cluster spec they carry with it (as KubeRay
//! does), so a bad spec is reported on the object the user wrote.

mod fault_tolerance;
mod gated;
mod gates;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Container;
use kuberay_crds::{AuthMode, AutoscalerVersion, RayClusterSpec, WorkerGroupSpec, constants::annotations};

use crate::{consts::env, env::exists, syntax, version::ray_version_at_least};
use fault_tolerance::validate_fault_tolerance;
use gated::{validate_history_server, validate_network_policy};
pub use gates::Gates;

/// In-tree autoscaling: `enableInTreeAutoscaling: true`.
pub fn autoscaling(spec: &RayClusterSpec) -> bool {
    spec.enable_in_tree_autoscaling == Some(true)
}

/// The autoscaler version the user chose explicitly; unset lets Ray pick by its own version.
pub fn autoscaler_version(spec: &RayClusterSpec) -> Option<AutoscalerVersion> {
    spec.autoscaler_options.as_ref().and_then(|o| o.version)
}

/// The user chose autoscaler v2 explicitly.
pub fn autoscaler_v2(spec: &RayClusterSpec) -> bool {
    autoscaler_version(spec) == Some(AutoscalerVersion::V2)
}

/// The worker group is suspended (`suspend: true`): its Pods are deleted and none created.
pub fn group_suspended(group: &WorkerGroupSpec) -> bool {
    group.suspend == Some(true)
}

/// GCS fault tolerance: `gcsFaultToleranceOptions`, or the legacy `ray.io/ft-enabled: "true"` annotation.
pub fn gcs_ft_enabled(spec: &RayClusterSpec, annotations: Option<&BTreeMap<String, String>>) -> bool {
    annotations
        .and_then(|a| a.get(annotations::RAY_FT_ENABLED))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || spec.gcs_fault_tolerance_options.is_some()
}

/// The value of the container's variable `name` (empty when it comes from a reference).
pub fn env_value<'a>(container: Option<&'a Container>, name: &str) -> Option<&'a str> {
    container?
        .env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .map(|e| e.value.as_deref().unwrap_or_default())
}

/// Whether the container sets the variable `name`.
pub fn env_set(container: Option<&Container>, name: &str) -> bool {
    container.is_some_and(|c| exists(c, name))
}

fn has_resource_params(params: Option<&BTreeMap<String, String>>) -> bool {
    let set = |k: &str| params.and_then(|p| p.get(k)).is_some_and(|v| !v.is_empty());
    set("num-cpus") || set("num-gpus") || set("memory") || set("resources")
}

fn validate_group_fields(
    group: &str,
    params: Option<&BTreeMap<String, String>>,
    resources: Option<&BTreeMap<String, String>>,
    group_labels: Option<&BTreeMap<String, String>>,
) -> Result<(), String> {
    if has_resource_params(params) && resources.is_some_and(|r| !r.is_empty()) {
        return Err(format!(
            "resource fields should not be set in both rayStartParams and Resources for {group} group; please use only one"
        ));
    }
    if params.is_some_and(|p| p.contains_key("labels")) {
        return Err(format!(
            "rayStartParams['labels'] is not supported for {group} group; please use the top-level Labels field instead"
        ));
    }
    let mut errors = Vec::new();
    for (key, value) in group_labels.into_iter().flatten() {
        if !syntax::is_qualified_name(key) {
            errors.push(format!("invalid label key for {group} group: '{key}'"));
        }
        if !syntax::is_label_value(value) {
            errors.push(format!(
                "invalid label value for key '{key}' in {group} group: '{value}'"
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The rules of KubeRay's `ValidateRayClusterSpec`, in its order, for a cluster spec and the annotations of
/// the object that carries it, under the feature gates `gates`.
pub fn validate_spec(
    spec: &RayClusterSpec,
    annotations: Option<&BTreeMap<String, String>>,
    gates: Gates,
) -> Result<(), String> {
    let head = &spec.head_group_spec;
    let head_container = head.template.spec.as_ref().and_then(|s| s.containers.first());
    if head_container.is_none() {
        return Err("headGroupSpec should have at least one container".into());
    }
    validate_group_fields(
        "Head",
        head.ray_start_params.as_ref(),
        head.resources.as_ref(),
        head.labels.as_ref(),
    )?;
    let autoscaling = autoscaling(spec);
    let v2_env = matches!(
        env_value(head_container, env::RAY_ENABLE_AUTOSCALER_V2),
        Some("1" | "true")
    );
    for group in spec.worker_group_specs.iter().flatten() {
        let name = &group.group_name;
        if group
            .template
            .spec
            .as_ref()
            .is_none_or(|s| s.containers.is_empty())
        {
            return Err("workerGroupSpec should have at least one container".into());
        }
        if !autoscaling && (group.min_replicas.is_none() || group.max_replicas.is_none()) {
            return Err(format!(
                "worker group {name} must set both minReplicas and maxReplicas when autoscaling is disabled"
            ));
        }
        if let Some(min) = group.min_replicas.filter(|m| *m < 0) {
            return Err(format!("worker group {name} has negative minReplicas {min}"));
        }
        if let Some(max) = group.max_replicas.filter(|m| *m < 0) {
            return Err(format!("worker group {name} has negative maxReplicas {max}"));
        }
        if let (Some(min), Some(max)) = (group.min_replicas, group.max_replicas)
            && min > max
        {
            return Err(format!(
                "worker group {name} has minReplicas {min} greater than maxReplicas {max}"
            ));
        }
        validate_group_fields(
            name,
            group.ray_start_params.as_ref(),
            group.resources.as_ref(),
            group.labels.as_ref(),
        )?;
        if let Some(timeout) = group.idle_timeout_seconds {
            if timeout < 0 {
                return Err(format!(
                    "worker group {name}: idleTimeoutSeconds must be non-negative, got {timeout}"
                ));
            }
            if !autoscaler_v2(spec) && !v2_env {
                return Err(format!(
                    "worker group {name}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set \
                     .spec.autoscalerOptions.version to 'v2' (or set {} environment variable to 'true' in the head \
                     pod if using KubeRay < 1.4.0)",
                    env::RAY_ENABLE_AUTOSCALER_V2
                ));
            }
        }
        if let Some(priority) = group.priority.filter(|p| *p != 0) {
            let version = spec.ray_version.as_deref().unwrap_or_default();
            if version.is_empty() {
                return Err(format!(
                    "worker group {name}: priority is set, but RayVersion was not specified. Ray version 2.56.0 or later is required"
                ));
            }
            if crate::version::parse(version).is_none() {
                return Err(format!(
                    "worker group {name}: priority is set, but RayVersion format is invalid: {version}"
                ));
            }
            if !ray_version_at_least(version, &[2, 56, 0]) {
                return Err(format!(
                    "worker group {name}: priority is set, but minimum Ray version is 2.56.0, got {version}"
                ));
            }
            if !autoscaler_v2(spec) && !v2_env {
                return Err(format!(
                    "worker group {name}: priority is set to {priority}, but autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled"
                ));
            }
        }
    }
    validate_fault_tolerance(spec, annotations, head_container, gates)?;
    if !autoscaling && v2_env {
        let value = env_value(head_container, env::RAY_ENABLE_AUTOSCALER_V2).unwrap_or_default();
        return Err(format!(
            "environment variable {} cannot be set to '{value}' when enableInTreeAutoscaling is false. Please set \
             enableInTreeAutoscaling: true to use autoscaler v2",
            env::RAY_ENABLE_AUTOSCALER_V2
        ));
    }
    if autoscaling {
        validate_autoscaling(spec, head_container)?;
    }
    validate_options(spec, gates)
}

fn validate_autoscaling(spec: &RayClusterSpec, head: Option<&Container>) -> Result<(), String> {
    for group in spec.worker_group_specs.iter().flatten() {
        if group_suspended(group) {
            return Err(format!(
                "worker group {} cannot be suspended with Autoscaler enabled",
                group.group_name
            ));
        }
    }
    if autoscaler_version(spec).is_some() && env_set(head, env::RAY_ENABLE_AUTOSCALER_V2) {
        return Err(format!(
            "both .spec.autoscalerOptions.version and head Pod env var {} are set, please only use the former",
            env::RAY_ENABLE_AUTOSCALER_V2
        ));
    }
    if autoscaler_v2(spec) {
        let never = |policy: Option<&String>| policy.is_none_or(|p| p.is_empty() || p == "Never");
        if !never(
            spec.head_group_spec
                .template
                .spec
                .as_ref()
                .and_then(|s| s.restart_policy.as_ref()),
        ) {
            return Err(
                "restartPolicy for head Pod should be Never or unset when using autoscaler V2".into(),
            );
        }
        for group in spec.worker_group_specs.iter().flatten() {
            if !never(
                group
                    .template
                    .spec
                    .as_ref()
                    .and_then(|s| s.restart_policy.as_ref()),
            ) {
                return Err(format!(
                    "restartPolicy for worker group {} should be Never or unset when using autoscaler V2",
                    group.group_name
                ));
            }
        }
    }
    Ok(())
}

/// Autoscaler options, authentication and the feature-gated alpha features.
fn validate_options(spec: &RayClusterSpec, gates: Gates) -> Result<(), String> {
    if let Some(options) = &spec.autoscaler_options {
        if let Some(timeout) = options.idle_timeout_seconds.filter(|t| *t < 0) {
            return Err(format!(
                "autoscalerOptions.idleTimeoutSeconds must be non-negative, got {timeout}"
            ));
        }
        if options
            .env
            .iter()
            .flatten()
            .any(|e| e.name == env::KUBERAY_GEN_AUTOSCALER_START_CMD)
        {
            return Err(format!(
                "autoscalerOptions.env must not contain {}: it is managed by KubeRay and injected automatically \
                 into the autoscaler container",
                env::KUBERAY_GEN_AUTOSCALER_START_CMD
            ));
        }
    }
    validate_history_server(spec, gates)?;
    let auth = spec.auth_options.as_ref();
    let k8s_auth = auth.and_then(|a| a.enable_k8s_token_auth) == Some(true);
    if auth.and_then(|a| a.mode) == Some(AuthMode::Token) {
        let version = spec.ray_version.as_deref().unwrap_or_default();
        if version.is_empty() {
            return Err(
                "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later \
                        is required"
                    .into(),
            );
        }
        if crate::version::parse(version).is_none() {
            return Err(format!(
                "authOptions.mode is 'token' but RayVersion format is invalid: {version}"
            ));
        }
        if !ray_version_at_least(version, &[2, 52, 0]) {
            return Err(format!(
                "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got {version}"
            ));
        }
        if k8s_auth {
            if !ray_version_at_least(version, &[2, 55, 0]) {
                return Err(format!(
                    "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got {version}"
                ));
            }
            if auth
                .and_then(|a| a.secret_name.as_deref())
                .is_some_and(|s| !s.is_empty())
            {
                return Err(
                    "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set".into(),
                );
            }
        }
    } else if k8s_auth {
        return Err(
            "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'".into(),
        );
    }
    validate_network_policy(spec, gates)?;
    if spec.tls_options.is_some() && !gates.mtls {
        return Err("spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled".into());
    }
    crate::tls::validate(spec, gates.mtls)
}
