//! KubeRay's checks of a RayJob, run before every reconcile. A RayJob that fails one ends in
//! `ValidationFailed` with the check's message; nothing else happens to it (KubeRay's controller never leaves
//! that state either, so a fixed spec needs a new RayJob).

mod deletion;
mod spec;

use kuberay_crds::{JobDeploymentStatus, JobSubmissionMode, RayJob};
use kuberay_rules::{cluster_spec::Gates, syntax};

use crate::{consts::MAX_RAYJOB_NAME_LENGTH, consts::reason, spec as job_spec};

/// A failed check: the event reason KubeRay records and the message it puts in the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub reason: &'static str,
    pub message: String,
}

/// KubeRay's checks of `job`, its cluster spec's under the feature gates `gates`.
pub fn validate(job: &RayJob, gates: Gates) -> Result<(), Invalid> {
    let fail = |reason: &'static str| move |message: String| Invalid { reason, message };
    validate_metadata(job).map_err(fail(reason::INVALID_RAYJOB_METADATA))?;
    spec::validate_spec(job, gates).map_err(fail(reason::INVALID_RAYJOB_SPEC))?;
    validate_status(job).map_err(fail(reason::INVALID_RAYJOB_STATUS))
}

fn validate_metadata(job: &RayJob) -> Result<(), String> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_RAYJOB_NAME_LENGTH {
        return Err(format!(
            "The RayJob metadata is invalid: RayJob name should be no more than {MAX_RAYJOB_NAME_LENGTH} characters"
        ));
    }
    let errors = syntax::dns1035_label_errors(name);
    if !errors.is_empty() {
        return Err(format!(
            "The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: {}",
            syntax::go_list(&errors)
        ));
    }
    Ok(())
}

fn validate_status(job: &RayJob) -> Result<(), String> {
    let status = job.status.as_ref().and_then(|s| s.job_deployment_status.as_ref());
    if status == Some(&JobDeploymentStatus::Waiting)
        && job_spec::submission_mode(&job.spec) != JobSubmissionMode::InteractiveMode
    {
        return Err(
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when \
                    SubmissionMode is not InteractiveMode"
                .into(),
        );
    }
    Ok(())
}
