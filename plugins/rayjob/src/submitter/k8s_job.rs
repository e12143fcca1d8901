//! `K8sJobMode`: a batch Job named like the RayJob runs the submitter script. Its Pod may be retried (the
//! script checks for an earlier submission first), and the Job's `Failed` condition means no further
//! submission is possible, which fails the RayJob.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        batch::v1::{Job, JobSpec},
        core::v1::{PodSpec, PodTemplateSpec},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::{
    JobFailedReason, JobStatus, JobSubmissionMode, RayCluster, RayJob, RayJobStatus, constants::labels,
};
use kuberay_plugin_sdk::{Event, Host, Kind, ReconcileError, TypedHost};
use kuberay_rules::time;

use super::{Check, add_token_volume, configure, default_container};
use crate::{
    batch,
    consts::{COMPONENT_NAME, DEFAULT_SUBMITTER_BACKOFF_LIMIT, action, crd, reason},
    context::Ctx,
    status,
};
use kuberay_rules::operator_env::OperatorEnv;

/// What KubeRay labels the Job and its Pods with, so that they can be traced back to the RayJob.
fn origin_labels(job_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::RAY_ORIGINATED_FROM_CR_NAME.into(), job_name.into()),
        (labels::RAY_ORIGINATED_FROM_CRD.into(), crd::RAY_JOB.into()),
        (labels::KUBERNETES_CREATED_BY.into(), COMPONENT_NAME.into()),
    ])
}

/// The submitter Pod: the user's `submitterPodTemplate`, or KubeRay's default container that never
/// restarts in place (the Job retries it instead).
pub fn template(
    job: &RayJob,
    job_status: &RayJobStatus,
    cluster: &RayCluster,
    env: &OperatorEnv,
) -> Result<PodTemplateSpec, String> {
    let cluster_spec = &cluster.spec;
    let mut template = job
        .spec
        .submitter_pod_template
        .clone()
        .unwrap_or_else(|| PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![default_container(cluster_spec)],
                restart_policy: Some("Never".into()),
                ..PodSpec::default()
            }),
        });
    let pod = template
        .spec
        .as_mut()
        .ok_or("submitterPodTemplate has no Pod spec")?;
    let container = pod
        .containers
        .first_mut()
        .ok_or("submitterPodTemplate should have at least one container")?;
    let cluster_name = cluster.metadata.name.as_deref().unwrap_or_default();
    configure(
        container,
        job,
        job_status,
        &JobSubmissionMode::K8sJobMode,
        (cluster_name, cluster_spec),
        env,
        false,
    )?;
    add_token_volume(pod, cluster_spec);
    let job_name = job.metadata.name.as_deref().unwrap_or_default();
    template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(origin_labels(job_name));
    Ok(template)
}

pub fn build(
    job: &RayJob,
    job_status: &RayJobStatus,
    cluster: &RayCluster,
    env: &OperatorEnv,
) -> Result<Job, String> {
    let job_name = job.metadata.name.clone().unwrap_or_default();
    let backoff_limit = job
        .spec
        .submitter_config
        .as_ref()
        .and_then(|c| c.backoff_limit)
        .unwrap_or(DEFAULT_SUBMITTER_BACKOFF_LIMIT);
    Ok(Job {
        metadata: ObjectMeta {
            labels: Some(origin_labels(&job_name)),
            name: Some(job_name),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(backoff_limit),
            template: template(job, job_status, cluster, env)?,
            ..JobSpec::default()
        }),
        status: None,
    })
}

/// Creates the submitter Job unless it exists (it is never updated: its Pod template is immutable).
pub fn create_if_needed<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &RayJobStatus,
    cluster: &RayCluster,
) -> Result<(), ReconcileError> {
    if ctx.get::<Job>(&ctx.name)?.is_some() {
        return Ok(());
    }
    let mut submitter =
        build(&ctx.job, job_status, cluster, &ctx.env).map_err(ReconcileError::InvalidObject)?;
    if let Some(spec) = submitter.spec.as_mut() {
        batch::decorate_submitter(ctx, &mut spec.template);
    }
    let key = ctx.key(&ctx.name);
    match ctx.host.create_as(&submitter) {
        Ok(_) => {
            ctx.event(
                Event::normal(
                    reason::CREATED_RAYJOB_SUBMITTER,
                    action::CREATE,
                    format!("Created Kubernetes Job {key}"),
                )
                .about(Kind::of::<Job>(), &ctx.name),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_RAYJOB_SUBMITTER,
                action::CREATE,
                format!("Failed to create new Kubernetes Job {key}: {}", e.message()),
            ));
            Err(e.into())
        }
    }
}

/// The Job's verdict: `Failed` ends the RayJob (as an application failure if Ray already said the job
/// failed, else as a failed submission); either terminal condition tells when the submitter finished.
pub fn check<H: Host>(ctx: &Ctx<'_, H>, job_status: &mut RayJobStatus) -> Result<Check, ReconcileError> {
    let Some(submitter) = ctx.get::<Job>(&ctx.name)? else {
        return Err(ReconcileError::Transient(format!(
            "the submitter Job {} is missing",
            ctx.key(&ctx.name)
        )));
    };
    let conditions = submitter
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let is_true = |c: &&k8s_openapi::api::batch::v1::JobCondition| c.status == "True";
    let mut check = Check::default();
    if let Some(failed) = conditions.iter().filter(is_true).find(|c| c.type_ == "Failed") {
        check.failed = true;
        if status::job_status(job_status) == JobStatus::Failed {
            job_status.job_deployment_status = Some(kuberay_crds::JobDeploymentStatus::Failed);
            job_status.reason = Some(JobFailedReason::AppFailed);
        } else {
            status::fail(
                job_status,
                JobFailedReason::SubmissionFailed,
                format!(
                    "Job submission has failed. Reason: {}. Message: {}",
                    failed.reason.as_deref().unwrap_or_default(),
                    failed.message.as_deref().unwrap_or_default()
                ),
            );
        }
    }
    check.finished_at = conditions
        .iter()
        .filter(is_true)
        .find(|c| c.type_ == "Complete" || c.type_ == "Failed")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(time::seconds);
    Ok(check)
}
