//! The RayService's RayClusters: what a cluster built from the RayService looks like (KubeRay's
//! `constructRayClusterForRayService`), whether an existing cluster can be updated in place or a new one is
//! needed (the `ray.io/hash-without-replicas-and-workers-to-delete` annotation compared with the spec), and
//! the writes that create and update clusters.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kuberay_crds::{
    RayCluster, RayClusterSpec, RayService, RayServiceStatuses, RayServiceUpgradeType,
    constants::{annotations, labels},
};
use kuberay_plugin_sdk::{HostError, Kind, TypedHost};
use kuberay_rules::{
    consts::{KUBERAY_VERSION, action, crd},
    hash,
    report::Report,
};

use crate::{conditions, consts::reason, context::Ctx};
use kuberay_crds::constants::conditions as types;
use kuberay_plugin_sdk::Host;
use kuberay_rules::operator_env::OperatorEnv;

/// The label selector of every cluster (and Service) a RayService made.
pub fn owned_selector(service: &str) -> String {
    kuberay_rules::labels::selector(&[
        (labels::RAY_ORIGINATED_FROM_CR_NAME, service),
        (labels::RAY_ORIGINATED_FROM_CRD, crd::RAY_SERVICE),
    ])
}

/// The RayCluster `name` as the RayService wants it.
pub fn goal(service: &RayService, name: &str) -> RayCluster {
    let mut cluster_labels = service.metadata.labels.clone().unwrap_or_default();
    let service_name = service.metadata.name.clone().unwrap_or_default();
    cluster_labels.insert(labels::RAY_ORIGINATED_FROM_CR_NAME.into(), service_name);
    cluster_labels.insert(labels::RAY_ORIGINATED_FROM_CRD.into(), crd::RAY_SERVICE.into());
    let mut cluster_annotations: BTreeMap<String, String> =
        service.metadata.annotations.clone().unwrap_or_default();
    cluster_annotations.insert(
        annotations::RAY_HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE.into(),
        hash::rayservice_hash(&service.spec.ray_cluster_config),
    );
    let groups = service
        .spec
        .ray_cluster_config
        .worker_group_specs
        .as_ref()
        .map_or(0, Vec::len);
    cluster_annotations.insert(annotations::RAY_NUM_WORKER_GROUPS.into(), groups.to_string());
    cluster_annotations.insert(annotations::KUBERAY_VERSION.into(), KUBERAY_VERSION.into());
    RayCluster {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: service.metadata.namespace.clone(),
            labels: Some(cluster_labels),
            annotations: Some(cluster_annotations),
            ..ObjectMeta::default()
        },
        spec: cluster_spec(service),
        status: None,
    }
}

/// The new cluster of an incremental upgrade starts without worker replicas, so that the autoscaler sizes
/// it from `minReplicas` as its Serve `target_capacity` grows.
fn cluster_spec(service: &RayService) -> RayClusterSpec {
    let mut spec = service.spec.ray_cluster_config.clone();
    let has_active = service
        .status
        .as_ref()
        .and_then(|s| s.active_service_status.as_ref())
        .and_then(|s| s.ray_cluster_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if crate::service::incremental(service) && has_active {
        for group in spec.worker_group_specs.iter_mut().flatten() {
            group.replicas = None;
        }
    }
    spec
}

pub fn annotation<'a>(cluster: &'a RayCluster, key: &str) -> Option<&'a str> {
    cluster
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// KubeRay's `isClusterSpecHashEqual`. With `partial`, only the cluster's worker groups are compared, so
/// groups appended to the RayService's spec do not count as a difference.
pub fn hash_equal(service: &RayService, cluster: &RayCluster, partial: bool) -> bool {
    let cluster_hash = annotation(
        cluster,
        annotations::RAY_HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE,
    )
    .unwrap_or_default();
    if !partial {
        return cluster_hash == hash::rayservice_hash(&service.spec.ray_cluster_config);
    }
    let mut goal = service.spec.ray_cluster_config.clone();
    let Some(count) =
        annotation(cluster, annotations::RAY_NUM_WORKER_GROUPS).and_then(|n| n.parse::<usize>().ok())
    else {
        return true;
    };
    let groups = goal.worker_group_specs.get_or_insert_with(Vec::new);
    if groups.len() < count {
        return cluster_hash.is_empty();
    }
    groups.truncate(count);
    cluster_hash == hash::rayservice_hash(&goal)
}

/// KubeRay's `shouldUpdateCluster`: only appended worker groups (or another KubeRay version on the active
/// cluster) are applied to a running cluster; during an upgrade the active cluster is left alone.
pub fn should_update(
    service: &RayService,
    status: &RayServiceStatuses,
    cluster: Option<&RayCluster>,
    active: bool,
) -> bool {
    let Some(cluster) = cluster else {
        return false;
    };
    if active {
        if conditions::is_true(status, types::UPGRADE_IN_PROGRESS) {
            return false;
        }
        if annotation(cluster, annotations::KUBERAY_VERSION) != Some(KUBERAY_VERSION) {
            return true;
        }
    }
    if hash_equal(service, cluster, false) {
        return false;
    }
    hash_equal(service, cluster, true)
}

/// Whether a change of the cluster spec is rolled out on a new cluster (`NewCluster`, the default, or
/// `NewClusterWithIncrementalUpgrade`); without an upgrade strategy, unless the operator was started with
/// KubeRay's `ENABLE_ZERO_DOWNTIME=false`.
pub fn zero_downtime(service: &RayService, env: &OperatorEnv) -> bool {
    match service
        .spec
        .upgrade_strategy
        .as_ref()
        .and_then(|s| s.type_.as_ref())
    {
        Some(kind) => matches!(
            kind,
            RayServiceUpgradeType::NewCluster | RayServiceUpgradeType::NewClusterWithIncrementalUpgrade
        ),
        None => env.zero_downtime,
    }
}

/// KubeRay's `shouldPrepareNewCluster`; never while an incremental upgrade rolls back.
pub fn should_prepare(
    service: &RayService,
    env: &OperatorEnv,
    status: &RayServiceStatuses,
    active: Option<&RayCluster>,
    pending: Option<&RayCluster>,
    pending_serving: bool,
) -> bool {
    if pending_serving || conditions::is_true(status, types::ROLLBACK_IN_PROGRESS) {
        return false;
    }
    let Some(cluster) = pending.or(active) else {
        return true;
    };
    if hash_equal(service, cluster, false) || hash_equal(service, cluster, true) {
        return false;
    }
    zero_downtime(service, env)
}

/// A name for a new cluster, `<service>-<5 random>`, that no cluster of the RayService has.
pub fn new_name<H: Host>(ctx: &Ctx<'_, H>, taken: &[String]) -> String {
    let uid = ctx.service.metadata.uid.clone().unwrap_or_default();
    let generation = ctx.service.metadata.generation.unwrap_or_default().to_string();
    let active = ctx
        .status()
        .active_service_status
        .and_then(|s| s.ray_cluster_name)
        .unwrap_or_default();
    let mut attempt = 0u32;
    loop {
        let name = kuberay_rules::names::with_random_suffix(
            &ctx.name,
            &[&uid, &generation, &active, &attempt.to_string()],
        );
        if !taken.contains(&name) || attempt > 100 {
            return name;
        }
        attempt += 1;
    }
}

fn report<'a>(ctx_key: &'a str, name: &'a str, kind: &'a Kind, write: Write, what: &'a str) -> Report<'a> {
    let (action, done, failed) = match write {
        Write::Create => (
            action::CREATE,
            reason::CREATED_RAYCLUSTER,
            reason::FAILED_TO_CREATE_RAYCLUSTER,
        ),
        Write::Update => (
            action::UPDATE,
            reason::UPDATED_RAYCLUSTER,
            reason::FAILED_TO_UPDATE_RAYCLUSTER,
        ),
    };
    Report {
        action,
        done,
        failed,
        what,
        kind,
        name,
        key: ctx_key,
    }
}

#[derive(Clone, Copy)]
enum Write {
    Create,
    Update,
}

/// Creates the cluster `name` from the RayService's spec.
pub fn create<H: Host>(ctx: &Ctx<'_, H>, name: &str) -> Result<RayCluster, HostError> {
    let kind = Kind::of::<RayCluster>();
    let key = ctx.key(name);
    let cluster = goal(&ctx.service, name);
    report(&key, name, &kind, Write::Create, "the RayCluster").run(ctx.host, || ctx.host.create_as(&cluster))
}

/// Updates a running cluster in place to the RayService's spec, keeping its `suspend`.
pub fn update<H: Host>(ctx: &Ctx<'_, H>, current: &RayCluster, which: &str) -> Result<RayCluster, HostError> {
    let name = current.metadata.name.clone().unwrap_or_default();
    let kind = Kind::of::<RayCluster>();
    let key = ctx.key(&name);
    let mut cluster = goal(&ctx.service, &name);
    cluster.spec.suspend = current.spec.suspend;
    let what = format!("the {which} RayCluster");
    report(&key, &name, &kind, Write::Update, &what).run(ctx.host, || ctx.host.apply_as(&cluster))
}
