//! GCS fault tolerance on the Pods: with an external Redis, or the embedded RocksDB store on a persistent
//! volume, the head can be replaced without losing the cluster's state. The head learns where its store is
//! (Redis' address and key namespace, or the store's path and volume); workers wait longer for a restarting
//! GCS before giving up.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EnvVar, PersistentVolumeClaimVolumeSource, PodTemplateSpec, Volume, VolumeMount,
};
use kuberay_crds::{RayCluster, RedisCredential, constants::annotations};

use super::{BuildError, env, meta_mut, ray_container};
use crate::{
    cluster::{self, Identity},
    consts::{env as env_names, gcs_storage},
    ray_start::{NodeType, Params},
};

/// The Redis key namespace of the cluster: the options', else the `ray.io/external-storage-namespace`
/// annotation, else the cluster's uid (so a re-created cluster never reads a predecessor's state).
pub fn storage_namespace(cluster: &RayCluster, id: &Identity) -> String {
    let options = cluster
        .spec
        .gcs_fault_tolerance_options
        .as_ref()
        .and_then(|o| o.external_storage_namespace.as_deref())
        .filter(|ns| !ns.is_empty());
    options
        .or_else(|| cluster::annotation(cluster, annotations::RAY_EXTERNAL_STORAGE_NAMESPACE))
        .map_or_else(|| id.uid.clone(), str::to_string)
}

fn credential(name: &str, credential: &RedisCredential) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: credential.value.clone(),
        value_from: credential.value_from.clone(),
    }
}

fn annotate(template: &mut PodTemplateSpec, key: &str, value: &str) {
    meta_mut(template)
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.into(), value.into());
}

/// Adds the fault-tolerance settings to a prepared template (and `--redis-*` start parameters).
pub fn configure(
    template: &mut PodTemplateSpec,
    cluster: &RayCluster,
    id: &Identity,
    node: NodeType,
    params: &mut Params,
) -> Result<(), BuildError> {
    let enabled = cluster::gcs_ft_enabled(cluster);
    if node == NodeType::Head {
        annotate(template, annotations::RAY_FT_ENABLED, &enabled.to_string());
    }
    if !enabled {
        return Ok(());
    }
    if node == NodeType::Worker {
        let ray = ray_container(template)?;
        // Workers outlive a GCS restart (about two minutes) instead of exiting after Ray's default 60 s.
        env::push_if_absent(
            ray,
            env::value(env_names::RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S, "600"),
        );
        return Ok(());
    }
    if cluster::gcs_ft_embedded(&cluster.spec) {
        return configure_embedded(template, cluster);
    }
    let storage_ns = storage_namespace(cluster, id);
    annotate(template, annotations::RAY_EXTERNAL_STORAGE_NAMESPACE, &storage_ns);
    let options = cluster.spec.gcs_fault_tolerance_options.as_ref();
    let ray = ray_container(template)?;
    env::push_if_absent(ray, env::value(env_names::RAY_EXTERNAL_STORAGE_NS, &storage_ns));
    match options {
        Some(options) => {
            let address = options.redis_address.clone().unwrap_or_default();
            env::push(ray, env::value(env_names::RAY_REDIS_ADDRESS, &address));
            if let Some(username) = &options.redis_username {
                // `ray start` reads the value from the variable, so a Secret never lands in the command.
                params.insert("redis-username".into(), "$REDIS_USERNAME".into());
                env::push(ray, credential(env_names::REDIS_USERNAME, username));
            }
            if let Some(password) = &options.redis_password {
                params.insert("redis-password".into(), "$REDIS_PASSWORD".into());
                env::push(ray, credential(env_names::REDIS_PASSWORD, password));
            }
        }
        None => {
            // Legacy annotation: a password given as a start parameter is also exported, so that the
            // Redis clean-up Job can log in.
            if !env::exists(ray, env_names::REDIS_PASSWORD)
                && let Some(password) = params.get("redis-password")
            {
                env::push(ray, env::value(env_names::REDIS_PASSWORD, password));
            }
        }
    }
    Ok(())
}

/// The embedded backend on the head: the store's variables (unless set, which validation refuses), and the
/// claim mounted at the store's path.
fn configure_embedded(template: &mut PodTemplateSpec, cluster: &RayCluster) -> Result<(), BuildError> {
    let storage = cluster
        .spec
        .gcs_fault_tolerance_options
        .as_ref()
        .and_then(|o| o.storage.as_ref());
    let ray = ray_container(template)?;
    env::push_if_absent(ray, env::value(gcs_storage::ENV_STORAGE, gcs_storage::ROCKSDB));
    env::push_if_absent(
        ray,
        env::value(gcs_storage::ENV_STORAGE_PATH, gcs_storage::MOUNT_PATH),
    );
    ray.volume_mounts.get_or_insert_with(Vec::new).push(VolumeMount {
        name: gcs_storage::VOLUME_NAME.into(),
        mount_path: gcs_storage::MOUNT_PATH.into(),
        sub_path: storage.and_then(|s| s.sub_path.clone()).filter(|p| !p.is_empty()),
        ..VolumeMount::default()
    });
    if let Some(spec) = template.spec.as_mut() {
        spec.volumes.get_or_insert_with(Vec::new).push(Volume {
            name: gcs_storage::VOLUME_NAME.into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: crate::gcs_storage::claim_name(cluster),
                read_only: None,
            }),
            ..Volume::default()
        });
    }
    Ok(())
}
