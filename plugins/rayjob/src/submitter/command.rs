//! The bash script the submitter runs (KubeRay's `BuildJobSubmitCommand`): wait until the dashboard's GCS
//! is healthy, then `ray job submit` with the RayJob's options. In `K8sJobMode` the Job's Pod may be retried
//! (and in `SidecarMode` the container restarted, with the `SidecarSubmitterRestart` gate), so the script
//! first asks `ray job status` and only submits a job Ray does not know yet, then follows its logs; otherwise
//! `SidecarMode` submits once and waits for the job.
//!
//! The words are returned as KubeRay builds them; the container gets them joined by spaces.

use kuberay_crds::{JobSubmissionMode, RayJob, RayJobStatus};
use kuberay_plugin_sdk::{
    k8s_openapi::api::core::v1::Container, ray::jobs::runtime_env_from_yaml, serde_json,
};

use super::quote::go_quote;
use crate::{
    consts::{DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT},
    status,
};

const GCS_HEALTH_PATH: &str = "api/gcs_healthz";
const GCS_HEALTH_TIMEOUT_SECONDS: u32 = 10;

/// A health check that needs only Python, which every Ray image has (slim images lack `wget`).
fn python_health_check(url: &str) -> String {
    format!(
        "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout={GCS_HEALTH_TIMEOUT_SECONDS}); \
         exit(0 if b'success' in r.read() else 1)\""
    )
}

/// The port a container names `name`, or `default`.
pub fn container_port(container: Option<&Container>, name: &str, default: i32) -> i32 {
    container
        .and_then(|c| c.ports.as_ref())
        .and_then(|ports| ports.iter().find(|p| p.name.as_deref() == Some(name)))
        .map_or(default, |p| p.container_port)
}

/// The script's words; `sidecar_restarts`: a `SidecarMode` submitter container restarts on failure (the
/// `SidecarSubmitterRestart` gate).
pub fn build(
    job: &RayJob,
    job_status: &RayJobStatus,
    mode: &JobSubmissionMode,
    sidecar_restarts: bool,
) -> Result<Vec<String>, String> {
    let spec = &job.spec;
    let (address, health_url) = match mode {
        JobSubmissionMode::SidecarMode => {
            let head = spec
                .ray_cluster_spec
                .as_ref()
                .and_then(|c| c.head_group_spec.template.spec.as_ref())
                .and_then(|p| p.containers.first());
            let port = container_port(head, DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT);
            (
                format!("http://127.0.0.1:{port}"),
                format!("http://localhost:{port}/{GCS_HEALTH_PATH}"),
            )
        }
        JobSubmissionMode::K8sJobMode => {
            let url = status::dashboard_url(job_status);
            let address = if url.starts_with("http://") {
                url.to_string()
            } else {
                format!("http://{url}")
            };
            let health = format!("{address}/{GCS_HEALTH_PATH}");
            (address, health)
        }
        other => {
            return Err(format!(
                "unsupported submission mode for job submit command: {other}"
            ));
        }
    };
    let job_id = status::job_id(job_status);
    let words = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    let mut cmd = words(&[
        "until",
        &python_health_check(&health_url),
        ">/dev/null",
        "2>&1",
        ";",
    ]);
    let waiting = go_quote(&format!(
        "Waiting for Ray Dashboard GCS to become healthy at {address} ..."
    ));
    cmd.extend(words(&[
        "do", "echo", &waiting, ";", "sleep", "2", ";", "done", ";",
    ]));

    // Only a submitter that may run twice needs to check for an earlier submission.
    let check_first = match mode {
        JobSubmissionMode::K8sJobMode => true,
        JobSubmissionMode::SidecarMode => sidecar_restarts,
        _ => false,
    };
    if check_first {
        cmd.extend(words(&[
            "if",
            "!",
            "ray",
            "job",
            "status",
            "--address",
            &address,
            job_id,
        ]));
        cmd.extend(words(&[">/dev/null", "2>&1", ";", "then"]));
    }
    cmd.extend(words(&["ray", "job", "submit", "--address", &address]));
    if check_first {
        cmd.push("--no-wait".into());
    }
    if let Some(runtime_env) = runtime_env_from_yaml(spec.runtime_env_yaml.as_deref().unwrap_or_default())? {
        let json = serde_json::to_string(&runtime_env).map_err(|e| e.to_string())?;
        cmd.extend(["--runtime-env-json".into(), go_quote(&json)]);
    }
    if let Some(metadata) = spec.metadata.as_ref().filter(|m| !m.is_empty()) {
        check_metadata_supported(job)?;
        let json = serde_json::to_string(metadata).map_err(|e| e.to_string())?;
        cmd.extend(["--metadata-json".into(), go_quote(&json)]);
    }
    if !job_id.is_empty() {
        cmd.extend(words(&["--submission-id", job_id]));
    }
    if let Some(cpus) = spec.entrypoint_num_cpus.filter(|c| *c > 0.0) {
        cmd.extend(["--entrypoint-num-cpus".into(), format!("{cpus:.6}")]);
    }
    if let Some(gpus) = spec.entrypoint_num_gpus.filter(|g| *g > 0.0) {
        cmd.extend(["--entrypoint-num-gpus".into(), format!("{gpus:.6}")]);
    }
    if let Some(resources) = spec.entrypoint_resources.as_deref().filter(|r| !r.is_empty()) {
        cmd.extend(["--entrypoint-resources".into(), go_quote(resources)]);
    }
    let entrypoint = spec.entrypoint.as_deref().unwrap_or_default().trim();
    cmd.extend(words(&["--", entrypoint, ";"]));
    if check_first {
        cmd.extend(words(&[
            "fi",
            ";",
            "ray",
            "job",
            "logs",
            "--address",
            &address,
            "--follow",
            job_id,
        ]));
    }
    Ok(cmd)
}

/// `ray job submit --metadata-json` exists since Ray 2.6.0. Only a `rayVersion` the user set explicitly can
/// rule it out; an unparsable one is an error rather than a guess.
fn check_metadata_supported(job: &RayJob) -> Result<(), String> {
    let Some(version) = job
        .spec
        .ray_cluster_spec
        .as_ref()
        .and_then(|c| c.ray_version.as_deref())
        .filter(|v| !v.is_empty())
    else {
        return Ok(());
    };
    match parse_version(version) {
        None => Err(format!(
            "failed to parse Ray version: {version}: Invalid Semantic Version"
        )),
        Some((_, true)) => Err("the Ray version must be at least 2.6.0 to use the metadata field".into()),
        Some((parts, false)) if parts < (2, 6, 0) => {
            Err("the Ray version must be at least 2.6.0 to use the metadata field".into())
        }
        Some(_) => Ok(()),
    }
}

/// A semantic version's numbers, and whether it is a pre-release (which, as in the semver library KubeRay
/// uses, satisfies no plain `>=` constraint).
fn parse_version(text: &str) -> Option<((u64, u64, u64), bool)> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let text = text.split_once('+').map_or(text, |(v, _)| v);
    let (core, pre) = match text.split_once('-') {
        Some((core, pre)) if !pre.is_empty() => (core, true),
        Some(_) => return None,
        None => (text, false),
    };
    let mut numbers = core.split('.').map(|n| {
        (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .then(|| n.parse::<u64>().ok())
            .flatten()
    });
    let major = numbers.next()??;
    let minor = numbers.next().unwrap_or(Some(0))?;
    let patch = numbers.next().unwrap_or(Some(0))?;
    if numbers.next().is_some() {
        return None;
    }
    Some(((major, minor, patch), pre))
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions() {
        assert_eq!(parse_version("2.6.0"), Some(((2, 6, 0), false)));
        assert_eq!(parse_version("v2.52"), Some(((2, 52, 0), false)));
        assert_eq!(parse_version("2.7.0-rc1"), Some(((2, 7, 0), true)));
        assert_eq!(parse_version("not-a-version"), None);
        assert_eq!(parse_version("2.6.0.1"), None);
    }
}
