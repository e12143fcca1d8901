//! What one reconcile carries: the host, the RayJob as read, and the time, taken once so that every deadline
//! of the reconcile is judged against the same instant.

use k8s_openapi::Resource;
use kuberay_crds::{JobSubmissionMode, RayJob, RayJobSpec};
use kuberay_plugin_sdk::{Event, Host, HostError, LogLevel, RayHead, TypedHost};
use kuberay_rules::{batch_scheduler::BatchScheduler, cluster_spec::Gates, time};
use serde::de::DeserializeOwned;

use crate::spec;
use kuberay_rules::operator_env::OperatorEnv;

pub struct Ctx<'h, H: Host> {
    pub host: &'h H,
    pub job: RayJob,
    pub name: String,
    pub namespace: String,
    /// The host's time in Unix seconds.
    pub now: i64,
    /// KubeRay's operator environment toggles (the plugin's `kuberayEnv` configuration).
    pub env: OperatorEnv,
    /// The batch scheduler (the plugin's `batchScheduler` configuration), if any.
    pub batch_scheduler: Option<BatchScheduler>,
    /// The feature gates the cluster spec is validated under (the plugin's `featureGates` configuration).
    pub gates: Gates,
}

impl<'h, H: Host> Ctx<'h, H> {
    pub fn new(host: &'h H, job: RayJob) -> Self {
        let name = job.metadata.name.clone().unwrap_or_default();
        let namespace = job.metadata.namespace.clone().unwrap_or_default();
        let config = host.config();
        Self {
            now: time::now_seconds(host),
            env: OperatorEnv::from_config(&config),
            // An unknown scheduler never gets here: `config::check` refuses it when the plugin is loaded.
            batch_scheduler: BatchScheduler::from_config(&config).ok().flatten(),
            gates: Gates::from_config(&config),
            host,
            job,
            name,
            namespace,
        }
    }

    pub fn spec(&self) -> &RayJobSpec {
        &self.job.spec
    }

    pub fn mode(&self) -> JobSubmissionMode {
        spec::submission_mode(&self.job.spec)
    }

    /// `namespace/name` of an object in the RayJob's namespace, as KubeRay's messages print it.
    pub fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }

    /// Records an event; a failure to record one never fails the reconcile.
    pub fn event(&self, event: Event) {
        kuberay_rules::report::record(self.host, &event);
    }

    pub fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, message, &[]);
    }

    pub fn get<K: Resource + DeserializeOwned>(&self, name: &str) -> Result<Option<K>, HostError> {
        self.host.get_as(name)
    }

    /// The dashboard of a cluster the RayJob runs on.
    pub fn head(&self, cluster: &str) -> RayHead<'h, H> {
        RayHead::new(self.host, cluster)
    }
}
