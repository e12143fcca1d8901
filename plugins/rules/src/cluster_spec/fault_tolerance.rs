//! Rules about GCS fault tolerance: one way to turn it on, Redis settings only through the options, and
//! the embedded (RocksDB) backend only with its feature gate, without Redis settings, and without the
//! variables, volume and mount the operator manages for it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Container;
use kuberay_crds::{
    GcsFaultToleranceBackend, GcsFaultToleranceOptions, GcsStorageDeletionPolicy, RayClusterSpec,
    constants::annotations,
};

use super::{Gates, env_set, gcs_ft_enabled};
use crate::consts::{env, gcs_storage};

pub(super) fn validate_fault_tolerance(
    spec: &RayClusterSpec,
    annotations: Option<&BTreeMap<String, String>>,
    head: Option<&Container>,
    gates: Gates,
) -> Result<(), String> {
    let params = spec.head_group_spec.ray_start_params.as_ref();
    let param = |k: &str| params.and_then(|p| p.get(k)).filter(|v| !v.is_empty());
    let annotation = |k: &str| annotations.and_then(|a| a.get(k)).filter(|v| !v.is_empty());
    if annotation(annotations::RAY_FT_ENABLED).is_some() && spec.gcs_fault_tolerance_options.is_some() {
        return Err(format!(
            "{} annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions \
             to configure GCS fault tolerance",
            annotations::RAY_FT_ENABLED
        ));
    }
    if !gcs_ft_enabled(spec, annotations) && env_set(head, env::RAY_REDIS_ADDRESS) {
        return Err(format!(
            "{} is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is not set. \
             Please set GcsFaultToleranceOptions to enable GCS fault tolerance",
            env::RAY_REDIS_ADDRESS
        ));
    }
    if let Some(options) = &spec.gcs_fault_tolerance_options {
        if param("redis-password").is_some() {
            return Err(
                "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - \
                        use GcsFaultToleranceOptions.RedisPassword instead"
                    .into(),
            );
        }
        if env_set(head, env::REDIS_PASSWORD) {
            return Err(
                "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - \
                        use GcsFaultToleranceOptions.RedisPassword instead"
                    .into(),
            );
        }
        if env_set(head, env::RAY_REDIS_ADDRESS) {
            return Err("cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - \
                        use GcsFaultToleranceOptions.RedisAddress instead"
                .into());
        }
        if annotation(annotations::RAY_EXTERNAL_STORAGE_NAMESPACE).is_some() {
            return Err(
                "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is \
                        enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead"
                    .into(),
            );
        }
        validate_backend(options, spec, head, gates)?;
    }
    if param("redis-username").is_some() || env_set(head, env::REDIS_USERNAME) {
        return Err(
            "cannot set redis username in rayStartParams or environment variables - use \
                    GcsFaultToleranceOptions.RedisUsername instead"
                .into(),
        );
    }
    Ok(())
}

/// KubeRay's backend rules: the `rocksdb` backend needs its gate, takes no Redis setting, a claim of the
/// user's excludes the fields of one the operator creates, and the operator's variables, volume and mount
/// are its own; the `redis` backend (the default) takes no `storage`.
fn validate_backend(
    options: &GcsFaultToleranceOptions,
    spec: &RayClusterSpec,
    head: Option<&Container>,
    gates: Gates,
) -> Result<(), String> {
    if options.backend != Some(GcsFaultToleranceBackend::RocksDb) {
        if options.storage.is_some() {
            return Err(
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to \
                        the 'rocksdb' backend"
                    .into(),
            );
        }
        return Ok(());
    }
    if !gates.embedded_gcs_storage {
        return Err(format!(
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') \
             requires the {} feature gate to be enabled",
            crate::config::GCS_FAULT_TOLERANCE_EMBEDDED_STORAGE
        ));
    }
    if options.storage.as_ref().and_then(|s| s.deletion_policy) == Some(GcsStorageDeletionPolicy::Retain) {
        // KubeRay removes the cluster's ownership of its claim; this operator controls all it creates.
        return Err("GcsFaultToleranceOptions.Storage.DeletionPolicy 'Retain' is not supported by kuberay-wasm: \
                    a claim it creates goes away with its cluster. To keep the store, create the claim yourself \
                    and name it in GcsFaultToleranceOptions.Storage.ClaimName"
            .into());
    }
    let redis_only = [
        (
            "RedisAddress",
            options.redis_address.as_deref().is_some_and(|a| !a.is_empty()),
        ),
        ("RedisUsername", options.redis_username.is_some()),
        ("RedisPassword", options.redis_password.is_some()),
        (
            "ExternalStorageNamespace",
            options
                .external_storage_namespace
                .as_deref()
                .is_some_and(|n| !n.is_empty()),
        ),
    ];
    if let Some((field, _)) = redis_only.iter().find(|(_, set)| *set) {
        return Err(format!(
            "cannot set GcsFaultToleranceOptions.{field} when backend is 'rocksdb'"
        ));
    }
    if let Some(storage) = &options.storage
        && storage.claim_name.as_deref().is_some_and(|c| !c.is_empty())
        && (storage.size.is_some()
            || storage.storage_class_name.is_some()
            || storage.access_modes.as_ref().is_some_and(|m| !m.is_empty()))
    {
        return Err(
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, \
                    storageClassName, and accessModes"
                .into(),
        );
    }
    if env_set(head, gcs_storage::ENV_STORAGE) || env_set(head, gcs_storage::ENV_STORAGE_PATH) {
        return Err(format!(
            "cannot set `{}` or `{}` env var in head Pod when the embedded GCS FT backend is used - these are \
             managed by KubeRay",
            gcs_storage::ENV_STORAGE,
            gcs_storage::ENV_STORAGE_PATH
        ));
    }
    let mounts = head.and_then(|c| c.volume_mounts.as_deref()).unwrap_or_default();
    if mounts
        .iter()
        .any(|m| m.mount_path == gcs_storage::MOUNT_PATH || m.name == gcs_storage::VOLUME_NAME)
    {
        return Err(format!(
            "cannot set a volume mount named {:?} or mounted at {} in the head container when the embedded GCS \
             FT backend is used - it is managed by KubeRay",
            gcs_storage::VOLUME_NAME,
            gcs_storage::MOUNT_PATH
        ));
    }
    let head_spec = spec.head_group_spec.template.spec.as_ref();
    let volumes = head_spec.and_then(|s| s.volumes.as_deref()).unwrap_or_default();
    if volumes.iter().any(|v| v.name == gcs_storage::VOLUME_NAME) {
        return Err(format!(
            "cannot set a volume named {:?} in the head Pod when the embedded GCS FT backend is used - it is \
             managed by KubeRay",
            gcs_storage::VOLUME_NAME
        ));
    }
    Ok(())
}
