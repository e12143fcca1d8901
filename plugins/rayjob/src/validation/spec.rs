//! KubeRay's `ValidateRayJobSpec`, in its order and with its messages, plus the few checks KubeRay leaves to
//! a later panic or an endless error loop (noted where they are).

use kuberay_crds::{JobSubmissionMode, RayJob};
use kuberay_plugin_sdk::ray::jobs::{JobSubmitRequest, runtime_env_from_yaml};
use kuberay_rules::cluster_spec::{self, Gates};

use super::deletion::validate_deletion;
use crate::spec;

/// The rules of `ValidateRayJobSpec`, the cluster spec's (`ValidateRayClusterSpec`) under the feature gates
/// `gates` among them.
pub fn validate_spec(job: &RayJob, gates: Gates) -> Result<(), String> {
    let s = &job.spec;
    let mode = spec::submission_mode(s);
    if spec::suspend(s) && !spec::shutdown_after_job_finishes(s) {
        return Err(
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not \
                    allowed to be suspended"
                .into(),
        );
    }
    if spec::ttl_seconds_after_finished(s) < 0 {
        return Err(
            "The RayJob spec is invalid: TTLSecondsAfterFinished must be a non-negative integer".into(),
        );
    }
    validate_deletion(job)?;

    let selector_mode = spec::uses_cluster_selector(s);
    if spec::suspend(s) && selector_mode {
        return Err(
            "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation"
                .into(),
        );
    }
    if s.ray_cluster_spec.is_none() && !selector_mode {
        return Err(
            "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set".into(),
        );
    }
    let backoff_limit = s.backoff_limit.unwrap_or(0);
    if selector_mode {
        if spec::selected_cluster(s).is_none() {
            return Err("cluster name in ClusterSelector should not be empty".into());
        }
        if mode == JobSubmissionMode::SidecarMode {
            return Err("ClusterSelector is not supported in SidecarMode".into());
        }
        if backoff_limit > 0 {
            return Err(
                "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode".into(),
            );
        }
    }
    if mode == JobSubmissionMode::InteractiveMode && backoff_limit > 0 {
        return Err("The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode".into());
    }
    if mode == JobSubmissionMode::SidecarMode {
        validate_sidecar(job)?;
    }
    // KubeRay accepts any string here and fails later; the plugin only knows the four modes.
    if let JobSubmissionMode::Other(other) = &mode {
        return Err(format!(
            "The RayJob spec is invalid: unknown submissionMode {other:?} (expected K8sJobMode, HTTPMode, \
             InteractiveMode or SidecarMode)"
        ));
    }
    if let Some(cluster) = &s.ray_cluster_spec {
        let auth = cluster.auth_options.as_ref();
        if auth.and_then(|a| a.enable_k8s_token_auth) == Some(true) {
            return Err(
                "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob"
                    .into(),
            );
        }
        cluster_spec::validate_spec(cluster, job.metadata.annotations.as_ref(), gates)
            .map_err(|e| format!("The RayJob spec is invalid: {e}"))?;
    }
    runtime_env_from_yaml(s.runtime_env_yaml.as_deref().unwrap_or_default())?;
    // KubeRay only finds out when it submits (and then retries until the status check times out).
    JobSubmitRequest::default()
        .entrypoint_resources_json(s.entrypoint_resources.as_deref())
        .map_err(|e| format!("The RayJob spec is invalid: {e}"))?;
    if s.active_deadline_seconds.is_some_and(|d| d <= 0) {
        return Err("The RayJob spec is invalid: activeDeadlineSeconds must be a positive integer".into());
    }
    if s.pre_running_deadline_seconds.is_some_and(|d| d <= 0) {
        return Err(
            "The RayJob spec is invalid: preRunningDeadlineSeconds must be a positive integer".into(),
        );
    }
    if backoff_limit < 0 {
        return Err("The RayJob spec is invalid: backoffLimit must be a positive integer".into());
    }
    // KubeRay indexes the first container of a custom submitter template without checking.
    if mode == JobSubmissionMode::K8sJobMode
        && let Some(template) = &s.submitter_pod_template
        && template.spec.as_ref().is_none_or(|p| p.containers.is_empty())
    {
        return Err(
            "The RayJob spec is invalid: submitterPodTemplate should have at least one container".into(),
        );
    }
    Ok(())
}

fn validate_sidecar(job: &RayJob) -> Result<(), String> {
    let s = &job.spec;
    if s.submitter_pod_template.is_some() {
        return Err("Currently, SidecarMode doesn't support SubmitterPodTemplate".into());
    }
    if s.submitter_config.is_some() {
        return Err("Currently, SidecarMode doesn't support SubmitterConfig".into());
    }
    let restart_policy = s
        .ray_cluster_spec
        .as_ref()
        .and_then(|c| c.head_group_spec.template.spec.as_ref())
        .and_then(|p| p.restart_policy.as_deref())
        .unwrap_or_default();
    if !restart_policy.is_empty() && restart_policy != "Never" {
        return Err("restartPolicy for head Pod should be Never or unset when using SidecarMode".into());
    }
    Ok(())
}
