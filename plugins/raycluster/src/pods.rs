//! The Pods of a cluster: suspension and `Recreate` upgrades first (both delete everything), then the
//! head, then each worker group.

use k8s_openapi::api::core::v1::Pod;
use kuberay_crds::{
    constants::{annotations, conditions},
    reasons,
};
use kuberay_plugin_sdk::{Event, Host, HostError, Kind, LogLevel};
use kuberay_rules::labels;

use crate::{
    batch,
    consts::{KUBERAY_VERSION, action, reason},
    context::{Ctx, Failure},
    pod::head,
    pod_state, scaling,
    suspend::{self, SuspendState},
    upgrade,
};

/// Deletes every Pod that is not already terminating; returns how many it deleted.
pub fn delete_all<H: Host>(ctx: &Ctx<'_, H>, selector: &str) -> Result<usize, HostError> {
    let mut deleted = 0;
    for pod in ctx.pods(selector)? {
        if !pod_state::terminating(&pod) {
            ctx.delete(&pod)?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

fn delete_all_or_fail<H: Host>(ctx: &Ctx<'_, H>, why: &str) -> Result<(), Failure> {
    match delete_all(ctx, &labels::all_pods(&ctx.id.name)) {
        Ok(_) => {
            ctx.event(Event::normal(
                reason::DELETED_POD,
                action::DELETE,
                why.to_string(),
            ));
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_DELETE_POD_COLLECTION,
                action::DELETE,
                format!(
                    "Failed deleting Pods for RayCluster {}, {}",
                    ctx.key(),
                    e.message()
                ),
            ));
            Err(Failure::replica(reasons::FAILED_DELETE_ALL_PODS, &e))
        }
    }
}

/// Whether the head Pod was made by another operator version (KubeRay's before a switch, or another
/// release), whose spec hash is not comparable with this one's.
fn other_version(head: &Pod) -> bool {
    head.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::KUBERAY_VERSION))
        .is_some_and(|v| !v.is_empty() && v != KUBERAY_VERSION)
}

/// Whether the head Pod was built from another spec than the current one.
fn spec_changed(head: Option<&Pod>, hash: &str) -> bool {
    head.and_then(|p| p.metadata.annotations.as_ref())
        .and_then(|a| a.get(annotations::RAY_UPGRADE_STRATEGY_RECREATE_HASH))
        .is_some_and(|h| !h.is_empty() && h != hash)
}

/// KubeRay's answer to a head Pod of another operator version under `Recreate`: no re-creation, but the Pod
/// is stamped with this version and the current spec's hash, so that the next change of the spec is seen.
/// (Without it, a cluster taken over from KubeRay would never be re-created again.) A failed stamp is logged
/// and tried again next time, as KubeRay does.
fn stamp_version<H: Host>(ctx: &Ctx<'_, H>, head: &Pod, hash: &str) {
    let stamp = Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: head.metadata.name.clone(),
            namespace: head.metadata.namespace.clone(),
            annotations: Some(
                [
                    (annotations::RAY_UPGRADE_STRATEGY_RECREATE_HASH, hash),
                    (annotations::KUBERAY_VERSION, KUBERAY_VERSION),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ),
            ..Default::default()
        },
        ..Pod::default()
    };
    if let Err(e) = ctx.apply(&stamp) {
        ctx.log(
            LogLevel::Warn,
            &format!(
                "could not stamp head Pod {} with this version's spec hash: {}",
                pod_state::name(head),
                e.message()
            ),
        );
    }
}

pub fn reconcile_pods<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    let cluster = &ctx.cluster;
    match suspend::state(cluster) {
        SuspendState::Suspending => {
            let why = format!("Deleted Pods for RayCluster {} due to suspension", ctx.key());
            return delete_all_or_fail(ctx, &why);
        }
        SuspendState::Suspended => return Ok(()),
        SuspendState::Running if cluster.spec.suspend == Some(true) => return Ok(()),
        SuspendState::Running => {}
    }

    let hash = kuberay_rules::hash::recreate_hash(&cluster.spec);
    let heads = ctx.pods(&labels::head_pods(&ctx.id.name))?;
    if upgrade::recreate(&cluster.spec)
        && let Some(head) = heads.first().filter(|h| other_version(h))
    {
        stamp_version(ctx, head, &hash);
    } else if upgrade::recreate(&cluster.spec) && spec_changed(heads.first(), &hash) {
        let why = format!(
            "Deleted all Pods for RayCluster {} due to spec change with Recreate upgradeStrategy",
            ctx.key()
        );
        return delete_all_or_fail(ctx, &why);
    }

    batch::submit(ctx)?;
    reconcile_head(ctx, &heads, &hash)?;

    for group in cluster.spec.worker_group_specs.iter().flatten() {
        let pods = ctx.pods(&labels::group_pods(&ctx.id.name, &group.group_name))?;
        scaling::reconcile_group(ctx, group, pods)?;
    }
    Ok(())
}

fn reconcile_head<H: Host>(ctx: &Ctx<'_, H>, heads: &[Pod], hash: &str) -> Result<(), Failure> {
    match heads {
        [] => create_head(ctx, hash),
        [head] => {
            let Some(why) = pod_state::should_delete(head, "head") else {
                return Ok(());
            };
            let key = format!("{}/{}", ctx.id.namespace, pod_state::name(head));
            if let Err(e) = ctx.delete(head) {
                ctx.event(Event::warning(
                    reason::FAILED_TO_DELETE_HEAD_POD,
                    action::DELETE,
                    format!("Failed deleting head Pod {key}; {why}, {}", e.message()),
                ));
                return Err(Failure::replica(reasons::FAILED_DELETE_HEAD_POD, &e));
            }
            ctx.event(
                Event::normal(
                    reason::DELETED_HEAD_POD,
                    action::DELETE,
                    format!("Deleted head Pod {key}; {why}"),
                )
                .about(Kind::of::<Pod>(), pod_state::name(head)),
            );
            Err(Failure::pause(why))
        }
        many => {
            let names: Vec<&str> = many.iter().map(pod_state::name).collect();
            Err(Failure::pause(format!(
                "{} head pods found {names:?}. Please delete extra head pods",
                many.len()
            )))
        }
    }
}

fn create_head<H: Host>(ctx: &Ctx<'_, H>, hash: &str) -> Result<(), Failure> {
    let cluster = &ctx.cluster;
    // A provisioned cluster of a sidecar-mode RayJob gains nothing from a new head: the job is gone with
    // the old one.
    let provisioned = suspend::condition_true(cluster, conditions::RAY_CLUSTER_PROVISIONED);
    let no_restart = crate::cluster::annotation(cluster, annotations::RAY_DISABLE_PROVISIONED_HEAD_RESTART)
        == Some("true");
    if provisioned && no_restart {
        ctx.log(
            LogLevel::Info,
            "head Pod gone; not re-created (ray.io/disable-provisioned-head-restart)",
        );
        return Ok(());
    }
    crate::mtls::ready_for_pods(ctx)?;
    let mut pod = head::build(cluster, &ctx.id, Some(hash)).map_err(|e| Failure::pause(e.0))?;
    batch::decorate(ctx, &mut pod, kuberay_crds::constants::HEAD_GROUP_NAME);
    match ctx.create(&pod) {
        Ok(created) => {
            let name = pod_state::name(&created);
            ctx.event(
                Event::normal(
                    reason::CREATED_HEAD_POD,
                    action::CREATE,
                    format!("Created head Pod {}/{name}", ctx.id.namespace),
                )
                .about(Kind::of::<Pod>(), name),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_HEAD_POD,
                action::CREATE,
                format!(
                    "Failed to create head Pod {}/{}, {}",
                    ctx.id.namespace,
                    pod.metadata.generate_name.as_deref().unwrap_or_default(),
                    e.message()
                ),
            ));
            Err(Failure::replica(reasons::FAILED_CREATE_HEAD_POD, &e))
        }
    }
}
