//! Deleting a cluster with Redis-backed GCS fault tolerance: its keys in Redis would outlive it, so a
//! finalizer holds the RayCluster while a Job deletes them. The head Pod must be gone first (a live GCS
//! would keep writing), and a timeout releases the cluster if the Job never finishes, so a broken Redis
//! cannot keep a namespace from being deleted forever.
//!
//! Unlike KubeRay, which watches the head Pod disappear, the plugin also waits out the head's grace period
//! after the deletion: the host's read-your-writes overlay hides a Pod the plugin deleted even while it is
//! still terminating.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::{
        batch::v1::{Job, JobSpec},
        core::v1::{Pod, PodTemplateSpec, ResourceRequirements},
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use kuberay_crds::{
    RayCluster,
    constants::{annotations, finalizers, labels as label_keys, node_type},
};
use kuberay_plugin_sdk::{Event, Host, Kind, LogLevel, Outcome, ReconcileError};
use kuberay_rules::{labels, names};

use crate::{
    cluster::{self, Identity},
    consts::{action, env as env_names, reason},
    context::Ctx,
    pod::{BuildError, env, head, shell_command},
    pods,
};

const DEFAULT_DELETION_TIMEOUT: Duration = Duration::from_secs(300);
const REQUEUE: Duration = Duration::from_secs(2);
/// A head Pod takes much longer than 2 s to terminate.
const HEAD_TERMINATION_REQUEUE: Duration = Duration::from_secs(10);
/// Kubernetes' default `terminationGracePeriodSeconds`.
const DEFAULT_GRACE_PERIOD_SECS: u64 = 30;
const GRACE_MARGIN_SECS: u64 = 5;

/// How long the head may take to stop after its deletion before the kubelet kills it.
fn head_grace_period(cluster: &RayCluster) -> u64 {
    cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .and_then(|s| u64::try_from(s).ok())
        .unwrap_or(DEFAULT_GRACE_PERIOD_SECS)
}

/// The Python that deletes the cluster's Redis keys; it logs in with `REDIS_USERNAME` only if the head
/// had one.
fn cleanup_script(with_username: bool) -> String {
    let mut script = String::from(
        "echo \"To get more information about manually deleting the storage namespace in Redis and removing the \
         RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html \
         for more details.\" && python -c \"from ray._private.gcs_utils import cleanup_redis_storage; from \
         urllib.parse import urlparse; import os; import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', \
         '').split(',')[0]; redis_address = redis_address if '://' in redis_address else 'redis://' + \
         redis_address; parsed = urlparse(redis_address); ",
    );
    script.push_str("sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, ");
    if with_username {
        script.push_str("username=os.getenv('REDIS_USERNAME', parsed.username), ");
    }
    script.push_str(
        "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', \
         storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\"",
    );
    script
}

/// The clean-up Job: the head Pod's Ray container (its image, Redis settings and storage namespace) running
/// the script once, with small fixed resources and at most five minutes.
pub fn build_job(cluster: &RayCluster, id: &Identity) -> Result<Job, BuildError> {
    let pod: Pod = head::build(cluster, id, None)?;
    let mut metadata = pod.metadata;
    metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(label_keys::RAY_NODE_TYPE.into(), node_type::REDIS_CLEANUP.into());
    let mut spec = pod.spec.unwrap_or_default();
    let mut ray = spec
        .containers
        .into_iter()
        .next()
        .ok_or_else(|| BuildError("the head Pod template has no container".into()))?;
    let with_username = env::exists(&ray, env_names::REDIS_USERNAME);
    ray.command = Some(shell_command(&id.env));
    ray.args = Some(vec![cleanup_script(with_username)]);
    // The Job runs no raylet or GCS, so there is nothing for the probes to check.
    ray.liveness_probe = None;
    ray.readiness_probe = None;
    // Give Redis at least a minute to answer.
    env::push(&mut ray, env::value("RAY_redis_db_connect_retries", "120"));
    env::push(
        &mut ray,
        env::value("RAY_redis_db_connect_wait_milliseconds", "500"),
    );
    let list = BTreeMap::from([
        ("cpu".to_string(), Quantity("200m".into())),
        ("memory".to_string(), Quantity("256Mi".into())),
    ]);
    ray.resources = Some(ResourceRequirements {
        limits: Some(list.clone()),
        requests: Some(list),
        ..ResourceRequirements::default()
    });
    spec.containers = vec![ray];
    crate::pod::tls::remove_wait(&mut spec.init_containers);
    spec.restart_policy = Some("Never".into());
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(names::redis_cleanup_job_name(&id.name)),
            namespace: Some(id.namespace.clone()),
            labels: metadata.labels.clone(),
            annotations: metadata.annotations.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: Some(300),
            template: PodTemplateSpec {
                metadata: Some(metadata),
                spec: Some(spec),
            },
            ..JobSpec::default()
        }),
        status: None,
    })
}

/// Whether a Job is over, successfully or not (`FailureTarget` already means it will fail).
fn finished(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.status == "True" && matches!(c.type_.as_str(), "Complete" | "Failed" | "FailureTarget"))
}

fn deletion_timeout(cluster: &RayCluster) -> Duration {
    cluster::annotation(cluster, annotations::RAY_GCS_FT_DELETION_TIMEOUT)
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(DEFAULT_DELETION_TIMEOUT, Duration::from_secs)
}

fn has_finalizer(cluster: &RayCluster) -> bool {
    cluster
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizers::GCS_FT_REDIS_CLEANUP)
}

/// The finalizer goes on before anything else is created, so no Redis data can exist without it.
/// Returns whether it was added now.
pub fn ensure_finalizer<H: Host>(ctx: &Ctx<'_, H>) -> Result<bool, ReconcileError> {
    if !cluster::redis_ft(&ctx.cluster) || has_finalizer(&ctx.cluster) {
        return Ok(false);
    }
    ctx.host.add_finalizer(finalizers::GCS_FT_REDIS_CLEANUP)?;
    ctx.mark_written();
    Ok(true)
}

fn remove_finalizer<H: Host>(ctx: &Ctx<'_, H>) -> Result<Outcome, ReconcileError> {
    ctx.host.remove_finalizer(finalizers::GCS_FT_REDIS_CLEANUP)?;
    Ok(Outcome::done())
}

/// `Plugin::cleanup`: delete the Pods, wait for the head to go, run the Job, then let the cluster go.
pub fn cleanup<H: Host>(ctx: &Ctx<'_, H>) -> Result<Outcome, ReconcileError> {
    let cluster = &ctx.cluster;
    if !has_finalizer(cluster) {
        return Ok(Outcome::done());
    }
    // Nothing to clean without Redis (for example a cluster switched to the embedded backend).
    if !cluster::redis_ft(cluster) {
        return remove_finalizer(ctx);
    }
    let name = &ctx.id.name;
    let deleted =
        pods::delete_all(ctx, &labels::head_pods(name))? + pods::delete_all(ctx, &labels::worker_pods(name))?;
    let heads = ctx.pods(&labels::head_pods(name))?;
    if let Some(head) = heads.first() {
        ctx.log(
            LogLevel::Info,
            &format!(
                "waiting for head Pod {} to terminate before cleaning Redis",
                head.metadata.name.as_deref().unwrap_or_default()
            ),
        );
        return Ok(Outcome::requeue_after(HEAD_TERMINATION_REQUEUE));
    }
    if deleted > 0 {
        return Ok(Outcome::requeue_after(HEAD_TERMINATION_REQUEUE));
    }

    let jobs = ctx.list::<Job>(&labels::redis_cleanup_jobs(name))?;
    let now = ctx
        .host
        .now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|now| now.as_secs())
        .unwrap_or_default();
    let deleted_at = cluster
        .metadata
        .deletion_timestamp
        .as_ref()
        .map_or(now, |t| u64::try_from(t.0.as_second()).unwrap_or_default());
    let age = now.saturating_sub(deleted_at);
    if age >= deletion_timeout(cluster).as_secs() {
        ctx.host.remove_finalizer(finalizers::GCS_FT_REDIS_CLEANUP)?;
        let storage_ns =
            cluster::annotation(cluster, annotations::RAY_EXTERNAL_STORAGE_NAMESPACE).unwrap_or_default();
        ctx.event(Event::warning(
            reason::FORCE_DELETED_STUCK_CLUSTER,
            action::CLEANUP,
            format!(
                "Force-removed GCS FT finalizer after {age}s due to Redis cleanup timeout; Redis storage \
                 namespace {storage_ns:?} may need manual cleanup"
            ),
        ));
        return Ok(Outcome::done());
    }
    // The host hides Pods the plugin deleted until its cache drops them, so a head that is still shutting
    // down can look gone. Its grace period bounds how long it can keep writing to Redis.
    let settle_until = deleted_at + head_grace_period(cluster) + GRACE_MARGIN_SECS;
    if jobs.is_empty() && now < settle_until {
        return Ok(Outcome::requeue_after(Duration::from_secs(
            (settle_until - now).max(2),
        )));
    }
    if let Some(job) = jobs.first() {
        if finished(job) {
            return remove_finalizer(ctx);
        }
        return Ok(Outcome::requeue_after(REQUEUE));
    }

    let job = build_job(cluster, &ctx.id).map_err(|e| ReconcileError::InvalidObject(e.0))?;
    let job_name = job.metadata.name.clone().unwrap_or_default();
    let key = format!("{}/{job_name}", ctx.id.namespace);
    match ctx.apply(&job) {
        Ok(_) => {
            ctx.event(
                Event::normal(
                    reason::CREATED_REDIS_CLEANUP_JOB,
                    action::CREATE,
                    format!("Created Redis cleanup Job {key}"),
                )
                .about(Kind::of::<Job>(), &job_name),
            );
            Ok(Outcome::requeue_after(REQUEUE))
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_REDIS_CLEANUP_JOB,
                action::CREATE,
                format!("Failed to create Redis cleanup Job {key}, {}", e.message()),
            ));
            Err(e.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleanup_scripts_are_kuberays_byte_for_byte() {
        let with_username = "echo \"To get more information about manually deleting the storage namespace in Redis and removing the RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more details.\" && python -c \"from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; import os; import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; parsed = urlparse(redis_address); sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, username=os.getenv('REDIS_USERNAME', parsed.username), password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\"";
        let without_username = "echo \"To get more information about manually deleting the storage namespace in Redis and removing the RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more details.\" && python -c \"from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; import os; import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; parsed = urlparse(redis_address); sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\"";
        assert_eq!(cleanup_script(true), with_username);
        assert_eq!(cleanup_script(false), without_username);
    }
}
