//! Job submissions between the API's messages and Ray's Jobs API (through the plugin SDK's typed client,
//! the one the RayJob plugin uses): the runtime environment arrives as YAML and leaves as an object, the
//! entrypoint resources arrive as text numbers, and Ray's job details come back with their runtime
//! environment flattened to text.

use std::collections::{BTreeMap, HashMap};

use kuberay_plugin_sdk::ray::{
    RayError,
    jobs::{JobDetails, JobSubmitRequest},
};
use serde_json::Value;

use super::head::host_error;
use crate::{api, error::ApiError};

/// The Ray request for a submission; bad input is InvalidArgument naming the field.
pub(crate) fn submit_request(submission: &api::RayJobSubmission) -> Result<JobSubmitRequest, ApiError> {
    if submission.entrypoint.trim().is_empty() {
        return Err(ApiError::InvalidArgument(
            "jobsubmission.entrypoint is required".into(),
        ));
    }
    let mut resources = BTreeMap::new();
    for (name, value) in &submission.entrypoint_resources {
        let amount: f32 = value.trim().parse().map_err(|_| {
            ApiError::InvalidArgument(format!(
                "jobsubmission.entrypointResources[{name:?}] = {value:?} is not a number"
            ))
        })?;
        resources.insert(name.clone(), amount);
    }
    let metadata: BTreeMap<String, String> = submission.metadata.clone().into_iter().collect();
    let mut request = JobSubmitRequest::new(submission.entrypoint.clone())
        .submission_id(&submission.submission_id)
        .metadata(Some(&metadata))
        .entrypoint_num_cpus(Some(submission.entrypoint_num_cpus))
        .entrypoint_num_gpus(Some(submission.entrypoint_num_gpus))
        .runtime_env_yaml(Some(&submission.runtime_env))
        .map_err(|e| ApiError::InvalidArgument(format!("jobsubmission.runtimeEnv: {e}")))?;
    request.entrypoint_resources = resources;
    Ok(request)
}

/// Ray's details of a job as the API reports them.
pub(crate) fn job_info(details: JobDetails) -> api::JobSubmissionInfo {
    api::JobSubmissionInfo {
        entrypoint: details.entrypoint.unwrap_or_default(),
        job_id: details.job_id.unwrap_or_default(),
        submission_id: details.submission_id.unwrap_or_default(),
        status: details.status.as_str().to_string(),
        message: details.message.unwrap_or_default(),
        error_type: details.error_type.unwrap_or_default(),
        start_time: details.start_time.unwrap_or_default(),
        end_time: details.end_time.unwrap_or_default(),
        metadata: details.metadata.unwrap_or_default().into_iter().collect(),
        runtime_env: details
            .runtime_env
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, text_of(value)))
            .collect::<HashMap<_, _>>(),
    }
}

/// A runtime-environment value as text: strings as they are, anything else as JSON.
fn text_of(value: Value) -> String {
    match value {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

/// What a failed Ray call means to the caller: the head's own 4xx is the request's fault, anything else
/// is a dependency that failed.
pub(crate) fn ray_error(error: RayError) -> ApiError {
    match error {
        RayError::Host(e) => host_error(e),
        RayError::Status { call, status, body } if (400..500).contains(&status) => {
            ApiError::InvalidArgument(format!("the Ray head refused {call} ({status}): {body}"))
        }
        RayError::Status { call, status, body } => {
            ApiError::Unavailable(format!("the Ray head failed {call} ({status}): {body}"))
        }
        RayError::Decode { call, detail, body } => ApiError::Unavailable(format!(
            "the Ray head answered {call} with something unexpected ({detail}): {body}"
        )),
        RayError::NotStopped { id, status } => ApiError::FailedPrecondition(format!(
            "job {id} was not stopped: it is still {}",
            status.as_str()
        )),
        RayError::Request(message) => ApiError::InvalidArgument(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submission() -> api::RayJobSubmission {
        api::RayJobSubmission {
            entrypoint: "python -c 'print(1)'".into(),
            submission_id: "s-1".into(),
            runtime_env: "pip:\n  - requests==2.26.0\nenv_vars:\n  A: b\n".into(),
            entrypoint_num_cpus: 1.5,
            entrypoint_resources: HashMap::from([("custom".to_string(), "2".to_string())]),
            ..Default::default()
        }
    }

    #[test]
    fn submissions_become_rays_request() {
        let request = submit_request(&submission()).unwrap();
        let body: Value = serde_json::from_slice(&request.to_json().unwrap()).unwrap();
        assert_eq!(body["entrypoint"], "python -c 'print(1)'");
        assert_eq!(body["submission_id"], "s-1");
        assert_eq!(body["entrypoint_num_cpus"], 1.5);
        assert!(body.get("entrypoint_num_gpus").is_none(), "{body}");
        assert_eq!(body["entrypoint_resources"]["custom"], 2.0);
        assert_eq!(body["runtime_env"]["env_vars"]["A"], "b");
        assert_eq!(body["runtime_env"]["pip"][0], "requests==2.26.0");
    }

    #[test]
    fn bad_submissions_name_the_field() {
        let cases = [
            (api::RayJobSubmission::default(), "entrypoint"),
            (
                api::RayJobSubmission {
                    entrypoint_resources: HashMap::from([("gpu".into(), "lots".into())]),
                    ..submission()
                },
                "entrypointResources",
            ),
            (
                api::RayJobSubmission {
                    runtime_env: "- not\n- a map".into(),
                    ..submission()
                },
                "runtimeEnv",
            ),
        ];
        for (bad, field) in cases {
            match submit_request(&bad) {
                Err(ApiError::InvalidArgument(m)) => assert!(m.contains(field), "{m}"),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn details_keep_their_runtime_environment_as_text() {
        let details: JobDetails = serde_json::from_value(serde_json::json!({
            "type": "SUBMISSION", "job_id": null, "submission_id": "s-1", "status": "RUNNING",
            "entrypoint": "x", "start_time": 1700000000000u64, "end_time": null,
            "metadata": {"a": "b"}, "runtime_env": {"working_dir": "/tmp", "env_vars": {"A": "b"}},
        }))
        .unwrap();
        let info = job_info(details);
        assert_eq!(info.status, "RUNNING");
        assert_eq!(info.start_time, 1_700_000_000_000);
        assert_eq!(info.end_time, 0);
        assert_eq!(info.runtime_env["working_dir"], "/tmp");
        assert_eq!(info.runtime_env["env_vars"], r#"{"A":"b"}"#);
    }
}
