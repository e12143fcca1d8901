//! What one reconcile carries: the host, the RayService as read, and the time, taken once so that every
//! deadline of the reconcile is judged against the same instant.

use kuberay_crds::{RayService, RayServiceSpec, RayServiceStatuses};
use kuberay_plugin_sdk::{Event, Host, LogLevel};
use kuberay_rules::{cluster_spec::Gates, operator_env::OperatorEnv, report, time};

/// One reconcile of one RayService.
pub struct Ctx<'h, H: Host> {
    pub host: &'h H,
    pub service: RayService,
    pub name: String,
    pub namespace: String,
    /// The host's time in Unix seconds.
    pub now: i64,
    /// KubeRay's operator environment toggles (the plugin's `kuberayEnv` configuration).
    pub env: OperatorEnv,
    /// The feature gates the cluster spec is validated under (the plugin's `featureGates` configuration).
    pub gates: Gates,
}

impl<'h, H: Host> Ctx<'h, H> {
    pub fn new(host: &'h H, service: RayService) -> Self {
        let name = service.metadata.name.clone().unwrap_or_default();
        let namespace = service.metadata.namespace.clone().unwrap_or_default();
        let config = host.config();
        Self {
            now: time::now_seconds(host),
            env: OperatorEnv::from_config(&config),
            gates: Gates::from_config(&config),
            host,
            service,
            name,
            namespace,
        }
    }

    pub fn spec(&self) -> &RayServiceSpec {
        &self.service.spec
    }

    /// The status as read (empty when there is none yet).
    pub fn status(&self) -> RayServiceStatuses {
        self.service.status.clone().unwrap_or_default()
    }

    /// `namespace/name` of an object in the RayService's namespace, as KubeRay's messages print it.
    pub fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }

    /// Records an event; a failure to record one never fails the reconcile.
    pub fn event(&self, event: &Event) {
        report::record(self.host, event);
    }

    pub fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, message, &[("rayservice", &self.name)]);
    }
}
