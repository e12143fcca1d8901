//! KubeRay's validation of the two options behind alpha feature gates this plugin implements:
//! `historyServerOptions` (`RayClusterHistoryServer`) and `networkPolicy` (`RayClusterNetworkPolicy`), with
//! KubeRay's messages. With its gate off, either option is refused outright.

use std::collections::{BTreeMap, BTreeSet};

use super::Gates;
use crate::{
    consts::history::{COLLECTOR_CONTAINER_NAME, env as hs_env},
    syntax,
};
use k8s_openapi::api::core::v1::EnvVar;
use kuberay_crds::{CollectorOptions, NetworkPolicyMode, NetworkPolicyRules, RayClusterSpec};

/// `spec.historyServerOptions`: the gate, the collector's image and storage settings, and no container of
/// the collector's name in the templates.
pub(super) fn validate_history_server(spec: &RayClusterSpec, gates: Gates) -> Result<(), String> {
    let Some(options) = &spec.history_server_options else {
        return Ok(());
    };
    if !gates.history_server {
        return Err("RayClusterHistoryServer feature gate is not enabled".into());
    }
    let Some(collector) = &options.collector_options else {
        return Err("historyServerOptions.collectorOptions must be set".into());
    };
    validate_collector(collector)?;
    let named_collector = |containers: &[k8s_openapi::api::core::v1::Container]| {
        containers.iter().any(|c| c.name == COLLECTOR_CONTAINER_NAME)
    };
    let head = spec.head_group_spec.template.spec.as_ref();
    if head.is_some_and(|s| named_collector(&s.containers)) {
        return Err(format!(
            "head pod template must not define a container with name '{COLLECTOR_CONTAINER_NAME}' when history \
             server collector options are enabled"
        ));
    }
    for group in spec.worker_group_specs.iter().flatten() {
        if group
            .template
            .spec
            .as_ref()
            .is_some_and(|s| named_collector(&s.containers))
        {
            return Err(format!(
                "worker group {} pod template must not define a container with name '{COLLECTOR_CONTAINER_NAME}' \
                 when history server collector options are enabled",
                group.group_name
            ));
        }
    }
    Ok(())
}

/// KubeRay's `validateCollectorOptions`.
fn validate_collector(collector: &CollectorOptions) -> Result<(), String> {
    if collector.image.as_deref().is_none_or(str::is_empty) {
        return Err("historyServerOptions.collectorOptions.image must be set".into());
    }
    // As a Go map: a later entry of the same name wins.
    let env: BTreeMap<&str, &EnvVar> = collector
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e))
        .collect();
    for name in hs_env::MANAGED {
        if env.contains_key(name) {
            return Err(format!(
                "historyServerOptions.collectorOptions.env must not contain {name}: it is managed by KubeRay and \
                 injected automatically into the collector container"
            ));
        }
    }
    let literal = |name: &str| env.get(name).and_then(|e| e.value.as_deref()).unwrap_or_default();
    let has_value = |name: &str| {
        env.get(name)
            .is_some_and(|e| e.value.as_deref().is_some_and(|v| !v.is_empty()) || e.value_from.is_some())
    };
    let backend = literal(hs_env::STORAGE_BACKEND);
    if backend.is_empty() {
        return Err(format!(
            "{} environment variable must be set with a literal string value in \
             historyServerOptions.collectorOptions.env",
            hs_env::STORAGE_BACKEND
        ));
    }
    let required = |name: &str, when: &str| {
        if has_value(name) {
            Ok(())
        } else {
            Err(format!(
                "{name} environment variable must be set when {} is {when}",
                hs_env::STORAGE_BACKEND
            ))
        }
    };
    match backend.to_uppercase().as_str() {
        "GCS" => required(hs_env::GCS_BUCKET, "GCS"),
        "S3" => required(hs_env::S3_REGION, "S3"),
        "AZUREBLOB" => validate_azure(literal(hs_env::AZURE_STORAGE_AUTH_MODE), has_value),
        "ALIYUNOSS" => [hs_env::OSS_BUCKET, hs_env::OSS_ENDPOINT, hs_env::OSS_REGION]
            .into_iter()
            .try_for_each(|name| required(name, "ALIYUNOSS")),
        _ => Ok(()),
    }
}

/// The Azure Blob backend: what its authentication mode needs.
fn validate_azure(auth_mode: &str, has_value: impl Fn(&str) -> bool) -> Result<(), String> {
    let mode = auth_mode.trim().to_lowercase();
    let (connection, url, backend, auth) = (
        hs_env::AZURE_STORAGE_CONNECTION_STRING,
        hs_env::AZURE_STORAGE_ACCOUNT_URL,
        hs_env::STORAGE_BACKEND,
        hs_env::AZURE_STORAGE_AUTH_MODE,
    );
    match mode.as_str() {
        "connection_string" if !has_value(connection) => Err(format!(
            "{connection} environment variable must be set when {backend} is AZUREBLOB and {auth} is \
             connection_string"
        )),
        "workload_identity" | "default" if !has_value(url) => Err(format!(
            "{url} environment variable must be set when {backend} is AZUREBLOB and {auth} is {mode}"
        )),
        "connection_string" | "workload_identity" | "default" => Ok(()),
        _ if !has_value(connection) && !has_value(url) => Err(format!(
            "either {connection} or {url} environment variable must be set when {backend} is AZUREBLOB"
        )),
        _ => Ok(()),
    }
}

/// `spec.networkPolicy`: the gate, then KubeRay's `validateNetworkPolicy`.
pub(super) fn validate_network_policy(spec: &RayClusterSpec, gates: Gates) -> Result<(), String> {
    let Some(policy) = &spec.network_policy else {
        return Ok(());
    };
    if !gates.network_policy {
        return Err(
            "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled".into(),
        );
    }
    let mode = policy.mode.unwrap_or(NetworkPolicyMode::DenyAll);
    check_rules("networkPolicy.head", policy.head.as_ref(), mode)?;
    check_rules("networkPolicy.worker", policy.worker.as_ref(), mode)?;
    // Group names become part of NetworkPolicy names.
    let mut groups = BTreeSet::new();
    for group in spec.worker_group_specs.iter().flatten() {
        let errors = syntax::dns1123_label_errors(&group.group_name);
        if !errors.is_empty() {
            return Err(format!(
                "worker group name {:?} must be a valid DNS1123 label when networkPolicy is enabled (it is \
                 embedded in the NetworkPolicy name): {}",
                group.group_name,
                syntax::go_list(&errors)
            ));
        }
        groups.insert(group.group_name.as_str());
    }
    for entry in policy.worker_groups.iter().flatten() {
        let what = format!("networkPolicy.workerGroups[{:?}]", entry.group_name);
        check_rules(&what, Some(&entry.rules), mode)?;
        if !groups.contains(entry.group_name.as_str()) {
            return Err(format!(
                "{what} does not match any group name in workerGroupSpecs"
            ));
        }
    }
    Ok(())
}

/// Rules of a direction the mode does not restrict are refused.
fn check_rules(
    what: &str,
    rules: Option<&NetworkPolicyRules>,
    mode: NetworkPolicyMode,
) -> Result<(), String> {
    let Some(rules) = rules else {
        return Ok(());
    };
    let mode_name = mode_name(mode);
    if mode == NetworkPolicyMode::DenyAllEgress && rules.ingress_rules.as_ref().is_some_and(|r| !r.is_empty())
    {
        return Err(format!(
            "{what}.ingressRules cannot be set when mode is \"{mode_name}\" (ingress is not restricted)"
        ));
    }
    if mode == NetworkPolicyMode::DenyAllIngress && rules.egress_rules.as_ref().is_some_and(|r| !r.is_empty())
    {
        return Err(format!(
            "{what}.egressRules cannot be set when mode is \"{mode_name}\" (egress is not restricted)"
        ));
    }
    Ok(())
}

/// The mode as the spec spells it.
fn mode_name(mode: NetworkPolicyMode) -> &'static str {
    match mode {
        NetworkPolicyMode::DenyAll => "DenyAll",
        NetworkPolicyMode::DenyAllIngress => "DenyAllIngress",
        NetworkPolicyMode::DenyAllEgress => "DenyAllEgress",
    }
}
