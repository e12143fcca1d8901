//! `spec.networkPolicy` with the `RayClusterNetworkPolicy` gate on (KubeRay's NetworkPolicy controller):
//! one NetworkPolicy for the head (`<cluster>-head`) and one per worker group
//! (`<cluster>-workers-<group>`). Each allows all traffic between the cluster's own Pods, denies the
//! directions the mode names, and adds the user's rules (a worker group's own entry replaces `worker`); the
//! head of a RayJob's cluster in K8sJobMode also admits the job's submitter on the dashboard port. Policies
//! of groups that left the spec, or of a spec without `networkPolicy`, are deleted; the cluster's deletion
//! leaves the rest to owner-reference garbage collection. With the gate off nothing is read or written,
//! policies made earlier included, as KubeRay's controller then does not run.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::networking::v1::{
        NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
        NetworkPolicyPort, NetworkPolicySpec,
    },
    apimachinery::pkg::{
        apis::meta::v1::{LabelSelector, ObjectMeta},
        util::intstr::IntOrString,
    },
};
use kuberay_crds::{
    NetworkPolicyConfig, NetworkPolicyMode, NetworkPolicyRules, RayCluster,
    constants::{HEAD_GROUP_NAME, labels, node_type},
};
use kuberay_plugin_sdk::{Event, Host, HostError};

use crate::{
    cluster::Identity,
    consts::{APPLICATION_NAME, COMPONENT_NAME, DEFAULT_DASHBOARD_PORT, action},
    context::{Ctx, Failure},
};

/// KubeRay's event reasons of its NetworkPolicy controller.
pub mod reason {
    pub const CREATED: &str = "CreatedNetworkPolicy";
    pub const UPDATED: &str = "UpdatedNetworkPolicy";
    pub const DELETED: &str = "DeletedNetworkPolicy";
    pub const FAILED_TO_CREATE: &str = "FailedToCreateNetworkPolicy";
    pub const FAILED_TO_UPDATE: &str = "FailedToUpdateNetworkPolicy";
    pub const FAILED_TO_DELETE: &str = "FailedToDeleteNetworkPolicy";
    pub const NAME_COLLISION: &str = "NetworkPolicyNameCollision";
}

/// The head's NetworkPolicy name.
pub fn head_name(cluster: &str) -> String {
    format!("{cluster}-head")
}

/// A worker group's NetworkPolicy name.
pub fn worker_group_name(cluster: &str, group: &str) -> String {
    format!("{cluster}-workers-{group}")
}

/// Every NetworkPolicy the spec asks for: the head's, then one per worker group in the spec's order.
pub fn build_all(cluster: &RayCluster, id: &Identity, config: &NetworkPolicyConfig) -> Vec<NetworkPolicy> {
    let mode = config.mode.unwrap_or(NetworkPolicyMode::DenyAll);
    let mut policies = vec![build_head(cluster, id, config, mode)];
    for group in cluster.spec.worker_group_specs.iter().flatten() {
        policies.push(build_worker_group(id, config, mode, &group.group_name));
    }
    policies
}

fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
        ),
        match_expressions: None,
    }
}

fn metadata(id: &Identity, name: String, group: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(id.namespace.clone()),
        labels: Some(BTreeMap::from([
            (labels::RAY_CLUSTER.to_string(), id.name.clone()),
            (labels::RAY_NODE_GROUP.to_string(), group.to_string()),
            (
                labels::KUBERNETES_APPLICATION_NAME.to_string(),
                APPLICATION_NAME.to_string(),
            ),
            (
                labels::KUBERNETES_CREATED_BY.to_string(),
                COMPONENT_NAME.to_string(),
            ),
        ])),
        ..ObjectMeta::default()
    }
}

/// A peer of every Pod of the cluster.
fn cluster_peer(id: &Identity) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        pod_selector: Some(selector(&[(labels::RAY_CLUSTER, &id.name)])),
        ..NetworkPolicyPeer::default()
    }
}

/// The policy of `pods` under `mode`: the cluster's own traffic both ways, plus `ingress`/`egress` (the
/// directions the mode restricts only).
fn policy(
    mode: NetworkPolicyMode,
    pods: LabelSelector,
    mut ingress: Vec<NetworkPolicyIngressRule>,
    custom: Option<&NetworkPolicyRules>,
    id: &Identity,
) -> NetworkPolicySpec {
    let mut spec = NetworkPolicySpec {
        pod_selector: Some(pods),
        ..NetworkPolicySpec::default()
    };
    let mut types = Vec::new();
    if mode != NetworkPolicyMode::DenyAllEgress {
        types.push("Ingress".to_string());
        ingress.extend(custom.and_then(|c| c.ingress_rules.clone()).unwrap_or_default());
        spec.ingress = Some(ingress);
    }
    if mode != NetworkPolicyMode::DenyAllIngress {
        types.push("Egress".to_string());
        let mut egress = vec![NetworkPolicyEgressRule {
            to: Some(vec![cluster_peer(id)]),
            ports: None,
        }];
        egress.extend(custom.and_then(|c| c.egress_rules.clone()).unwrap_or_default());
        spec.egress = Some(egress);
    }
    spec.policy_types = Some(types);
    spec
}

fn build_head(
    cluster: &RayCluster,
    id: &Identity,
    config: &NetworkPolicyConfig,
    mode: NetworkPolicyMode,
) -> NetworkPolicy {
    let mut ingress = vec![NetworkPolicyIngressRule {
        from: Some(vec![cluster_peer(id)]),
        ports: None,
    }];
    if let Some(submitter) = submitter_peer(cluster) {
        ingress.push(NetworkPolicyIngressRule {
            from: Some(vec![submitter]),
            ports: Some(vec![NetworkPolicyPort {
                protocol: Some("TCP".into()),
                port: Some(IntOrString::Int(dashboard_port(cluster))),
                end_port: None,
            }]),
        });
    }
    let pods = selector(&[
        (labels::RAY_CLUSTER, &id.name),
        (labels::RAY_NODE_TYPE, node_type::HEAD),
    ]);
    NetworkPolicy {
        metadata: metadata(id, head_name(&id.name), HEAD_GROUP_NAME),
        spec: Some(policy(mode, pods, ingress, config.head.as_ref(), id)),
    }
}

fn build_worker_group(
    id: &Identity,
    config: &NetworkPolicyConfig,
    mode: NetworkPolicyMode,
    group: &str,
) -> NetworkPolicy {
    // A group's own entry replaces `worker`, it is not merged with it.
    let custom = config
        .worker_groups
        .iter()
        .flatten()
        .find(|g| g.group_name == group)
        .map(|g| &g.rules)
        .or(config.worker.as_ref());
    let ingress = vec![NetworkPolicyIngressRule {
        from: Some(vec![cluster_peer(id)]),
        ports: None,
    }];
    let pods = selector(&[
        (labels::RAY_CLUSTER, &id.name),
        (labels::RAY_NODE_TYPE, node_type::WORKER),
        (labels::RAY_NODE_GROUP, group),
    ]);
    NetworkPolicy {
        metadata: metadata(id, worker_group_name(&id.name, group), group),
        spec: Some(policy(mode, pods, ingress, custom, id)),
    }
}

/// The submitter Pods of the RayJob that controls the cluster, if the job submits in K8sJobMode (its
/// submitter is a Job of its own; other modes submit from the head or from outside).
fn submitter_peer(cluster: &RayCluster) -> Option<NetworkPolicyPeer> {
    let mode = cluster
        .metadata
        .labels
        .as_ref()?
        .get(labels::RAY_JOB_SUBMISSION_MODE)?;
    if mode != "K8sJobMode" {
        return None;
    }
    let job =
        cluster.metadata.owner_references.iter().flatten().find(|r| {
            r.kind == "RayJob" && r.controller == Some(true) && r.api_version.starts_with("ray.io/")
        })?;
    Some(NetworkPolicyPeer {
        pod_selector: Some(selector(&[
            (labels::RAY_ORIGINATED_FROM_CR_NAME, &job.name),
            (labels::RAY_ORIGINATED_FROM_CRD, "RayJob"),
        ])),
        ..NetworkPolicyPeer::default()
    })
}

/// The head's `dashboard-port` start parameter if it is a number, else 8265.
fn dashboard_port(cluster: &RayCluster) -> i32 {
    cluster
        .spec
        .head_group_spec
        .ray_start_params
        .as_ref()
        .and_then(|p| p.get("dashboard-port"))
        .and_then(|p| p.parse().ok())
        .unwrap_or(DEFAULT_DASHBOARD_PORT)
}

/// The API server gives a port without a protocol TCP; the desired policy says so too, so that the
/// comparison with the stored one sees no difference.
fn default_protocols(spec: &mut NetworkPolicySpec) {
    let ports = spec
        .ingress
        .iter_mut()
        .flatten()
        .flat_map(|r| r.ports.iter_mut().flatten())
        .chain(
            spec.egress
                .iter_mut()
                .flatten()
                .flat_map(|r| r.ports.iter_mut().flatten()),
        );
    for port in ports {
        port.protocol.get_or_insert_with(|| "TCP".into());
    }
}

/// Makes the cluster's NetworkPolicies what the spec asks (nothing with the gate off). A failure is
/// reported with KubeRay's Warning event and returned; the caller retries without stopping the rest of the
/// reconcile, since KubeRay runs this as a controller of its own.
pub fn reconcile<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    if !ctx.id.gates.network_policy {
        return Ok(());
    }
    let desired = match &ctx.cluster.spec.network_policy {
        Some(config) => build_all(&ctx.cluster, &ctx.id, config),
        None => Vec::new(),
    };
    for policy in &desired {
        create_or_update(ctx, policy)?;
    }
    let names: Vec<&str> = desired
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    delete_stale(ctx, &names)
}

fn key<H: Host>(ctx: &Ctx<'_, H>, name: &str) -> String {
    format!("{}/{name}", ctx.id.namespace)
}

fn create_or_update<H: Host>(ctx: &Ctx<'_, H>, desired: &NetworkPolicy) -> Result<(), Failure> {
    let name = desired.metadata.name.clone().unwrap_or_default();
    let key = key(ctx, &name);
    let Some(live) = ctx.get::<NetworkPolicy>(&name)? else {
        return write(
            ctx,
            desired,
            &key,
            (
                reason::CREATED,
                reason::FAILED_TO_CREATE,
                action::CREATE,
                "create",
            ),
        );
    };
    if !ctx.controls(&live.metadata) {
        ctx.event(Event::warning(
            reason::NAME_COLLISION,
            action::VALIDATE,
            format!(
                "NetworkPolicy {key} already exists and is not owned by this RayCluster, network isolation will \
                 not be applied. Rename the existing NetworkPolicy or use a different RayCluster name to avoid \
                 the collision"
            ),
        ));
        return Err(Failure::error(format!(
            "NetworkPolicy {key} already exists and is not owned by this RayCluster"
        )));
    }
    let mut wanted = desired.spec.clone().unwrap_or_default();
    default_protocols(&mut wanted);
    // The API server defaults protocols on what it stores; a cache that has not seen that yet must not
    // make a difference either.
    let mut stored = live.spec.clone().unwrap_or_default();
    default_protocols(&mut stored);
    let live_labels = live.metadata.labels.clone().unwrap_or_default();
    let labels_held = desired
        .metadata
        .labels
        .iter()
        .flatten()
        .all(|(k, v)| live_labels.get(k) == Some(v));
    if stored == wanted && labels_held {
        return Ok(());
    }
    write(
        ctx,
        desired,
        &key,
        (
            reason::UPDATED,
            reason::FAILED_TO_UPDATE,
            action::UPDATE,
            "update",
        ),
    )
}

/// Applies `policy`, with the event of success (`Created`/`Updated NetworkPolicy <key>`) or failure.
fn write<H: Host>(
    ctx: &Ctx<'_, H>,
    policy: &NetworkPolicy,
    key: &str,
    (done, failed, verb, what): (&str, &str, &str, &str),
) -> Result<(), Failure> {
    match ctx.apply(policy) {
        Ok(_) => {
            let past = if what == "create" { "Created" } else { "Updated" };
            ctx.event(Event::normal(done, verb, format!("{past} NetworkPolicy {key}")));
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                failed,
                verb,
                format!("Failed to {what} NetworkPolicy {key}: {}", e.message()),
            ));
            Err(e.into())
        }
    }
}

/// Deletes the cluster's NetworkPolicies (`ray.io/cluster=<name>`, controlled by it) not in `keep`.
fn delete_stale<H: Host>(ctx: &Ctx<'_, H>, keep: &[&str]) -> Result<(), Failure> {
    let selector = format!("{}={}", labels::RAY_CLUSTER, ctx.id.name);
    for policy in ctx.list::<NetworkPolicy>(&selector)? {
        let name = policy.metadata.name.clone().unwrap_or_default();
        if keep.contains(&name.as_str()) || !ctx.controls(&policy.metadata) {
            continue;
        }
        let key = key(ctx, &name);
        match ctx.delete(&policy) {
            Ok(()) => ctx.event(Event::normal(
                reason::DELETED,
                action::DELETE,
                format!("Deleted NetworkPolicy {key}"),
            )),
            Err(HostError::NotFound(_)) => {}
            Err(e) => {
                ctx.event(Event::warning(
                    reason::FAILED_TO_DELETE,
                    action::DELETE,
                    format!("Failed to delete NetworkPolicy {key}: {}", e.message()),
                ));
                return Err(e.into());
            }
        }
    }
    Ok(())
}
