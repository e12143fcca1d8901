//! The status KubeRay reports: worker counts, desired resources, where the head is, `state`, and the
//! conditions. It is computed from what the reconcile saw and did, starting from the previous status,
//! and every timestamp in it moves only when the value it dates changes: an unchanged cluster yields a
//! byte-identical status, which is then not written at all.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Pod, Service},
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{Condition, Time},
        util::intstr::IntOrString,
    },
};
use kuberay_crds::{
    ClusterState, HeadInfo, RayCluster, RayClusterStatus,
    constants::{conditions as types, labels, node_type},
    reasons,
};

use crate::{
    cluster::{desired_worker_pods, group_suspended, num_of_hosts, saturate_i32},
    conditions::{self, is_true, set},
    context::Failure,
    pod_state, resources,
    suspend::{self, SuspendState},
};

/// What the status is computed from: the cluster's Pods and head Services after this reconcile's work.
pub struct Observed {
    pub pods: Vec<Pod>,
    pub head_services: Vec<Service>,
}

/// Go's `omitempty` for the counters: zero is left out of the JSON.
fn nonzero(n: i64) -> Option<i32> {
    (n != 0).then(|| saturate_i32(n))
}

fn quantity(q: &crate::quantity::Quantity) -> Option<Quantity> {
    Some(Quantity(q.canonical()))
}

/// `HeadPodReady` from the head Pod's own `Ready` condition; `ContainersNotReady` is replaced by the first
/// container's waiting or terminated reason, which says more.
fn head_pod_ready(head: &Pod) -> (String, String, String) {
    let mut result = ("False".to_string(), reasons::UNKNOWN.to_string(), String::new());
    let ready = head
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    let Some(ready) = ready else {
        return result;
    };
    result.0 = ready.status.clone();
    result.2 = ready.message.clone().unwrap_or_default();
    let mut reason = ready.reason.clone().unwrap_or_default();
    if ready.status == "True" && reason.is_empty() {
        reason = reasons::HEAD_POD_RUNNING_AND_READY.to_string();
    }
    if !reason.is_empty() {
        result.1 = reason.clone();
    }
    if reason == "ContainersNotReady" {
        let statuses = head.status.as_ref().and_then(|s| s.container_statuses.as_ref());
        let detail = statuses.into_iter().flatten().find_map(|s| {
            let state = s.state.as_ref()?;
            if let Some(waiting) = &state.waiting {
                return Some((waiting.reason.clone(), s.name.clone(), waiting.message.clone()));
            }
            state
                .terminated
                .as_ref()
                .map(|t| (t.reason.clone(), s.name.clone(), t.message.clone()))
        });
        if let Some((why, name, message)) = detail {
            if !result.2.is_empty() {
                result.2.push_str("; ");
            }
            result
                .2
                .push_str(&format!("{name}: {}", message.unwrap_or_default()));
            result.1 = why.unwrap_or_default();
        }
    }
    result
}

/// `status.endpoints`: the head Service's named ports (node port if any, else target port).
fn endpoints(service: &Service, endpoints: &mut BTreeMap<String, String>) {
    for port in service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .into_iter()
        .flatten()
    {
        let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) else {
            continue;
        };
        let value = match (&port.node_port, &port.target_port) {
            (Some(node_port), _) if *node_port != 0 => node_port.to_string(),
            (_, Some(IntOrString::Int(target))) if *target != 0 => target.to_string(),
            (_, Some(IntOrString::String(target))) if !target.is_empty() => target.clone(),
            // The API server defaults `targetPort` to `port`; a Service read before defaulting lacks it.
            _ => port.port.to_string(),
        };
        endpoints.insert(name.to_string(), value);
    }
}

pub fn compute(
    cluster: &RayCluster,
    observed: &Observed,
    failure: Option<&Failure>,
    now: &Time,
) -> Result<RayClusterStatus, String> {
    let old = cluster.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut conds: Vec<Condition> = old.conditions.clone().unwrap_or_default();
    match failure {
        Some(f) => {
            if let Some(reason) = f.replica_failure {
                set(
                    &mut conds,
                    types::RAY_CLUSTER_REPLICA_FAILURE,
                    "True",
                    reason,
                    &f.message,
                    now,
                );
            }
        }
        None => conditions::remove(&mut conds, types::RAY_CLUSTER_REPLICA_FAILURE),
    }
    status.observed_generation = cluster.metadata.generation.filter(|g| *g != 0);

    let pods = &observed.pods;
    let workers = || {
        pods.iter()
            .filter(|p| pod_state::label(p, labels::RAY_NODE_TYPE) == Some(node_type::WORKER))
    };
    let groups: Vec<_> = cluster.spec.worker_group_specs.iter().flatten().collect();
    let desired_workers: i64 = groups.iter().map(|g| desired_worker_pods(g)).sum();
    status.ready_worker_replicas =
        nonzero(workers().filter(|p| pod_state::running_and_ready(p)).count() as i64);
    status.available_worker_replicas =
        nonzero(workers().filter(|p| pod_state::phase(p) == "Running").count() as i64);
    status.desired_worker_replicas = nonzero(desired_workers);
    let active = groups.iter().filter(|g| !group_suspended(g));
    status.min_worker_replicas = nonzero(
        active
            .clone()
            .map(|g| i64::from(g.min_replicas.unwrap_or(0)) * i64::from(num_of_hosts(g)))
            .sum(),
    );
    status.max_worker_replicas = nonzero(
        active
            .map(|g| i64::from(g.max_replicas.unwrap_or(i32::MAX)) * i64::from(num_of_hosts(g)))
            .sum(),
    );

    let total = resources::desired(&cluster.spec);
    let zero = crate::quantity::Quantity::default();
    status.desired_cpu = quantity(total.get("cpu").unwrap_or(&zero));
    status.desired_memory = quantity(total.get("memory").unwrap_or(&zero));
    status.desired_gpu = quantity(&resources::gpus(&total));
    status.desired_tpu = quantity(total.get("google.com/tpu").unwrap_or(&zero));

    let all_running = !pods.is_empty() && pods.iter().all(pod_state::running_not_unready);
    if failure.is_none()
        && i64::try_from(pods.len()).unwrap_or(i64::MAX) == desired_workers + 1
        && all_running
    {
        status.state = Some(ClusterState::Ready);
        status.reason = None;
    }

    let heads: Vec<&Pod> = pods
        .iter()
        .filter(|p| pod_state::label(p, labels::RAY_NODE_TYPE) == Some(node_type::HEAD))
        .collect();
    if heads.len() > 1 {
        return Err(format!("found multiple heads: {}", heads.len()));
    }
    let head = heads.first().copied();
    match head {
        None => set(
            &mut conds,
            types::HEAD_POD_READY,
            "False",
            reasons::HEAD_POD_NOT_FOUND,
            "Head Pod not found",
            now,
        ),
        Some(head) => {
            let (s, reason, message) = head_pod_ready(head);
            set(&mut conds, types::HEAD_POD_READY, &s, &reason, &message, now);
        }
    }

    let suspend_state = suspend::state(cluster);
    if !is_true(&conds, types::RAY_CLUSTER_PROVISIONED) && suspend_state != SuspendState::Suspended {
        if all_running {
            set(
                &mut conds,
                types::RAY_CLUSTER_PROVISIONED,
                "True",
                reasons::ALL_POD_RUNNING_AND_READY_FIRST_TIME,
                "All Ray Pods are ready for the first time",
                now,
            );
        } else {
            set(
                &mut conds,
                types::RAY_CLUSTER_PROVISIONED,
                "False",
                reasons::RAY_CLUSTER_PODS_PROVISIONING,
                "RayCluster Pods are being provisioned for first time",
                now,
            );
        }
    }
    let suspending = types::RAY_CLUSTER_SUSPENDING;
    let suspended = types::RAY_CLUSTER_SUSPENDED;
    match suspend_state {
        SuspendState::Suspending => {
            if pods.is_empty() {
                set(
                    &mut conds,
                    types::RAY_CLUSTER_PROVISIONED,
                    "False",
                    reasons::RAY_CLUSTER_PODS_PROVISIONING,
                    "RayCluster has been suspended",
                    now,
                );
                set(&mut conds, suspending, "False", suspending, "", now);
                set(&mut conds, suspended, "True", suspended, "", now);
            }
        }
        SuspendState::Suspended => {
            if cluster.spec.suspend != Some(true) {
                set(&mut conds, suspended, "False", suspended, "", now);
            }
        }
        SuspendState::Running => {
            set(&mut conds, suspended, "False", suspended, "", now);
            let requested = if cluster.spec.suspend == Some(true) {
                "True"
            } else {
                "False"
            };
            set(&mut conds, suspending, requested, suspending, "", now);
        }
    }
    if cluster.spec.suspend == Some(true) && pods.is_empty() {
        status.state = Some(ClusterState::Suspended);
    }
    status.conditions = (!conds.is_empty()).then_some(conds);

    let mut ends = old.endpoints.clone().unwrap_or_default();
    let mut head_info = HeadInfo {
        pod_ip: head
            .and_then(|h| h.status.as_ref())
            .and_then(|s| s.pod_ip.clone())
            .filter(|ip| !ip.is_empty()),
        pod_name: head.and_then(|h| h.metadata.name.clone()),
        ..HeadInfo::default()
    };
    if observed.head_services.len() > 1 {
        return Err("found multiple head services".into());
    }
    if let Some(service) = observed.head_services.first() {
        endpoints(service, &mut ends);
        let cluster_ip = service
            .spec
            .as_ref()
            .and_then(|s| s.cluster_ip.clone())
            .unwrap_or_default();
        head_info.service_name = service.metadata.name.clone();
        head_info.service_ip = if cluster_ip == "None" {
            head_info.pod_ip.clone()
        } else {
            Some(cluster_ip).filter(|ip| !ip.is_empty())
        };
    }
    status.endpoints = (!ends.is_empty()).then_some(ends);
    // KubeRay writes `head: {}` once neither head Pod nor Service is left; through server-side apply an
    // emptied map becomes null, which the CRD's schema refuses, so an empty head is left out instead.
    status.head = (head_info != HeadInfo::default()).then_some(head_info);

    if status.state != old.state
        && let Some(state) = &status.state
    {
        status
            .state_transition_times
            .get_or_insert_with(BTreeMap::new)
            .insert(state.as_str().to_string(), now.clone());
    }
    // `lastUpdateTime` moves only when something else did.
    status.last_update_time = old.last_update_time.clone();
    if !same(&status, &old) {
        status.last_update_time = Some(now.clone());
    }
    Ok(status)
}

/// Whether two statuses are the same apart from `lastUpdateTime`, compared in their JSON form.
pub fn same(a: &RayClusterStatus, b: &RayClusterStatus) -> bool {
    let strip = |s: &RayClusterStatus| {
        let mut s = s.clone();
        s.last_update_time = None;
        serde_json::to_value(s).ok()
    };
    strip(a) == strip(b)
}
