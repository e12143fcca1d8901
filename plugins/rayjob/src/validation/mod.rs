//! KubeRay's checks of a RayJob, run before every reconcile. A RayJob that fails one ends in
//! `ValidationFailed` with the check's message; nothing else happens to it (KubeRay's controller never leaves
//! that state either, so a fixed spec needs a new RayJob).

mod deletion;
mod spec;

use kuberay_crds::{JobDeploymentStatus, JobSubmissionMode, RayJob};

use crate::{consts::MAX_RAYJOB_NAME_LENGTH, consts::reason, spec as job_spec};

/// A failed check: the event reason KubeRay records and the message it puts in the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub reason: &'static str,
    pub message: String,
}

pub fn validate(job: &RayJob) -> Result<(), Invalid> {
    let fail = |reason: &'static str| move |message: String| Invalid { reason, message };
    validate_metadata(job).map_err(fail(reason::INVALID_RAYJOB_METADATA))?;
    spec::validate_spec(job).map_err(fail(reason::INVALID_RAYJOB_SPEC))?;
    validate_status(job).map_err(fail(reason::INVALID_RAYJOB_STATUS))
}

fn validate_metadata(job: &RayJob) -> Result<(), String> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_RAYJOB_NAME_LENGTH {
        return Err(format!(
            "The RayJob metadata is invalid: RayJob name should be no more than {MAX_RAYJOB_NAME_LENGTH} characters"
        ));
    }
    if !is_dns1035_label(name) {
        return Err(
            "The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: [a DNS-1035 label must \
             consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end \
             with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is \
             '[a-z]([-a-z0-9]*[a-z0-9])?')]"
                .into(),
        );
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

/// RFC 1035 labels: lower-case alphanumerics and `-`, starting with a letter, ending alphanumeric, ≤ 63.
pub fn is_dns1035_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1035() {
        assert!(is_dns1035_label("rayjob-sample"));
        assert!(!is_dns1035_label("1job"));
        assert!(!is_dns1035_label("job-"));
        assert!(!is_dns1035_label("Job"));
        assert!(!is_dns1035_label(""));
    }
}
