//! Names that are part of KubeRay's contract beyond the schema: labels and annotations that users, Ray and
//! other tools select on or set, finalizers, and the `type`/`reason` strings of status conditions. Their
//! values must stay exactly KubeRay's, or objects created by KubeRay would not be recognised (and vice versa).

/// Labels the operator puts on the Pods, Services and Jobs it creates.
pub mod labels {
    /// The RayCluster a Pod or Service belongs to. Also the default key of a RayJob's `clusterSelector`.
    pub const RAY_CLUSTER: &str = "ray.io/cluster";
    /// `head`, `worker` or `redis-cleanup`; see [`super::node_type`].
    pub const RAY_NODE_TYPE: &str = "ray.io/node-type";
    /// The worker group name, or [`super::HEAD_GROUP_NAME`] on the head.
    pub const RAY_NODE_GROUP: &str = "ray.io/group";
    /// `"yes"` on every Ray Pod.
    pub const RAY_IS_RAY_NODE: &str = "ray.io/is-ray-node";
    pub const RAY_IDENTIFIER: &str = "ray.io/identifier";
    /// `"true"` on Pods that serve traffic, which is what the serve Service selects.
    pub const RAY_SERVE: &str = "ray.io/serve";
    pub const RAY_HEADLESS_WORKER_SERVICE: &str = "ray.io/headless-worker-svc";
    /// The kind (`RayJob`, `RayService`) of the custom resource that created an object.
    pub const RAY_ORIGINATED_FROM_CRD: &str = "ray.io/originated-from-crd";
    /// The name of the custom resource that created an object.
    pub const RAY_ORIGINATED_FROM_CR_NAME: &str = "ray.io/originated-from-cr-name";
    pub const RAY_CRONJOB_NAME: &str = "ray.io/cronjob-name";
    pub const RAY_JOB_SUBMISSION_MODE: &str = "ray.io/job-submission-mode";
    /// Multi-host worker groups: the replica a Pod belongs to (unique across clusters).
    pub const RAY_WORKER_GROUP_REPLICA_NAME: &str = "ray.io/worker-group-replica-name";
    /// Multi-host worker groups: the replica's index within its group.
    pub const RAY_WORKER_GROUP_REPLICA_INDEX: &str = "ray.io/worker-group-replica-index";
    /// Multi-host worker groups: the Pod's index within its replica.
    pub const RAY_REPLICA_HOST_INDEX: &str = "ray.io/replica-host-index";
    /// Batch schedulers (Volcano, YuniKorn) read these from the RayCluster.
    pub const RAY_PRIORITY_CLASS_NAME: &str = "ray.io/priority-class-name";
    pub const RAY_GANG_SCHEDULING_ENABLED: &str = "ray.io/gang-scheduling-enabled";
    pub const KUBERNETES_APPLICATION_NAME: &str = "app.kubernetes.io/name";
    pub const KUBERNETES_CREATED_BY: &str = "app.kubernetes.io/created-by";
}

/// Annotations users set on RayClusters, RayJobs and RayServices, and those the operator sets.
pub mod annotations {
    /// Deprecated switch for GCS fault tolerance (`gcsFaultToleranceOptions` replaces it).
    pub const RAY_FT_ENABLED: &str = "ray.io/ft-enabled";
    pub const RAY_EXTERNAL_STORAGE_NAMESPACE: &str = "ray.io/external-storage-namespace";
    /// Seconds the operator waits for the Redis clean-up of a deleted fault-tolerant cluster.
    pub const RAY_GCS_FT_DELETION_TIMEOUT: &str = "ray.io/gcs-ft-deletion-timeout";
    /// `"true"`: the operator leaves the Ray container's command alone.
    pub const RAY_OVERWRITE_CONTAINER_CMD: &str = "ray.io/overwrite-container-cmd";
    /// On a RayService: how long it may take to become ready, as a Go duration or in seconds.
    pub const RAY_SERVICE_INITIALIZING_TIMEOUT: &str = "ray.io/initializing-timeout";
    /// On a RayCluster: whether it is used to serve traffic directly.
    pub const RAY_ENABLE_SERVE_SERVICE: &str = "ray.io/enable-serve-service";
    /// On clusters of sidecar-mode RayJobs: do not recreate the head Pod once provisioned.
    pub const RAY_DISABLE_PROVISIONED_HEAD_RESTART: &str = "ray.io/disable-provisioned-head-restart";
    /// On RayJobs created by a RayCronJob: the scheduled time.
    pub const RAY_CRONJOB_SCHEDULED_TIMESTAMP: &str = "ray.io/cronjob-scheduled-timestamp";
    /// Hash of a cluster spec, which tells the operator whether the Pods must be replaced.
    pub const RAY_HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE: &str =
        "ray.io/hash-without-replicas-and-workers-to-delete";
    pub const RAY_UPGRADE_STRATEGY_RECREATE_HASH: &str = "ray.io/upgrade-strategy-recreate-hash";
    pub const RAY_NUM_WORKER_GROUPS: &str = "ray.io/num-worker-groups";
    pub const KUBERAY_VERSION: &str = "ray.io/kuberay-version";
}

/// Finalizers the operator adds, and must remove, so that clean-up happens before an object goes away.
pub mod finalizers {
    /// Stops the Ray job before its RayJob is deleted.
    pub const RAY_JOB_STOP_JOB: &str = "ray.io/rayjob-finalizer";
    pub const RAY_SERVICE: &str = "ray.io/rayservice-finalizer";
    /// Cleans the Redis data of a fault-tolerant cluster after it is deleted.
    pub const GCS_FT_REDIS_CLEANUP: &str = "ray.io/gcs-ft-redis-cleanup-finalizer";
}

/// Values of the [`labels::RAY_NODE_TYPE`] label.
pub mod node_type {
    pub const HEAD: &str = "head";
    pub const WORKER: &str = "worker";
    /// The Pod of the Job that cleans Redis after a fault-tolerant cluster is deleted.
    pub const REDIS_CLEANUP: &str = "redis-cleanup";
}

/// The [`labels::RAY_NODE_GROUP`] value of the head Pod.
pub const HEAD_GROUP_NAME: &str = "headgroup";

/// `type`s of status conditions.
pub mod conditions {
    /// RayCluster: all Pods were ready once. Never goes back to false.
    pub const RAY_CLUSTER_PROVISIONED: &str = "RayClusterProvisioned";
    /// RayCluster: the head Pod is ready.
    pub const HEAD_POD_READY: &str = "HeadPodReady";
    /// RayCluster: creating or deleting a Pod failed.
    pub const RAY_CLUSTER_REPLICA_FAILURE: &str = "ReplicaFailure";
    /// RayCluster: deleting the Pods of a suspended cluster is under way. Never true with `Suspended`.
    pub const RAY_CLUSTER_SUSPENDING: &str = "RayClusterSuspending";
    pub const RAY_CLUSTER_SUSPENDED: &str = "RayClusterSuspended";
    /// RayService: there are serve endpoints, so requests can be sent.
    pub const RAY_SERVICE_READY: &str = "Ready";
    pub const UPGRADE_IN_PROGRESS: &str = "UpgradeInProgress";
    pub const ROLLBACK_IN_PROGRESS: &str = "RollbackInProgress";
    /// RayService: deleting what it owns is under way; completes even if `suspend` is reset meanwhile.
    pub const RAY_SERVICE_SUSPENDING: &str = "Suspending";
    pub const RAY_SERVICE_SUSPENDED: &str = "Suspended";
}

/// `reason`s of status conditions.
pub mod reasons {
    pub const ALL_POD_RUNNING_AND_READY_FIRST_TIME: &str = "AllPodRunningAndReadyFirstTime";
    pub const RAY_CLUSTER_PODS_PROVISIONING: &str = "RayClusterPodsProvisioning";
    pub const HEAD_POD_NOT_FOUND: &str = "HeadPodNotFound";
    pub const HEAD_POD_RUNNING_AND_READY: &str = "HeadPodRunningAndReady";
    pub const UNKNOWN: &str = "Unknown";
    pub const FAILED_DELETE_ALL_PODS: &str = "FailedDeleteAllPods";
    pub const FAILED_DELETE_HEAD_POD: &str = "FailedDeleteHeadPod";
    pub const FAILED_CREATE_HEAD_POD: &str = "FailedCreateHeadPod";
    pub const FAILED_DELETE_WORKER_POD: &str = "FailedDeleteWorkerPod";
    pub const FAILED_CREATE_WORKER_POD: &str = "FailedCreateWorkerPod";
    pub const RAY_SERVICE_INITIALIZING: &str = "Initializing";
    pub const RAY_SERVICE_INITIALIZING_TIMEOUT: &str = "InitializingTimeout";
    pub const ZERO_SERVE_ENDPOINTS: &str = "ZeroServeEndpoints";
    pub const NON_ZERO_SERVE_ENDPOINTS: &str = "NonZeroServeEndpoints";
    pub const BOTH_ACTIVE_PENDING_CLUSTERS_EXIST: &str = "BothActivePendingClustersExist";
    pub const NO_PENDING_CLUSTER: &str = "NoPendingCluster";
    pub const NO_ACTIVE_CLUSTER: &str = "NoActiveCluster";
    pub const RAY_SERVICE_VALIDATION_FAILED: &str = "ValidationFailed";
    pub const DESIRED_CLUSTER_SPEC_CHANGED: &str = "DesiredClusterSpecChanged";
    pub const SUSPEND_REQUESTED: &str = "SuspendRequested";
    pub const SUSPEND_IN_PROGRESS: &str = "SuspendInProgress";
    pub const SUSPEND_COMPLETE: &str = "SuspendComplete";
    pub const RAY_SERVICE_RESUMED: &str = "RayServiceResumed";
}
