//! KubeRay v1.7's batch-scheduler integrations (`--batch-scheduler`, the plugins' `batchScheduler`
//! configuration): what each scheduler makes KubeRay write.
//!
//! - Every scheduler decorates the Pods KubeRay creates (head and workers of a RayCluster, the submitter
//!   Job's Pod template of a `K8sJobMode` RayJob) and, in `K8sJobMode`, the RayCluster a RayJob creates:
//!   [`BatchScheduler::decoration`] gives the `schedulerName`, labels and annotations (see each module).
//! - [`volcano`] also keeps a `scheduling.volcano.sh/v1beta1` PodGroup per RayCluster (not for a RayJob's)
//!   and per RayJob; [`scheduler_plugins`] creates a `scheduling.x-k8s.io/v1alpha1` PodGroup per gang
//!   scheduled RayCluster; [`yunikorn`] and [`kai`] create nothing.
//! - Some refuse a RayJob outright ([`BatchScheduler::refuses_job`]), which leaves it in `Initializing`.
//!
//! KubeRay's `kubernetes-was` scheduler (the `KubernetesWAS` feature gate) is not implemented.

pub mod kai;
pub mod scheduler_plugins;
pub mod volcano;
pub mod yunikorn;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec, ResourceRequirements},
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use kuberay_crds::{JobSubmissionMode, RayCluster, RayClusterSpec, RayJob};
use serde_json::{Map, Value};

/// The configuration key naming the batch scheduler (absent or empty: none).
pub const BATCH_SCHEDULER: &str = "batchScheduler";

/// A configuration the batch-scheduler integration cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A name KubeRay does not know (KubeRay's own message).
    #[error("the scheduler is not supported, name={0}")]
    Unsupported(String),
    /// Not a string at all.
    #[error("{BATCH_SCHEDULER} must be the name of a batch scheduler, not {0}")]
    NotAName(String),
}

/// A batch scheduler KubeRay v1.7 integrates with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchScheduler {
    /// `volcano`.
    Volcano,
    /// `yunikorn` (Apache YuniKorn).
    YuniKorn,
    /// `kai-scheduler` (NVIDIA KAI Scheduler).
    KaiScheduler,
    /// `scheduler-plugins` (kubernetes-sigs/scheduler-plugins' coscheduling).
    SchedulerPlugins,
}

impl BatchScheduler {
    /// Every scheduler, in KubeRay's order.
    pub const ALL: [Self; 4] = [
        Self::Volcano,
        Self::YuniKorn,
        Self::KaiScheduler,
        Self::SchedulerPlugins,
    ];

    /// The scheduler of a `--batch-scheduler` value: `None` for the empty string.
    pub fn parse(name: &str) -> Result<Option<Self>, ConfigError> {
        if name.is_empty() {
            return Ok(None);
        }
        Self::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .map(Some)
            .ok_or_else(|| ConfigError::Unsupported(name.to_string()))
    }

    /// The scheduler a plugin configuration names (`batchScheduler`), if any.
    pub fn from_config(config: &Map<String, Value>) -> Result<Option<Self>, ConfigError> {
        match config.get(BATCH_SCHEDULER) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(name)) => Self::parse(name),
            Some(other) => Err(ConfigError::NotAName(other.to_string())),
        }
    }

    /// The name `--batch-scheduler` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Volcano => "volcano",
            Self::YuniKorn => "yunikorn",
            Self::KaiScheduler => "kai-scheduler",
            Self::SchedulerPlugins => "scheduler-plugins",
        }
    }

    /// The `schedulerName` KubeRay gives the Pods (scheduler-plugins' default instance name differs from
    /// the flag's value).
    pub fn scheduler_name(self) -> &'static str {
        match self {
            Self::SchedulerPlugins => scheduler_plugins::SCHEDULER_NAME,
            other => other.name(),
        }
    }

    /// What KubeRay adds to a child of `parent` (`AddMetadataToChildResource`): `group` is the Pod's group
    /// (`headgroup`, a worker group's name, `submittergroup`), empty for a RayCluster.
    pub fn decoration(self, parent: Parent<'_>, group: &str) -> Decoration {
        let mut decoration = match self {
            Self::Volcano => volcano::decoration(parent, group),
            Self::YuniKorn => yunikorn::decoration(parent, group),
            Self::KaiScheduler => kai::decoration(parent),
            Self::SchedulerPlugins => scheduler_plugins::decoration(parent),
        };
        decoration.scheduler_name = Some(self.scheduler_name());
        decoration
    }

    /// KubeRay's refusal of a RayJob in `Initializing` (its `DoBatchSchedulingOnSubmission` error), which it
    /// returns from every reconcile until the RayJob changes.
    pub fn refuses_job(self, job: &RayJob) -> Option<String> {
        match self {
            Self::Volcano => volcano::refuses_job(job),
            Self::KaiScheduler => kai::refuses_job(job),
            Self::SchedulerPlugins => Some(scheduler_plugins::JOB_REFUSAL.to_string()),
            Self::YuniKorn => None,
        }
    }
}

/// The object whose child is decorated, and whose labels and annotations say how.
#[derive(Debug, Clone, Copy)]
pub enum Parent<'a> {
    /// A RayCluster (its head and worker Pods).
    Cluster(&'a RayCluster),
    /// A RayJob (its RayCluster and its submitter Pod template).
    Job(&'a RayJob),
}

impl<'a> Parent<'a> {
    fn meta(self) -> &'a ObjectMeta {
        match self {
            Self::Cluster(cluster) => &cluster.metadata,
            Self::Job(job) => &job.metadata,
        }
    }

    /// The parent's name.
    pub fn name(self) -> &'a str {
        self.meta().name.as_deref().unwrap_or_default()
    }

    /// The parent's namespace.
    pub fn namespace(self) -> &'a str {
        self.meta().namespace.as_deref().unwrap_or_default()
    }

    /// A label of the parent, if it has it (empty included).
    pub fn label(self, key: &str) -> Option<&'a str> {
        self.meta().labels.as_ref()?.get(key).map(String::as_str)
    }

    /// A label of the parent with a value that is not empty.
    pub fn nonempty_label(self, key: &str) -> Option<&'a str> {
        self.label(key).filter(|v| !v.is_empty())
    }

    /// An annotation of the parent, if it has it.
    pub fn annotation(self, key: &str) -> Option<&'a str> {
        self.meta().annotations.as_ref()?.get(key).map(String::as_str)
    }

    /// The parent's annotations.
    pub fn annotations(self) -> BTreeMap<String, String> {
        self.meta().annotations.clone().unwrap_or_default()
    }
}

/// What a scheduler adds to a child: labels and annotations (set over the child's own) and the Pod's
/// `schedulerName` (ignored for a child that is not a Pod or Pod template).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoration {
    /// Labels to set.
    pub labels: BTreeMap<String, String>,
    /// Annotations to set.
    pub annotations: BTreeMap<String, String>,
    /// The Pod's `schedulerName`.
    pub scheduler_name: Option<&'static str>,
}

impl Decoration {
    /// Sets the labels and annotations on `meta`.
    pub fn apply_to_meta(&self, meta: &mut ObjectMeta) {
        if !self.labels.is_empty() {
            let labels = meta.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(self.labels.clone());
        }
        if !self.annotations.is_empty() {
            let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
            annotations.extend(self.annotations.clone());
        }
    }

    fn apply_to_spec(&self, spec: &mut Option<PodSpec>) {
        if let Some(name) = self.scheduler_name {
            spec.get_or_insert_with(PodSpec::default).scheduler_name = Some(name.to_string());
        }
    }

    /// Decorates a Pod.
    pub fn apply_to_pod(&self, pod: &mut Pod) {
        self.apply_to_meta(&mut pod.metadata);
        self.apply_to_spec(&mut pod.spec);
    }

    /// Decorates a Pod template.
    pub fn apply_to_template(&self, template: &mut PodTemplateSpec) {
        self.apply_to_meta(template.metadata.get_or_insert_with(ObjectMeta::default));
        self.apply_to_spec(&mut template.spec);
    }
}

/// The resources of KubeRay's default submitter container: limits of 1 CPU and 1Gi, requests of 500m and
/// 200Mi.
pub fn default_submitter_resources() -> ResourceRequirements {
    let quantities = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(memory.into())),
        ])
    };
    ResourceRequirements {
        limits: Some(quantities("1", "1Gi")),
        requests: Some(quantities("500m", "200Mi")),
        ..ResourceRequirements::default()
    }
}

/// The submitter Pod's spec as KubeRay's schedulers size it (`GetSubmitterTemplate`): the RayJob's
/// `submitterPodTemplate`, or [`default_submitter_pod_spec`].
pub fn submitter_pod_spec(job: &RayJob) -> PodSpec {
    match &job.spec.submitter_pod_template {
        Some(template) => template.spec.clone().unwrap_or_default(),
        None => default_submitter_pod_spec(),
    }
}

/// KubeRay's default submitter Pod as far as scheduling goes: one container with
/// [`default_submitter_resources`], never restarted.
pub fn default_submitter_pod_spec() -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "ray-job-submitter".into(),
            resources: Some(default_submitter_resources()),
            ..Container::default()
        }],
        restart_policy: Some("Never".into()),
        ..PodSpec::default()
    }
}

/// The RayJob's submission mode (`K8sJobMode` by default).
pub fn submission_mode(job: &RayJob) -> JobSubmissionMode {
    job.spec
        .submission_mode
        .clone()
        .unwrap_or(JobSubmissionMode::K8sJobMode)
}

/// The RayJob's `rayClusterSpec`, if it brings one (not with `clusterSelector`).
pub fn job_cluster_spec(job: &RayJob) -> Option<&RayClusterSpec> {
    job.spec.ray_cluster_spec.as_ref()
}
