//! `RayService`: Ray Serve applications with zero-downtime upgrades of the cluster under them.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::Service,
    apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time},
};
use serde::{Deserialize, Serialize};

use crate::raycluster::{RayClusterSpec, RayClusterStatus};

/// Ray Serve applications on a RayCluster. A change of the cluster spec brings up a new cluster next to
/// the old one and moves the traffic over once the applications run there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RayService {
    pub metadata: ObjectMeta,
    pub spec: RayServiceSpec,
    pub status: Option<RayServiceStatuses>,
}

ray_resource!(
    RayService,
    spec = RayServiceSpec,
    status = RayServiceStatuses,
    plural = "rayservices",
    list_kind = "RayServiceList"
);

open_enum! {
    /// `status.serviceStatus`, kept for old clients; it mirrors the `Ready` condition.
    pub enum ServiceStatus {
        Running = "Running",
        NotRunning = "",
    }
}

open_enum! {
    /// How a change of the cluster spec is rolled out.
    pub enum RayServiceUpgradeType {
        /// A new cluster takes over the traffic gradually, through the Gateway API.
        NewClusterWithIncrementalUpgrade = "NewClusterWithIncrementalUpgrade",
        /// A new cluster takes over all traffic once it is ready; the default.
        NewCluster = "NewCluster",
        /// No new cluster.
        None = "None",
    }
}

/// The pace of an incremental upgrade.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterUpgradeOptions {
    /// How much capacity, in percent of the traffic, the new cluster scales up by per step.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 100)))]
    pub max_surge_percent: Option<i32>,
    /// Percent of the traffic moved per step; at most `maxSurgePercent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(required))]
    pub step_size_percent: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(required))]
    pub interval_seconds: Option<i32>,
    pub gateway_class_name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayServiceUpgradeStrategy {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<RayServiceUpgradeType>,
    /// Only for `NewClusterWithIncrementalUpgrade`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_upgrade_options: Option<ClusterUpgradeOptions>,
}

/// The desired applications and the cluster they run on.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayServiceSpec {
    /// How long an old cluster lives on after the traffic moved away from it (the operator uses 60 when
    /// unset), so that requests in flight can finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0)))]
    pub ray_cluster_deletion_delay_seconds: Option<i32>,
    /// Ignored; kept so that old manifests still validate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_unhealthy_second_threshold: Option<i32>,
    /// Ignored; kept so that old manifests still validate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_unhealthy_second_threshold: Option<i32>,
    /// A template for the Service in front of the Pods that serve traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve_service: Option<Service>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<RayServiceUpgradeStrategy>,
    /// Which controller reconciles this object; see [`crate::MANAGED_BY_KUBERAY`]. Immutable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-validations" = crate::common::managed_by_validations()))
    )]
    pub managed_by: Option<String>,
    /// Ray Serve's config file (applications and their deployments), as a YAML document in a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve_config_v2: Option<String>,
    pub ray_cluster_config: RayClusterSpec,
    /// Keeps the head Pod out of the serve Service, so that it serves no traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_head_pod_from_serve_svc: Option<bool>,
    /// While `true` everything the RayService owns is deleted; `false` creates it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// What the operator observed of the service and its clusters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayServiceStatuses {
    /// Types in [`crate::conditions`]. A map keyed by `type`, so that server-side apply merges entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))
    )]
    pub conditions: Option<Vec<Condition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_status: Option<ServiceStatus>,
    /// The cluster that serves the traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_service_status: Option<RayServiceStatus>,
    /// The cluster being prepared to take over the traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_service_status: Option<RayServiceStatus>,
    /// Pods behind the serve Service (those with a healthy Serve proxy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_serve_endpoints: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One of the RayService's clusters and the applications on it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayServiceStatus {
    /// Keyed by application name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application_statuses: Option<BTreeMap<String, AppStatus>>,
    /// Ray Serve's `target_capacity` in percent, which scales every deployment's replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_capacity: Option<i32>,
    /// Percent of the traffic this cluster gets during an incremental upgrade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic_routed_percent: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_traffic_migrated_time: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_cluster_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_cluster_status: Option<RayClusterStatus>,
}

/// A Serve application as Ray reports it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    /// Keyed by deployment name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve_deployment_statuses: Option<BTreeMap<String, ServeDeploymentStatus>>,
    /// One of [`application_status`]; a plain string because Ray owns the set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A Serve deployment as Ray reports it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ServeDeploymentStatus {
    /// One of [`deployment_status`]; a plain string because Ray owns the set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Values of [`AppStatus::status`]: Ray Serve's application statuses.
pub mod application_status {
    pub const NOT_STARTED: &str = "NOT_STARTED";
    pub const DEPLOYING: &str = "DEPLOYING";
    pub const RUNNING: &str = "RUNNING";
    pub const DEPLOY_FAILED: &str = "DEPLOY_FAILED";
    pub const DELETING: &str = "DELETING";
    pub const UNHEALTHY: &str = "UNHEALTHY";
}

/// Values of [`ServeDeploymentStatus::status`]: Ray Serve's deployment statuses.
pub mod deployment_status {
    pub const UPDATING: &str = "UPDATING";
    pub const HEALTHY: &str = "HEALTHY";
    pub const UNHEALTHY: &str = "UNHEALTHY";
}
