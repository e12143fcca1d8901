//! KubeRay's RayService validation (`ValidateRayServiceMetadata`, `ValidateRayServiceSpec`): an invalid
//! RayService gets `Ready=False/ValidationFailed` and a Warning event, and nothing else happens until it
//! changes.

use kuberay_crds::{RayService, RayServiceUpgradeType, constants::annotations};
use kuberay_rules::{
    cluster_spec::{self, Gates},
    names::is_dns1035_label,
};

use crate::{
    consts::{MAX_RAYSERVICE_NAME_LENGTH, reason},
    duration::parse_timeout,
};

/// Why a RayService is not reconciled: the event reason and KubeRay's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub reason: &'static str,
    pub message: String,
}

/// KubeRay's checks of `service`, its cluster spec's under the feature gates `gates`.
pub fn validate(service: &RayService, gates: Gates) -> Result<(), Invalid> {
    metadata(service).map_err(|m| Invalid {
        reason: reason::INVALID_RAYSERVICE_METADATA,
        message: format!("The RayService metadata is invalid: {m}"),
    })?;
    spec(service, gates).map_err(|m| Invalid {
        reason: reason::INVALID_RAYSERVICE_SPEC,
        message: format!("The RayService spec is invalid: {m}"),
    })?;
    Ok(())
}

fn upgrade_type(service: &RayService) -> Option<&RayServiceUpgradeType> {
    service.spec.upgrade_strategy.as_ref()?.type_.as_ref()
}

fn metadata(service: &RayService) -> Result<(), String> {
    let name = service.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_RAYSERVICE_NAME_LENGTH {
        return Err(format!(
            "RayService name should be no more than {MAX_RAYSERVICE_NAME_LENGTH} characters"
        ));
    }
    if !is_dns1035_label(name) {
        return Err(format!(
            "RayService name should be a valid DNS1035 label: {name:?} must consist of lower case alphanumeric \
             characters or '-', start with an alphabetic character, and end with an alphanumeric character"
        ));
    }
    initializing_timeout(service).map_err(|e| format!("RayService annotations is invalid: {e}"))
}

fn initializing_timeout(service: &RayService) -> Result<(), String> {
    let key = annotations::RAY_SERVICE_INITIALIZING_TIMEOUT;
    let Some(text) = service
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .filter(|t| !t.is_empty())
    else {
        return Ok(());
    };
    match parse_timeout(text) {
        Ok(seconds) if seconds > 0.0 => Ok(()),
        Ok(_) => Err(format!(
            "annotation {key} must be a positive duration, got: {text}"
        )),
        Err(_) => Err(format!(
            "annotation {key} has invalid format: {text}. Expected Go duration format (e.g., '5m', '1h') or \
             positive integer seconds"
        )),
    }
}

fn spec(service: &RayService, gates: Gates) -> Result<(), String> {
    let spec = &service.spec;
    let cluster = &spec.ray_cluster_config;
    if cluster
        .auth_options
        .as_ref()
        .and_then(|a| a.enable_k8s_token_auth)
        == Some(true)
    {
        return Err("K8s token auth mode is currently not supported for RayService".into());
    }
    cluster_spec::validate_spec(cluster, service.metadata.annotations.as_ref(), gates)?;
    if kuberay_rules::names::custom_head_service(&spec.ray_cluster_config).is_some() {
        return Err("spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set".into());
    }
    if let Some(RayServiceUpgradeType::Other(other)) = upgrade_type(service) {
        return Err(format!(
            "Spec.UpgradeStrategy.Type value {other} is invalid, valid options are \
             NewClusterWithIncrementalUpgrade, NewCluster, or None"
        ));
    }
    if let Some(delay) = spec.ray_cluster_deletion_delay_seconds.filter(|d| *d < 0) {
        return Err(format!(
            "Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got {delay}"
        ));
    }
    if crate::service::incremental(service) {
        upgrade_options(service)?;
    }
    Ok(())
}

/// KubeRay's `ValidateClusterUpgradeOptions`.
fn upgrade_options(service: &RayService) -> Result<(), String> {
    let spec = &service.spec.ray_cluster_config;
    if spec.enable_in_tree_autoscaling != Some(true) {
        return Err("Ray Autoscaler is required for NewClusterWithIncrementalUpgrade".into());
    }
    let Some(options) = service
        .spec
        .upgrade_strategy
        .as_ref()
        .and_then(|s| s.cluster_upgrade_options.as_ref())
    else {
        return Err("ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade".into());
    };
    let surge = options.max_surge_percent.unwrap_or(100);
    if !(0..=100).contains(&surge) {
        return Err("maxSurgePercent must be between 0 and 100".into());
    }
    let step = options.step_size_percent.filter(|s| (0..=100).contains(s));
    let Some(step) = step else {
        return Err("stepSizePercent must be between 0 and 100".into());
    };
    if step > surge {
        return Err("stepSizePercent must be less than or equal to maxSurgePercent".into());
    }
    if options.interval_seconds.is_none_or(|i| i <= 0) {
        return Err("intervalSeconds must be greater than 0".into());
    }
    if options.gateway_class_name.is_empty() {
        return Err("gatewayClassName is required for NewClusterWithIncrementalUpgrade".into());
    }
    Ok(())
}
