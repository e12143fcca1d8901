//! One reconcile of a RayCluster, in KubeRay's order: hands off clusters another controller manages,
//! validates, makes sure the Redis clean-up finalizer is in place, reconciles the owned objects and the
//! Pods, and finally reports the status. The status is computed even when a step failed, so that
//! `ReplicaFailure` and the counters tell the user what happened.

use std::time::{Duration, SystemTime};

use k8s_openapi::{api::core::v1::Service, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kuberay_crds::RayCluster;
use kuberay_plugin_sdk::{Event, Host, LogLevel, Outcome, ReconcileError, Request};
use kuberay_rules::labels;

use crate::{
    auth, cluster,
    consts::{action, reason},
    context::{Ctx, Failure},
    gcs_storage, mtls, network_policy, objects, pods, redis_cleanup, service,
    status::{self, Observed},
    validation,
};

/// KubeRay requeues 2 s after a change or an error...
pub const SHORT_REQUEUE: Duration = Duration::from_secs(2);
/// ...and every 5 minutes otherwise (`RAYCLUSTER_DEFAULT_REQUEUE_SECONDS`, or KubeRay's
/// `RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV` in the operator's environment).
pub fn long_requeue(env: &kuberay_rules::operator_env::OperatorEnv) -> Duration {
    Duration::from_secs(u64::try_from(env.raycluster_requeue_seconds).unwrap_or(300))
}

/// The host's time, to the second (the precision Kubernetes stores).
pub fn now<H: Host>(host: &H) -> Time {
    let seconds = host
        .now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let timestamp = i64::try_from(seconds)
        .ok()
        .and_then(|s| Timestamp::from_second(s).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH);
    Time(timestamp)
}

/// Reads the request's RayCluster; one that does not even parse is reported like an invalid spec.
pub fn parse<H: Host>(host: &H, request: Request) -> Result<RayCluster, ReconcileError> {
    request.object.into_typed().map_err(|e| {
        let message = format!("The RayCluster could not be read: {e}");
        let _ = host.record_event(&Event::warning(
            reason::INVALID_SPEC,
            action::VALIDATE,
            message.clone(),
        ));
        ReconcileError::InvalidObject(message)
    })
}

fn invalid<H: Host>(ctx: &Ctx<'_, H>, reason: &str, what: &str, error: &str) -> ReconcileError {
    let message = format!("The RayCluster {what} is invalid {}: {error}", ctx.key());
    ctx.event(Event::warning(reason, action::VALIDATE, message.clone()));
    ReconcileError::InvalidObject(message)
}

pub fn reconcile<H: Host>(host: &H, request: Request) -> Result<Outcome, ReconcileError> {
    let cluster = parse(host, request)?;
    if let Some(manager) = cluster::managed_elsewhere(&cluster.spec) {
        host.log(
            LogLevel::Info,
            "skipping RayCluster managed by another controller",
            &[("managed-by", manager)],
        );
        return Ok(Outcome::done());
    }
    if cluster.metadata.deletion_timestamp.is_some() {
        // Owner references take the children away; the Redis finalizer, if any, is `cleanup`'s job.
        return Ok(Outcome::done());
    }
    let ctx = Ctx::new(host, cluster);
    // KubeRay's NetworkPolicy controller is a controller of its own: it runs whatever the RayCluster
    // controller's validation says, and its failures neither stop the rest nor reach the status.
    let isolation = network_policy::reconcile(&ctx).err();
    // So is KubeRay's mTLS controller, which keeps the certificates of a TLS-enabled cluster.
    let pki = mtls::reconcile(&ctx);
    let cluster = &ctx.cluster;
    validation::validate_metadata(cluster)
        .map_err(|e| invalid(&ctx, reason::INVALID_METADATA, "metadata", &e))?;
    validation::validate_spec(cluster, ctx.id.gates)
        .map_err(|e| invalid(&ctx, reason::INVALID_SPEC, "spec", &e))?;
    // KubeRay's operator runs its mTLS controller only where cert-manager is installed, and refuses such
    // clusters otherwise.
    if pki == Ok(mtls::Pki::NotInstalled) {
        return Err(invalid(&ctx, reason::INVALID_SPEC, "spec", mtls::NOT_INSTALLED));
    }
    // Warnings that do not block are recorded once per spec generation, not on every periodic resync.
    let first_look =
        cluster.status.as_ref().and_then(|s| s.observed_generation) != cluster.metadata.generation;
    if first_look && let Some(warning) = validation::autoscaler_v1_restart_policy_warning(&cluster.spec) {
        ctx.event(Event::warning(
            reason::INVALID_SPEC,
            action::VALIDATE,
            format!("RayCluster spec warning {}: {warning}", ctx.key()),
        ));
    }
    validation::validate_upgrade_options(cluster)
        .map_err(|e| invalid(&ctx, reason::INVALID_SPEC, "UpgradeStrategy", &e))?;
    if let Err(e) = validation::validate_status(cluster) {
        ctx.event(Event::warning(
            reason::INVALID_STATUS,
            action::VALIDATE,
            format!("The RayCluster status is invalid {}, {e}", ctx.key()),
        ));
        return Err(ReconcileError::Transient(e));
    }
    if redis_cleanup::ensure_finalizer(&ctx)? {
        // Everything else waits until the finalizer is stored.
        return Ok(Outcome::requeue_after(SHORT_REQUEUE));
    }

    let failure = run_steps(&ctx, first_look).err();
    if let Some(f) = &failure {
        ctx.log(LogLevel::Warn, &format!("reconcile stopped: {}", f.message));
    }
    let status_written = report_status(&ctx, failure.as_ref())?;

    // A failure of the host or the API server (retried with backoff) wins over a deliberate pause.
    let failures: Vec<Failure> = [failure, isolation, pki.err()].into_iter().flatten().collect();
    // A wait on something outside the operator (cert-manager) looks again later, unless this reconcile
    // changed something or another pause calls for the short requeue.
    let waits: Option<Vec<Duration>> = failures.iter().map(|f| f.retry_after).collect();
    let wait = waits.and_then(|w| w.into_iter().max());
    let busy = status_written || ctx.wrote() || ctx.settling();
    match failures.iter().find(|f| f.host_error) {
        Some(f) => Err(ReconcileError::Transient(f.message.clone())),
        None if failures.is_empty() && !busy => Ok(Outcome::requeue_after(long_requeue(&ctx.id.env))),
        None => Ok(Outcome::requeue_after(
            wait.filter(|_| !busy).unwrap_or(SHORT_REQUEUE),
        )),
    }
}

/// KubeRay's order, except that the Ingress comes after the head Service it routes to: the host lets an
/// Ingress route only to a Service the cluster already controls.
fn run_steps<H: Host>(ctx: &Ctx<'_, H>, first_look: bool) -> Result<(), Failure> {
    objects::reconcile_autoscaler_rbac(ctx)?;
    auth::reconcile_secret(ctx)?;
    objects::reconcile_head_service(ctx)?;
    objects::reconcile_ingress(ctx, first_look)?;
    objects::reconcile_headless_service(ctx)?;
    objects::reconcile_serve_service(ctx)?;
    gcs_storage::reconcile(ctx)?;
    pods::reconcile_pods(ctx)
}

/// Computes the status and writes it if it changed; returns whether it did.
fn report_status<H: Host>(ctx: &Ctx<'_, H>, failure: Option<&Failure>) -> Result<bool, ReconcileError> {
    let observed = Observed {
        pods: ctx.pods(&labels::all_pods(&ctx.id.name))?,
        head_services: ctx.list::<Service>(&service::head_service_selector(&ctx.id.name))?,
    };
    let new = match status::compute(&ctx.cluster, &observed, failure, &now(ctx.host)) {
        Ok(new) => new,
        Err(e) => {
            ctx.log(LogLevel::Warn, &format!("status not updated: {e}"));
            return Err(ReconcileError::Transient(e));
        }
    };
    let old = ctx.cluster.status.clone().unwrap_or_default();
    if ctx.cluster.status.is_some() && status::same(&new, &old) {
        return Ok(false);
    }
    let json = serde_json::to_value(&new)?;
    ctx.host.apply_status(&json)?;
    Ok(true)
}

/// `Plugin::cleanup`: the Redis clean-up of a deleted fault-tolerant cluster.
pub fn cleanup<H: Host>(host: &H, request: Request) -> Result<Outcome, ReconcileError> {
    let cluster = parse(host, request)?;
    let ctx = Ctx::new(host, cluster);
    redis_cleanup::cleanup(&ctx)
}
