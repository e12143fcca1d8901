//! Worker groups whose replicas span several hosts (`numOfHosts > 1`, for example TPU slices). A replica
//! only works whole, so it is created and deleted as a unit: its Pods share a replica name and index, and
//! one broken or requested-for-deletion host takes its whole replica with it.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use kuberay_crds::{WorkerGroupSpec, constants::labels};
use kuberay_plugin_sdk::Host;

use crate::{
    cluster::{self, desired_worker_pods, num_of_hosts},
    context::{Ctx, Failure},
    pod::worker::Placement,
    pod_state,
    worker_pods::{create_worker, delete_worker, key, replica_index, take_index},
};

/// Groups whose replicas span several hosts (TPU slices): every replica is created and deleted whole,
/// its Pods sharing a replica name and index.
pub fn reconcile<H: Host>(ctx: &Ctx<'_, H>, group: &WorkerGroupSpec, pods: Vec<Pod>) -> Result<(), Failure> {
    let hosts = usize::try_from(num_of_hosts(group)).unwrap_or(1);
    let name = &group.group_name;
    let mut replicas: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for pod in &pods {
        if let Some(replica) = pod_state::label(pod, labels::RAY_WORKER_GROUP_REPLICA_NAME) {
            replicas.entry(replica.to_string()).or_default().push(pod);
        }
    }
    let delete_replica = |members: &[&Pod], why: &str| -> Result<(), Failure> {
        for pod in members {
            delete_worker(
                ctx,
                pod,
                format!("Deleted worker Pod {} for group {name}: {why}", key(ctx, pod)),
            )?;
        }
        Ok(())
    };

    // A replica that lost a host is useless: remove the rest of it and start over next round.
    if let Some((replica, members)) = replicas.iter().find(|(_, m)| m.len() < hosts) {
        delete_replica(members, "cleanup of incomplete multi-host group")?;
        return Err(Failure::pause(format!(
            "cleaned up incomplete replica group {replica}, requeueing"
        )));
    }

    let mut broken = BTreeSet::new();
    for pod in &pods {
        let Some(replica) = pod_state::label(pod, labels::RAY_WORKER_GROUP_REPLICA_NAME) else {
            continue;
        };
        if broken.contains(replica) {
            continue;
        }
        if let Some(why) = pod_state::should_delete(pod, "worker")
            && let Some(members) = replicas.get(replica)
        {
            delete_replica(members, &why)?;
            broken.insert(replica.to_string());
        }
    }

    let requested = group
        .scale_strategy
        .as_ref()
        .and_then(|s| s.workers_to_delete.as_ref());
    let mut doomed: BTreeSet<String> = BTreeSet::new();
    for victim in requested.into_iter().flatten() {
        if let Some(replica) = pods
            .iter()
            .find(|p| pod_state::name(p) == victim)
            .and_then(|p| pod_state::label(p, labels::RAY_WORKER_GROUP_REPLICA_NAME))
            .filter(|r| !broken.contains(*r))
        {
            doomed.insert(replica.to_string());
        }
    }
    if !doomed.is_empty() {
        let mut count = 0;
        for replica in &doomed {
            let members = replicas.get(replica).map(Vec::as_slice).unwrap_or_default();
            count += members.len();
            delete_replica(members, "autoscaler scale-down request")?;
        }
        return Err(Failure::pause(format!(
            "deleted {count} worker Pods based on ScaleStrategy, requeueing"
        )));
    }

    let valid: Vec<(&String, &Vec<&Pod>)> = replicas.iter().filter(|(r, _)| !broken.contains(*r)).collect();
    let desired = usize::try_from(desired_worker_pods(group)).unwrap_or(0) / hosts;
    let mut used: BTreeSet<usize> = valid
        .iter()
        .filter_map(|(_, members)| members.first().and_then(|p| replica_index(p)))
        .collect();
    if desired > valid.len() {
        let taken: BTreeSet<&str> = replicas.keys().map(String::as_str).collect();
        for n in 0..desired - valid.len() {
            let replica_index = take_index(&mut used);
            let replica_name = unique_replica_name(ctx, name, &taken, n);
            for host_index in 0..hosts {
                let placement = Placement {
                    replica_index,
                    replica_name: Some(replica_name.clone()),
                    host_index,
                };
                create_worker(ctx, group, &placement)?;
            }
        }
    } else if desired < valid.len() && !cluster::autoscaling(&ctx.cluster.spec) {
        // Highest replica indices first, so the remaining indices stay dense.
        let mut surplus = valid;
        surplus.sort_by_key(|(_, members)| std::cmp::Reverse(members.first().and_then(|p| replica_index(p))));
        for (_, members) in surplus.iter().take(surplus.len() - desired) {
            delete_replica(members, "scaling down")?;
        }
    }
    Ok(())
}

/// `<group>-<5 characters>` like KubeRay's replica names, from Kubernetes' random-name alphabet. The
/// plugin has no random source of its own, so the suffix is a hash of the cluster, the time and a
/// counter, re-drawn on collision.
fn unique_replica_name<H: Host>(ctx: &Ctx<'_, H>, group: &str, taken: &BTreeSet<&str>, n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let nanos = ctx
        .host
        .now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    for attempt in 0u32.. {
        let seed = format!("{}/{group}/{nanos}/{n}/{attempt}", ctx.id.uid);
        let digest = sha1_smol::Sha1::from(seed.as_bytes()).digest().bytes();
        let suffix: String = digest
            .iter()
            .take(5)
            .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
            .collect();
        let candidate = format!("{group}-{suffix}");
        if !taken.contains(candidate.as_str()) {
            return candidate;
        }
    }
    format!("{group}-{n}")
}
