//! The PersistentVolumeClaim behind the embedded (RocksDB) GCS store of `gcsFaultToleranceOptions.backend:
//! rocksdb`, as KubeRay's `GCSFaultToleranceEmbeddedStorage` gate provisions it:
//!
//! - a claim the user names (`storage.claimName`) is theirs: the plugin only checks it exists and says so with
//!   a Warning event when it does not (the head Pod waits for it);
//! - otherwise the plugin creates `<cluster>-gcs-pvc` once, controlled by the cluster (so it goes away with
//!   it), and then leaves it alone: a claim's class and access modes cannot change and most classes cannot
//!   shrink, so a later difference in size, class or access modes is reported with a Warning event.
//!
//! KubeRay's `deletionPolicy: Retain` (a claim without owner that outlives its cluster) is refused by
//! validation: everything this operator creates is controlled by the object it reconciles.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements},
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use kuberay_crds::{GcsEmbeddedStorage, RayCluster, constants::labels};
use kuberay_plugin_sdk::{Event, Host, Kind};
use kuberay_rules::quantity::Quantity as Exact;

use crate::{
    cluster,
    consts::{action, gcs_storage, reason},
    context::{Ctx, Failure},
};

fn storage(cluster: &RayCluster) -> Option<&GcsEmbeddedStorage> {
    cluster
        .spec
        .gcs_fault_tolerance_options
        .as_ref()
        .and_then(|o| o.storage.as_ref())
}

/// The claim the user named, if any.
fn users_claim(cluster: &RayCluster) -> Option<&str> {
    storage(cluster)
        .and_then(|s| s.claim_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// The claim the head mounts: the user's, else `<cluster>-gcs-pvc`.
pub fn claim_name(cluster: &RayCluster) -> String {
    users_claim(cluster).map_or_else(
        || {
            let name = cluster.metadata.name.as_deref().unwrap_or_default();
            format!("{name}{}", gcs_storage::PVC_SUFFIX)
        },
        str::to_string,
    )
}

/// The claim the operator creates: `ReadWriteOnce` and 1Gi unless the options say otherwise, the cluster's
/// default class unless one is named.
pub fn build_claim(cluster: &RayCluster) -> PersistentVolumeClaim {
    let storage = storage(cluster);
    let access_modes = storage
        .and_then(|s| s.access_modes.clone())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| vec!["ReadWriteOnce".into()]);
    let size = storage
        .and_then(|s| s.size.clone())
        .unwrap_or_else(|| Quantity(gcs_storage::DEFAULT_SIZE.into()));
    let name = cluster.metadata.name.clone().unwrap_or_default();
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim_name(cluster)),
            namespace: cluster.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([(labels::RAY_CLUSTER.to_string(), name)])),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(access_modes),
            storage_class_name: storage.and_then(|s| s.storage_class_name.clone()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_string(), size)])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

/// What differs between the claim the options describe and the one that exists, in the fields that cannot
/// change in place (empty when nothing does). An unnamed class is the cluster's default, whatever its name.
pub fn drift(desired: &PersistentVolumeClaim, existing: &PersistentVolumeClaim) -> String {
    let size = |c: &PersistentVolumeClaim| {
        c.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .map(|q| q.0.clone())
            .unwrap_or_default()
    };
    let spec = |c: &PersistentVolumeClaim| c.spec.clone().unwrap_or_default();
    let (want, got) = (spec(desired), spec(existing));
    let mut diffs = Vec::new();
    let (want_size, got_size) = (size(desired), size(existing));
    let same_size = match (Exact::parse(&want_size), Exact::parse(&got_size)) {
        (Some(a), Some(b)) => a.plus(b.times(-1)).is_zero(),
        _ => want_size == got_size,
    };
    if !same_size {
        diffs.push(format!("requested size {want_size} != current {got_size}"));
    }
    if want.storage_class_name.is_some() && want.storage_class_name != got.storage_class_name {
        let class = |c: &Option<String>| c.clone().unwrap_or_else(|| "<default>".into());
        diffs.push(format!(
            "storageClassName {} != current {}",
            class(&want.storage_class_name),
            class(&got.storage_class_name)
        ));
    }
    let sorted = |m: Option<Vec<String>>| {
        let mut m = m.unwrap_or_default();
        m.sort();
        m
    };
    let (want_modes, got_modes) = (sorted(want.access_modes), sorted(got.access_modes));
    if want_modes != got_modes {
        diffs.push(format!("accessModes {want_modes:?} != current {got_modes:?}"));
    }
    diffs.join("; ")
}

/// Provisions the store's claim (see the module's documentation); nothing without the embedded backend.
pub fn reconcile<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    let cluster = &ctx.cluster;
    if !cluster::gcs_ft_enabled(cluster) || !cluster::gcs_ft_embedded(&cluster.spec) {
        return Ok(());
    }
    let name = claim_name(cluster);
    let namespace = &ctx.id.namespace;
    let existing = ctx.get::<PersistentVolumeClaim>(&name)?;
    if users_claim(cluster).is_some() {
        if existing.is_none() {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_PVC,
                action::VALIDATE,
                format!(
                    "GcsFaultToleranceOptions.Storage.ClaimName {name:?} not found in namespace {namespace}; the \
                     head Pod will not start until it exists"
                ),
            ));
        }
        return Ok(());
    }
    let desired = build_claim(cluster);
    let Some(existing) = existing else {
        return create(ctx, &desired, &name);
    };
    if !ctx.controls(&existing.metadata) {
        // KubeRay adopts it; here the head could not mount a claim its cluster neither controls nor names.
        let message = format!(
            "GCS storage PVC {namespace}/{name} exists and is not controlled by this RayCluster; delete it, or \
             name it in GcsFaultToleranceOptions.Storage.ClaimName"
        );
        ctx.event(Event::warning(
            reason::FAILED_TO_CREATE_PVC,
            action::CREATE,
            message.clone(),
        ));
        return Err(Failure::pause(message));
    }
    let drift = drift(&desired, &existing);
    if !drift.is_empty() {
        ctx.event(Event::warning(
            reason::FAILED_TO_CREATE_PVC,
            action::UPDATE,
            format!(
                "GCS storage PVC {namespace}/{name} already exists and cannot be reconfigured in place ({drift}); \
                 delete the PVC to recreate it with the new settings"
            ),
        ));
    }
    Ok(())
}

fn create<H: Host>(ctx: &Ctx<'_, H>, claim: &PersistentVolumeClaim, name: &str) -> Result<(), Failure> {
    let key = format!("{}/{name}", ctx.id.namespace);
    match ctx.create(claim) {
        Ok(_) => {
            ctx.event(
                Event::normal(
                    reason::CREATED_PVC,
                    action::CREATE,
                    format!("Created GCS storage PVC {key}"),
                )
                .about(Kind::of::<PersistentVolumeClaim>(), name),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_PVC,
                action::CREATE,
                format!("Failed to create GCS storage PVC {key}, {}", e.message()),
            ));
            Err(e.into())
        }
    }
}
