//! A RayJob's spec read with KubeRay's defaults. The Go types have plain values where ours have options
//! (`suspend: false`, `ttlSecondsAfterFinished: 0`, `submissionMode: K8sJobMode`), so every default the
//! controller relies on is spelled out once, here.

use kuberay_crds::{JobSubmissionMode, RayJobSpec, constants::labels};

pub fn submission_mode(spec: &RayJobSpec) -> JobSubmissionMode {
    spec.submission_mode
        .clone()
        .unwrap_or(JobSubmissionMode::K8sJobMode)
}

pub fn suspend(spec: &RayJobSpec) -> bool {
    spec.suspend.unwrap_or(false)
}

pub fn shutdown_after_job_finishes(spec: &RayJobSpec) -> bool {
    spec.shutdown_after_job_finishes.unwrap_or(false)
}

pub fn ttl_seconds_after_finished(spec: &RayJobSpec) -> i64 {
    i64::from(spec.ttl_seconds_after_finished.unwrap_or(0))
}

/// Whether the RayJob runs on an existing cluster (any `clusterSelector` at all, as KubeRay decides).
pub fn uses_cluster_selector(spec: &RayJobSpec) -> bool {
    spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty())
}

/// The existing cluster `clusterSelector` names, if it names one.
pub fn selected_cluster(spec: &RayJobSpec) -> Option<&str> {
    spec.cluster_selector
        .as_ref()?
        .get(labels::RAY_CLUSTER)
        .map(String::as_str)
        .filter(|name| !name.is_empty())
}

/// Whether something other than the plugin submits the job and must finish before the RayJob does.
pub fn has_submitter(spec: &RayJobSpec) -> bool {
    matches!(
        submission_mode(spec),
        JobSubmissionMode::K8sJobMode | JobSubmissionMode::SidecarMode
    )
}

pub fn entrypoint(spec: &RayJobSpec) -> &str {
    spec.entrypoint.as_deref().unwrap_or_default()
}

/// `spec.jobId`, if the user set one.
pub fn job_id(spec: &RayJobSpec) -> Option<&str> {
    spec.job_id.as_deref().filter(|id| !id.is_empty())
}
