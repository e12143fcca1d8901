//! `RayCluster`: one head Pod and any number of worker groups.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        core::v1::{
            EnvFromSource, EnvVar, EnvVarSource, PodTemplateSpec, ResourceRequirements, SecurityContext,
            Service, VolumeMount,
        },
        networking::v1::{IngressTLS, NetworkPolicyEgressRule, NetworkPolicyIngressRule},
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{Condition, ObjectMeta, Time},
    },
};
use serde::{Deserialize, Serialize};

/// A Ray cluster. `spec` is what the user wants, `status` what the operator last observed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RayCluster {
    pub metadata: ObjectMeta,
    pub spec: RayClusterSpec,
    pub status: Option<RayClusterStatus>,
}

ray_resource!(
    RayCluster,
    spec = RayClusterSpec,
    status = RayClusterStatus,
    plural = "rayclusters",
    list_kind = "RayClusterList"
);

/// The desired cluster. RayJob and RayService embed it as the template of the clusters they create.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayClusterSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<RayClusterUpgradeStrategy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_options: Option<AuthOptions>,
    /// `true` deletes every Pod of the cluster but keeps the object, so it can be resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Which controller reconciles this object; see [`crate::MANAGED_BY_KUBERAY`]. Immutable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-validations" = crate::common::managed_by_validations()))
    )]
    pub managed_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaler_options: Option<AutoscalerOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_service_annotations: Option<BTreeMap<String, String>>,
    /// Adds the autoscaler sidecar to the head Pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_in_tree_autoscaling: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gcs_fault_tolerance_options: Option<GcsFaultToleranceOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_server_options: Option<HistoryServerOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicyConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_options: Option<TlsOptions>,
    pub head_group_spec: HeadGroupSpec,
    /// The Ray version of the images; decides which `ray` command lines and features the operator uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_group_specs: Option<Vec<WorkerGroupSpec>>,
}

/// Mutual TLS between the Ray processes, with certificates from cert-manager.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TlsOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// What happens to running Pods when the Pod templates change.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum RayClusterUpgradeType {
    /// Delete every Pod, then create them from the new templates.
    Recreate,
    /// Leave existing Pods alone; only new Pods use the new templates.
    None,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayClusterUpgradeStrategy {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<RayClusterUpgradeType>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Anyone who reaches the head may use it.
    Disabled,
    /// Ray checks a bearer token; unset `mode` means this.
    Token,
}

/// Authentication of requests to the Ray head (dashboard, Jobs API, client).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuthOptions {
    /// Lets Ray accept Kubernetes ServiceAccount tokens, checked with the API server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_k8s_token_auth: Option<bool>,
    /// A Secret with the token under the key `auth_token`; without it the operator generates one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<AuthMode>,
}

/// Where the GCS keeps its state so that it survives a head Pod restart.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum GcsFaultToleranceBackend {
    /// An external Redis; the default.
    Redis,
    /// An embedded RocksDB on a volume of the head Pod.
    RocksDb,
}

/// GCS fault tolerance: the head can restart without losing the cluster's state.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GcsFaultToleranceOptions {
    /// Immutable: switching backends would throw away the stored state.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-validations" = [
            {"rule": "self == oldSelf", "message": "gcsFaultToleranceOptions.backend is immutable"}
        ]))
    )]
    pub backend: Option<GcsFaultToleranceBackend>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_username: Option<RedisCredential>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_password: Option<RedisCredential>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_storage_namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_address: Option<String>,
    /// The volume of the `rocksdb` backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<GcsEmbeddedStorage>,
}

/// The PersistentVolumeClaim behind the embedded RocksDB: either the user's (`claimName`) or one the
/// operator creates from the other fields.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GcsEmbeddedStorage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_modes: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<GcsStorageDeletionPolicy>,
}

/// Whether the operator-created GCS volume claim goes away with its cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum GcsStorageDeletionPolicy {
    DeleteWithCluster,
    Retain,
}

/// A Redis user name or password, inline or from a Secret or ConfigMap.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RedisCredential {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvVarSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HistoryServerOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collector_options: Option<CollectorOptions>,
}

/// The sidecar that ships a cluster's logs and events to the Ray history server.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CollectorOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
}

/// Which traffic the cluster's NetworkPolicies deny; traffic between the cluster's own Pods is always
/// allowed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum NetworkPolicyMode {
    DenyAll,
    DenyAllIngress,
    DenyAllEgress,
}

/// NetworkPolicies for the head and the workers. DNS is not allowed implicitly: under a mode that denies
/// egress, the rules must allow it, or workers cannot resolve the head's Service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = "DenyAll")))]
    pub mode: Option<NetworkPolicyMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<NetworkPolicyRules>,
    /// Rules of every worker group that has no entry in `workerGroups`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<NetworkPolicyRules>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["groupName"]))
    )]
    pub worker_groups: Option<Vec<WorkerGroupNetworkPolicyRules>>,
}

/// The rules of one worker group; they replace `worker`, they are not merged with it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WorkerGroupNetworkPolicyRules {
    pub group_name: String,
    #[serde(flatten)]
    pub rules: NetworkPolicyRules,
}

/// Rules added to the policy the operator always creates (which allows the cluster's internal traffic).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyRules {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress_rules: Option<Vec<NetworkPolicyIngressRule>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress_rules: Option<Vec<NetworkPolicyEgressRule>>,
}

/// The head Pod and its Service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeadGroupSpec {
    pub template: PodTemplateSpec,
    /// A template for the head Service; the operator fills in what it leaves out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_service: Option<Service>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_ingress: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress_options: Option<IngressOptions>,
    /// Ray resources of the head node; they win over `--resources` and friends in `rayStartParams`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<BTreeMap<String, String>>,
    /// Ray node labels; also put on the Pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Options of `ray start`, without the leading `--`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_start_params: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_type: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum IngressPathType {
    Exact,
    Prefix,
    ImplementationSpecific,
}

/// The Ingress to the head's dashboard that `enableIngress` creates.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct IngressOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The operator uses `/` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The operator uses `Prefix` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_type: Option<IngressPathType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<Vec<IngressTLS>>,
}

/// A group of identical workers, scaled between `minReplicas` and `maxReplicas`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WorkerGroupSpec {
    /// Set by the RayJob controller to delete a group's Pods; users do not set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Unique within the cluster; it names the group's Pods and labels them.
    pub group_name: String,
    /// Optional so that an autoscaler and `kubectl apply` do not fight over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 0)))]
    pub replicas: Option<i32>,
    /// Required by the schema, which defaults it, so it is always set on stored objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(required, extend("default" = 0)))]
    pub min_replicas: Option<i32>,
    /// Required by the schema, which defaults it, so it is always set on stored objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(required, extend("default" = i32::MAX)))]
    pub max_replicas: Option<i32>,
    /// Overrides the autoscaler's idle timeout for this group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<i32>,
    /// The autoscaler (v2) prefers groups with a higher priority when several fit a demand.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 0)))]
    pub priority: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ray_start_params: Option<BTreeMap<String, String>>,
    pub template: PodTemplateSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<ScaleStrategy>,
    /// Pods per replica: a multi-host replica (a TPU slice, say) is created and deleted as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = 1)))]
    pub num_of_hosts: Option<i32>,
}

/// How the autoscaler tells the operator which workers to remove when it scales a group down.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScaleStrategy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_to_delete: Option<Vec<String>>,
}

/// The autoscaler container the operator adds to the head Pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AutoscalerOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<SecurityContext>,
    /// Read by the autoscaler, not by the operator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<i32>,
    /// Read by the autoscaler, not by the operator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upscaling_mode: Option<UpscalingMode>,
    /// Unset: the Ray version decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<AutoscalerVersion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum UpscalingMode {
    Default,
    Aggressive,
    /// At most as many pending workers as the cluster has nodes.
    Conservative,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum AutoscalerVersion {
    V1,
    V2,
}

open_enum! {
    /// `status.state`, kept for old clients: the conditions say more.
    pub enum ClusterState {
        Ready = "ready",
        /// No longer set by KubeRay; older objects may still carry it.
        Failed = "failed",
        Suspended = "suspended",
    }
}

/// What the operator observed of the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RayClusterStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<ClusterState>,
    /// Sum over the cluster's desired Pods, for `kubectl get`.
    #[serde(rename = "desiredCPU", skip_serializing_if = "Option::is_none")]
    pub desired_cpu: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired_memory: Option<Quantity>,
    #[serde(rename = "desiredGPU", skip_serializing_if = "Option::is_none")]
    pub desired_gpu: Option<Quantity>,
    #[serde(rename = "desiredTPU", skip_serializing_if = "Option::is_none")]
    pub desired_tpu: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("nullable" = true)))]
    pub last_update_time: Option<Time>,
    /// When `state` last became each value, keyed by the [`ClusterState`] string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_transition_times: Option<BTreeMap<String, Time>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<HeadInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Types in [`crate::conditions`]. A map keyed by `type`, so that server-side apply merges entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))
    )]
    pub conditions: Option<Vec<Condition>>,
    /// Worker Pods that are Ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_worker_replicas: Option<i32>,
    /// Worker Pods that are running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_worker_replicas: Option<i32>,
    /// Sum of `replicas * numOfHosts` over the worker groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired_worker_replicas: Option<i32>,
    /// Sum of `minReplicas * numOfHosts` over the worker groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_worker_replicas: Option<i32>,
    /// Sum of `maxReplicas * numOfHosts` over the worker groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_worker_replicas: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Where the head can be reached.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeadInfo {
    #[serde(rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    #[serde(rename = "serviceIP", skip_serializing_if = "Option::is_none")]
    pub service_ip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
}
