//! Values that are part of KubeRay's observable contract without being fields of the API: users' tooling,
//! Ray and the autoscaler look for them, so they keep KubeRay's exact spelling.

/// The KubeRay release whose behaviour the plugins reproduce; reported where KubeRay reports its own
/// version (`ray.io/kuberay-version`, usage stats).
pub const KUBERAY_VERSION: &str = "v1.7.0";

/// `app.kubernetes.io/name` on everything the operator makes.
pub const APPLICATION_NAME: &str = "kuberay";
/// `app.kubernetes.io/created-by` on everything the operator makes.
pub const COMPONENT_NAME: &str = "kuberay-operator";

/// KubeRay's cluster domain when `CLUSTER_DOMAIN` is not set; plugins have no operator environment.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// Ports KubeRay assumes when the head container names none.
pub const DEFAULT_CLIENT_PORT: i32 = 10001;
pub const DEFAULT_GCS_SERVER_PORT: i32 = 6379;
pub const DEFAULT_DASHBOARD_PORT: i32 = 8265;
pub const DEFAULT_METRICS_PORT: i32 = 8080;
pub const DEFAULT_DASHBOARD_AGENT_LISTEN_PORT: i32 = 52365;
pub const DEFAULT_SERVING_PORT: i32 = 8000;

/// Port names KubeRay gives (and looks for on) the head container and Services.
pub const CLIENT_PORT_NAME: &str = "client";
pub const GCS_SERVER_PORT_NAME: &str = "gcs-server";
pub const DASHBOARD_PORT_NAME: &str = "dashboard";
pub const METRICS_PORT_NAME: &str = "metrics";
pub const SERVING_PORT_NAME: &str = "serve";

/// `appProtocol` of the head Service's ports.
pub const DEFAULT_SERVICE_APP_PROTOCOL: &str = "tcp";

/// `ray.io/originated-from-crd` values.
pub mod crd {
    pub const RAY_CLUSTER: &str = "RayCluster";
    pub const RAY_JOB: &str = "RayJob";
    pub const RAY_SERVICE: &str = "RayService";
    pub const RAY_CRON_JOB: &str = "RayCronJob";
}

/// Token authentication (`authOptions.mode: token`): the Secret key and the environment variables.
pub mod auth {
    /// The key of the token in the cluster's auth Secret.
    pub const TOKEN_SECRET_KEY: &str = "auth_token";
    pub const RAY_AUTH_MODE: &str = "RAY_AUTH_MODE";
    pub const RAY_AUTH_TOKEN: &str = "RAY_AUTH_TOKEN";
}

/// Event actions (`events.k8s.io/v1` `action`), as KubeRay names them.
pub mod action {
    pub const CREATE: &str = "Create";
    pub const DELETE: &str = "Delete";
    pub const UPDATE: &str = "Update";
    pub const VALIDATE: &str = "Validate";
    pub const CLEANUP: &str = "Cleanup";
}

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

/// Environment variables the operator sets on Ray containers, or reads from them.
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

/// The history server's collector sidecar (`spec.historyServerOptions`).
pub mod history {
    /// The collector container's name; templates may not use it while the history server is configured.
    pub const COLLECTOR_CONTAINER_NAME: &str = "ray-history-collector";

    /// The environment variable names of the collector and of Ray's event export.
    pub mod env {
        pub const POD_IP: &str = "POD_IP";
        pub const FQ_RAY_IP: &str = "FQ_RAY_IP";
        pub const RAY_CLUSTER_NAME: &str = "RAY_CLUSTER_NAME";
        pub const RAY_CLUSTER_NAMESPACE: &str = "RAY_CLUSTER_NAMESPACE";
        pub const RAY_ROLE: &str = "RAY_ROLE";
        pub const OWNER_KIND: &str = "OWNER_KIND";
        pub const OWNER_NAME: &str = "OWNER_NAME";
        pub const EVENTS_PORT: &str = "EVENTS_PORT";
        pub const RAY_DASHBOARD_ADDRESS: &str = "RAY_DASHBOARD_ADDRESS";
        /// The variables KubeRay sets on the collector itself, which `collectorOptions.env` may not set.
        pub const MANAGED: [&str; 8] = [
            POD_IP,
            FQ_RAY_IP,
            RAY_CLUSTER_NAME,
            RAY_CLUSTER_NAMESPACE,
            RAY_ROLE,
            OWNER_KIND,
            OWNER_NAME,
            EVENTS_PORT,
        ];
        pub const STORAGE_BACKEND: &str = "STORAGE_BACKEND";
        pub const GCS_BUCKET: &str = "GCS_BUCKET";
        pub const S3_REGION: &str = "S3_REGION";
        pub const AZURE_STORAGE_CONNECTION_STRING: &str = "AZURE_STORAGE_CONNECTION_STRING";
        pub const AZURE_STORAGE_ACCOUNT_URL: &str = "AZURE_STORAGE_ACCOUNT_URL";
        pub const AZURE_STORAGE_AUTH_MODE: &str = "AZURE_STORAGE_AUTH_MODE";
        pub const OSS_BUCKET: &str = "OSS_BUCKET";
        pub const OSS_ENDPOINT: &str = "OSS_ENDPOINT";
        pub const OSS_REGION: &str = "OSS_REGION";
        pub const RAY_ENABLE_RAY_EVENT: &str = "RAY_enable_ray_event";
        pub const RAY_ENABLE_CORE_WORKER_RAY_EVENT_TO_AGGREGATOR: &str =
            "RAY_enable_core_worker_ray_event_to_aggregator";
        pub const EVENTS_EXPORT_ADDR: &str = "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR";
        pub const EXPOSABLE_EVENT_TYPES: &str = "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES";
        pub const PUBLISHER_EXPOSABLE_EVENT_TYPES: &str =
            "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES";
    }
}
