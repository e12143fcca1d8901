//! Rules about GCS fault tolerance: one way to turn it on, Redis settings only through the options, and
//! the embedded backend refused while its feature gate is off (KubeRay's default).

use k8s_openapi::api::core::v1::Container;
use kuberay_crds::{GcsFaultToleranceBackend, RayCluster, constants::annotations};

use super::env_set;
use crate::{cluster, consts::env};

pub(super) fn validate_fault_tolerance(cluster: &RayCluster, head: Option<&Container>) -> Result<(), String> {
    let spec = &cluster.spec;
    let params = spec.head_group_spec.ray_start_params.as_ref();
    let param = |k: &str| params.and_then(|p| p.get(k)).filter(|v| !v.is_empty());
    let annotation = |k: &str| cluster::annotation(cluster, k).filter(|v| !v.is_empty());
    if annotation(annotations::RAY_FT_ENABLED).is_some() && spec.gcs_fault_tolerance_options.is_some() {
        return Err(format!(
            "{} annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions \
             to configure GCS fault tolerance",
            annotations::RAY_FT_ENABLED
        ));
    }
    if !cluster::gcs_ft_enabled(cluster) && env_set(head, env::RAY_REDIS_ADDRESS) {
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
        if options.backend == Some(GcsFaultToleranceBackend::RocksDb) {
            return Err(
                "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: \
                        'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"
                    .into(),
            );
        }
        if options.storage.is_some() {
            return Err(
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to \
                        the 'rocksdb' backend"
                    .into(),
            );
        }
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
