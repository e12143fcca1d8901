//! Names and defaults that are part of KubeRay's observable contract but are not fields of the API (those
//! live in `kuberay_crds::constants`): environment variables, ports, event reasons. They must keep KubeRay's
//! exact spelling, because Ray, the autoscaler and users' tooling look for them. What every plugin shares
//! (version, ports, port names, event actions) is defined once in `kuberay_rules::consts` and re-exported
//! here; what stays is the RayCluster controller's own.

pub use kuberay_rules::consts::{
    APPLICATION_NAME, CLIENT_PORT_NAME, CLUSTER_DOMAIN, COMPONENT_NAME, DASHBOARD_PORT_NAME,
    DEFAULT_CLIENT_PORT, DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, DEFAULT_DASHBOARD_PORT,
    DEFAULT_GCS_SERVER_PORT, DEFAULT_METRICS_PORT, DEFAULT_SERVICE_APP_PROTOCOL, DEFAULT_SERVING_PORT,
    GCS_SERVER_PORT_NAME, KUBERAY_VERSION, METRICS_PORT_NAME, SERVING_PORT_NAME, action,
};

/// The loopback address the head uses to reach its own GCS.
pub const LOCAL_HOST: &str = "127.0.0.1";

/// Container and volume names KubeRay injects.
pub const AUTOSCALER_CONTAINER_NAME: &str = "autoscaler";
pub const WAIT_GCS_READY_CONTAINER_NAME: &str = "wait-gcs-ready";
pub const SHARED_MEMORY_VOLUME_NAME: &str = "shared-mem";
pub const SHARED_MEMORY_MOUNT_PATH: &str = "/dev/shm";
pub const RAY_LOG_VOLUME_NAME: &str = "ray-logs";
pub const RAY_LOG_MOUNT_PATH: &str = "/tmp/ray";

/// Environment variables the operator sets on Ray containers.
/// The embedded (RocksDB) GCS store of `gcsFaultToleranceOptions.backend: rocksdb`: KubeRay's names.
pub mod gcs_storage {
    /// Selects the backend in the head's Ray container.
    pub const ENV_STORAGE: &str = "RAY_gcs_storage";
    /// Where the head keeps the store.
    pub const ENV_STORAGE_PATH: &str = "RAY_gcs_storage_path";
    pub const ROCKSDB: &str = "rocksdb";
    pub const VOLUME_NAME: &str = "gcs-storage";
    pub const MOUNT_PATH: &str = "/data/gcs";
    /// The operator's claim is `<cluster>-gcs-pvc`.
    pub const PVC_SUFFIX: &str = "-gcs-pvc";
    pub const DEFAULT_SIZE: &str = "1Gi";
}

pub mod env {
    pub const RAY_CLUSTER_NAME: &str = "RAY_CLUSTER_NAME";
    pub const RAY_CLUSTER_NAMESPACE: &str = "RAY_CLUSTER_NAMESPACE";
    pub const RAY_CLOUD_INSTANCE_ID: &str = "RAY_CLOUD_INSTANCE_ID";
    pub const RAY_NODE_TYPE_NAME: &str = "RAY_NODE_TYPE_NAME";
    pub const RAY_IP: &str = "RAY_IP";
    pub const FQ_RAY_IP: &str = "FQ_RAY_IP";
    pub const RAY_PORT: &str = "RAY_PORT";
    pub const RAY_ADDRESS: &str = "RAY_ADDRESS";
    pub const RAY_REDIS_ADDRESS: &str = "RAY_REDIS_ADDRESS";
    pub const REDIS_PASSWORD: &str = "REDIS_PASSWORD";
    pub const REDIS_USERNAME: &str = "REDIS_USERNAME";
    pub const RAY_EXTERNAL_STORAGE_NS: &str = "RAY_external_storage_namespace";
    pub const RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S: &str = "RAY_gcs_rpc_server_reconnect_timeout_s";
    pub const RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO: &str = "RAY_timeout_ms_task_wait_for_death_info";
    pub const RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS: &str = "RAY_gcs_server_request_timeout_seconds";
    pub const RAY_SERVE_KV_TIMEOUT_S: &str = "RAY_SERVE_KV_TIMEOUT_S";
    pub const RAY_USAGE_STATS_KUBERAY_IN_USE: &str = "RAY_USAGE_STATS_KUBERAY_IN_USE";
    pub const RAY_USAGE_STATS_EXTRA_TAGS: &str = "RAY_USAGE_STATS_EXTRA_TAGS";
    pub const RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE: &str = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE";
    pub const KUBERAY_GEN_RAY_START_CMD: &str = "KUBERAY_GEN_RAY_START_CMD";
    pub const KUBERAY_GEN_AUTOSCALER_START_CMD: &str = "KUBERAY_GEN_AUTOSCALER_START_CMD";
    pub const RAY_START_ULIMIT_OPEN_FILES: &str = "RAY_START_ULIMIT_OPEN_FILES";
    pub const RAY_ENABLE_AUTOSCALER_V2: &str = "RAY_enable_autoscaler_v2";
}

/// Event reasons, exactly as KubeRay records them.
pub mod reason {
    pub const INVALID_SPEC: &str = "InvalidRayClusterSpec";
    pub const INVALID_METADATA: &str = "InvalidRayClusterMetadata";
    pub const INVALID_STATUS: &str = "InvalidRayClusterStatus";
    pub const CREATED_HEAD_POD: &str = "CreatedHeadPod";
    pub const FAILED_TO_CREATE_HEAD_POD: &str = "FailedToCreateHeadPod";
    pub const DELETED_HEAD_POD: &str = "DeletedHeadPod";
    pub const FAILED_TO_DELETE_HEAD_POD: &str = "FailedToDeleteHeadPod";
    pub const CREATED_WORKER_POD: &str = "CreatedWorkerPod";
    pub const FAILED_TO_CREATE_WORKER_POD: &str = "FailedToCreateWorkerPod";
    pub const DELETED_WORKER_POD: &str = "DeletedWorkerPod";
    pub const FAILED_TO_DELETE_WORKER_POD: &str = "FailedToDeleteWorkerPod";
    pub const FAILED_TO_DELETE_WORKER_POD_COLLECTION: &str = "FailedToDeleteWorkerPodCollection";
    pub const DELETED_POD: &str = "DeletedPod";
    pub const FAILED_TO_DELETE_POD_COLLECTION: &str = "FailedToDeletePodCollection";
    pub const CREATED_REDIS_CLEANUP_JOB: &str = "CreatedRedisCleanupJob";
    pub const FAILED_TO_CREATE_REDIS_CLEANUP_JOB: &str = "FailedToCreateRedisCleanupJob";
    pub const FORCE_DELETED_STUCK_CLUSTER: &str = "ForceDeletedStuckCluster";
    pub const CREATED_SERVICE: &str = "CreatedService";
    pub const FAILED_TO_CREATE_SERVICE: &str = "FailedToCreateService";
    pub const CREATED_INGRESS: &str = "CreatedIngress";
    pub const FAILED_TO_CREATE_INGRESS: &str = "FailedToCreateIngress";
    pub const UPDATED_INGRESS: &str = "UpdatedIngress";
    pub const FAILED_TO_UPDATE_INGRESS: &str = "FailedToUpdateIngress";
    pub const CREATED_SERVICE_ACCOUNT: &str = "CreatedServiceAccount";
    pub const FAILED_TO_CREATE_SERVICE_ACCOUNT: &str = "FailedToCreateServiceAccount";
    pub const AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND: &str = "AutoscalerServiceAccountNotFound";
    pub const CREATED_ROLE: &str = "CreatedRole";
    pub const FAILED_TO_CREATE_ROLE: &str = "FailedToCreateRole";
    pub const CREATED_ROLE_BINDING: &str = "CreatedRoleBinding";
    pub const FAILED_TO_CREATE_ROLE_BINDING: &str = "FailedToCreateRoleBinding";
    pub const CREATED_PVC: &str = "CreatedPVC";
    pub const FAILED_TO_CREATE_PVC: &str = "FailedToCreatePVC";
}
