//! Scaling one worker group to its desired size, in KubeRay's order: replace broken Pods first (and
//! create nothing else that round, so a crash loop cannot grow the group), honour the autoscaler's
//! `workersToDelete`, then create what is missing. Surplus Pods are removed only without autoscaling:
//! with it, the autoscaler alone picks which workers go, since it knows which are idle.
//!
//! A group with Pods still terminating is left for a later round; this stands in for KubeRay's scale
//! expectations, so a Pod that is going away is neither counted twice nor replaced twice.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kuberay_crds::{WorkerGroupSpec, reasons};
use kuberay_plugin_sdk::{Event, Host};

use crate::{
    cluster::{self, desired_worker_pods, num_of_hosts},
    consts::{action, reason},
    context::{Ctx, Failure},
    multi_host,
    pod::worker::Placement,
    pod_state,
    worker_pods::{create_worker, delete_worker, key, replica_index, take_index},
};

/// Which surplus Pods go first: those not serving yet, then the youngest.
fn surplus_order(a: &Pod, b: &Pod) -> std::cmp::Ordering {
    let created = |p: &Pod| p.metadata.creation_timestamp.clone();
    pod_state::running_and_ready(a)
        .cmp(&pod_state::running_and_ready(b))
        .then_with(|| created(b).cmp(&created(a)))
        .then_with(|| pod_state::name(b).cmp(pod_state::name(a)))
}

pub fn reconcile_group<H: Host>(
    ctx: &Ctx<'_, H>,
    group: &WorkerGroupSpec,
    pods: Vec<Pod>,
) -> Result<(), Failure> {
    let name = &group.group_name;
    if cluster::group_suspended(group) {
        let mut deleted = 0;
        for pod in pods.iter().filter(|p| !pod_state::terminating(p)) {
            ctx.delete(pod).map_err(|e| {
                ctx.event(Event::warning(
                    reason::FAILED_TO_DELETE_WORKER_POD_COLLECTION,
                    action::DELETE,
                    format!(
                        "Failed deleting worker Pods for suspended group {name} in RayCluster {}, {}",
                        ctx.key(),
                        e.message()
                    ),
                ));
                Failure::replica(reasons::FAILED_DELETE_WORKER_POD, &e)
            })?;
            deleted += 1;
        }
        if deleted > 0 {
            ctx.event(Event::normal(
                reason::DELETED_WORKER_POD,
                action::DELETE,
                format!(
                    "Deleted all pods for suspended worker group {name} in RayCluster {}",
                    ctx.key()
                ),
            ));
        }
        return Ok(());
    }
    if pods.iter().any(pod_state::terminating) {
        ctx.mark_settling();
        return Ok(());
    }
    if num_of_hosts(group) > 1 {
        return multi_host::reconcile(ctx, group, pods);
    }

    let mut unhealthy = 0;
    for pod in &pods {
        if let Some(why) = pod_state::should_delete(pod, "worker") {
            delete_worker(ctx, pod, format!("Deleted worker Pod {}; {why}", key(ctx, pod)))?;
            unhealthy += 1;
        }
    }
    if unhealthy > 0 {
        return Err(Failure::pause(format!(
            "delete {unhealthy} unhealthy worker Pods"
        )));
    }

    let mut deleted = BTreeSet::new();
    let to_delete = group
        .scale_strategy
        .as_ref()
        .and_then(|s| s.workers_to_delete.as_ref());
    for victim in to_delete.into_iter().flatten() {
        // Only this group's Pods: the host lets the plugin delete only what the cluster owns anyway.
        if let Some(pod) = pods.iter().find(|p| pod_state::name(p) == victim) {
            delete_worker(ctx, pod, format!("Deleted pod {}", key(ctx, pod)))?;
            deleted.insert(victim.clone());
        }
    }
    let mut running: Vec<&Pod> = pods
        .iter()
        .filter(|p| !deleted.contains(pod_state::name(p)))
        .collect();
    let desired = usize::try_from(desired_worker_pods(group)).unwrap_or(0);
    let mut used: BTreeSet<usize> = running.iter().filter_map(|p| replica_index(p)).collect();
    if desired > running.len() {
        for _ in running.len()..desired {
            let placement = Placement {
                replica_index: take_index(&mut used),
                ..Placement::default()
            };
            create_worker(ctx, group, &placement)?;
        }
    } else if desired < running.len() && !cluster::autoscaling(&ctx.cluster.spec) {
        running.sort_by(|a, b| surplus_order(a, b));
        for pod in running.iter().take(running.len() - desired) {
            delete_worker(ctx, pod, format!("Deleted Pod {}", key(ctx, pod)))?;
        }
    }
    Ok(())
}
