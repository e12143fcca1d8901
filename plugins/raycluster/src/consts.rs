//! Names and defaults that are part of KubeRay's observable contract but are not fields of the API (those
//! live in `kuberay_crds::constants`): environment variables, ports, event reasons. They must keep KubeRay's
//! exact spelling, because Ray, the autoscaler and users' tooling look for them. What every plugin shares
//! (version, ports, port names, event actions) is defined once in `kuberay_rules::consts` and re-exported
//! here; what stays is the RayCluster controller's own.

pub use kuberay_rules::consts::{
    APPLICATION_NAME, CLIENT_PORT_NAME, CLUSTER_DOMAIN, COMPONENT_NAME, DASHBOARD_PORT_NAME,
    DEFAULT_CLIENT_PORT, DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, DEFAULT_DASHBOARD_PORT,
    DEFAULT_GCS_SERVER_PORT, DEFAULT_METRICS_PORT, DEFAULT_SERVICE_APP_PROTOCOL, DEFAULT_SERVING_PORT,
    GCS_SERVER_PORT_NAME, KUBERAY_VERSION, METRICS_PORT_NAME, SERVING_PORT_NAME, action, env, gcs_storage,
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
