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
