//! Names, values and timings of KubeRay's RayService behaviour that are not fields of the API (those are in
//! `kuberay_crds`): event reasons, the requeue interval and defaults. They keep KubeRay's spelling because
//! users' tooling looks for them.

use std::time::Duration;

/// KubeRay looks at every RayService every 2 seconds.
pub const REQUEUE: Duration = Duration::from_secs(2);

/// How often a RayService with `NewClusterWithIncrementalUpgrade` looks again for the Gateway API when the
/// API server does not serve it.
pub const GATEWAY_API_RETRY: Duration = Duration::from_secs(60);

/// How long a cluster that serves no more lives on when `rayClusterDeletionDelaySeconds` is unset.
pub const DEFAULT_DELETION_DELAY_SECONDS: i64 = 60;

/// RayService names leave room for the `-xxxxx` suffix of their clusters within RayCluster's 53 characters.
pub const MAX_RAYSERVICE_NAME_LENGTH: usize = 53 - 6;

/// The name KubeRay gives an application Ray reports without one.
pub const DEFAULT_SERVE_APP_NAME: &str = "default";

/// The Serve proxy's health endpoint on the head Pod.
pub const PROXY_HEALTH_PATH: &str = "/-/healthz";

/// `kubernetes.io/service-name`: the label that ties EndpointSlices to their Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The event action of KubeRay's reconcile-level events (initializing timeout).
pub const RECONCILE_ACTION: &str = "Reconcile";

/// Event reasons, as KubeRay spells them.
pub mod reason {
    pub const INVALID_RAYSERVICE_SPEC: &str = "InvalidRayServiceSpec";
    pub const INVALID_RAYSERVICE_METADATA: &str = "InvalidRayServiceMetadata";
    pub const INITIALIZING_TIMEOUT: &str = "RayServiceInitializingTimeout";
    pub const CREATED_RAYCLUSTER: &str = "CreatedRayCluster";
    pub const UPDATED_RAYCLUSTER: &str = "UpdatedRayCluster";
    pub const DELETED_RAYCLUSTER: &str = "DeletedRayCluster";
    pub const FAILED_TO_CREATE_RAYCLUSTER: &str = "FailedToCreateRayCluster";
    pub const FAILED_TO_UPDATE_RAYCLUSTER: &str = "FailedToUpdateRayCluster";
    pub const FAILED_TO_DELETE_RAYCLUSTER: &str = "FailedToDeleteRayCluster";
    pub const CREATED_SERVICE: &str = "CreatedService";
    pub const UPDATED_SERVICE: &str = "UpdatedService";
    pub const DELETED_SERVICE: &str = "DeletedService";
    pub const FAILED_TO_CREATE_SERVICE: &str = "FailedToCreateService";
    pub const FAILED_TO_UPDATE_SERVICE: &str = "FailedToUpdateService";
    pub const FAILED_TO_DELETE_SERVICE: &str = "FailedToDeleteService";
    pub const UPDATED_SERVE_APPLICATIONS: &str = "UpdatedServeApplications";
    pub const FAILED_TO_UPDATE_SERVE_APPLICATIONS: &str = "FailedToUpdateServeApplications";
    pub const UPDATED_HEAD_POD_SERVE_LABEL: &str = "UpdatedHeadPodServeLabel";
    pub const FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL: &str = "FailedToUpdateHeadPodServeLabel";
    pub const CREATED_GATEWAY: &str = "CreatedGateway";
    pub const UPDATED_GATEWAY: &str = "UpdatedGateway";
    pub const FAILED_TO_CREATE_GATEWAY: &str = "FailedToCreateGateway";
    pub const FAILED_TO_UPDATE_GATEWAY: &str = "FailedToUpdateGateway";
    pub const CREATED_HTTPROUTE: &str = "CreatedHTTPRoute";
    pub const UPDATED_HTTPROUTE: &str = "UpdatedHTTPRoute";
    pub const FAILED_TO_CREATE_HTTPROUTE: &str = "FailedToCreateHTTPRoute";
    pub const FAILED_TO_UPDATE_HTTPROUTE: &str = "FailedToUpdateHTTPRoute";
    pub const UPDATED_SERVE_TARGET_CAPACITY: &str = "UpdatedServeTargetCapacity";
    pub const FAILED_TO_UPDATE_TARGET_CAPACITY: &str = "FailedToUpdateTargetCapacity";
    pub const ROLLBACK_IMPOSSIBLE: &str = "RollbackImpossible";
    /// Ours: `NewClusterWithIncrementalUpgrade` on an API server that does not serve the Gateway API.
    pub const GATEWAY_API_NOT_INSTALLED: &str = "GatewayAPINotInstalled";
}
