//! KubeRay's own metric families, with KubeRay's names, labels and meaning, so that its Grafana dashboards
//! and alerts keep working after a switch:
//!
//! | family | labels | value |
//! |---|---|---|
//! | `kuberay_cluster_info` | name, namespace, uid, owner_kind | 1 per RayCluster (`owner_kind`: the `ray.io/originated-from-crd` label, else `None`) |
//! | `kuberay_cluster_condition_provisioned` | name, namespace, uid, condition | 1, `condition` whether `RayClusterProvisioned` is `True` |
//! | `kuberay_cluster_provisioned_duration_seconds` | name, namespace, uid | seconds from creation to the moment `RayClusterProvisioned` became `True` |
//! | `kuberay_job_info` | name, namespace, uid | 1 per RayJob |
//! | `kuberay_job_deployment_status` | name, namespace, uid, deployment_status | 1, with `status.jobDeploymentStatus` |
//! | `kuberay_job_execution_duration_seconds` | name, namespace, uid, job_deployment_status, retry_count | seconds from `status.startTime` to the moment the RayJob became `Complete`, `Failed` or `Retrying` (`retry_count`: `status.failed` before it) |
//! | `kuberay_service_info` | name, namespace, uid | 1 per RayService |
//! | `kuberay_service_condition_ready` | name, namespace, uid, condition | 1, `condition` whether `Ready` is `True` |
//! | `kuberay_service_condition_upgrade_in_progress` | name, namespace, uid, condition | 1, `condition` whether `UpgradeInProgress` is `True` |
//!
//! The host derives them from its watch caches, never from plugins (a plugin cannot grow `/metrics`): the
//! info and condition families are listed from the caches at each scrape, as KubeRay lists its informer
//! cache; the two durations are set when this operator sees the transition in its watch (a transition that
//! happened before it started is not reported, as with KubeRay after a restart) and dropped with the object.
//! They are exported whether or not `--enable-metrics` is given (KubeRay needs the flag), and only by the
//! replica running the controllers (the leader).

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    sync::{Arc, PoisonError, RwLock, atomic::AtomicU64},
    time::SystemTime,
};

use k8s_openapi::jiff::Timestamp;
use kuberay_plugin_sdk::Kind;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric},
    metrics::{
        MetricType,
        family::Family,
        gauge::{ConstGauge, Gauge},
    },
    registry::Registry,
};
use serde::Deserialize;

/// The `ray.io/v1` kinds KubeRay's metrics describe.
pub(crate) fn ray_kind(kind: &str) -> Kind {
    Kind::new("ray.io", "v1", kind)
}

/// One cached object as the metrics need it: identity, labels, creation and `status` (its JSON text).
pub(crate) struct ObjectView<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// Seconds since the Unix epoch.
    pub created: Option<f64>,
    pub status: Option<&'a str>,
}

/// Where the listed families read the objects from at a scrape: the running controllers' caches.
pub(crate) trait CustomResources: Send + Sync {
    /// Calls `each` with every cached object of `kind`.
    fn each(&self, kind: &Kind, each: &mut dyn FnMut(ObjectView<'_>));
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ObjectLabels {
    name: String,
    namespace: String,
    uid: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobDurationLabels {
    name: String,
    namespace: String,
    uid: String,
    job_deployment_status: String,
    retry_count: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Status {
    #[serde(default)]
    conditions: Vec<Condition>,
    #[serde(default)]
    job_deployment_status: String,
    start_time: Option<String>,
    failed: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    last_transition_time: Option<String>,
}

impl Status {
    /// The status of an object (its JSON text); empty when missing or not understood.
    fn parse(text: Option<&str>) -> Self {
        text.and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    }

    fn is_true(&self, condition: &str) -> bool {
        self.conditions
            .iter()
            .any(|c| c.type_ == condition && c.status == "True")
    }
}

const PROVISIONED: &str = "RayClusterProvisioned";

/// What this operator last saw of one object, to tell a transition, and the durations it set for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Seen {
    uid: String,
    provisioned: bool,
    job_status: String,
    failed: i64,
    set: Vec<Duration>,
}

/// A duration gauge set for an object, dropped with it.
#[derive(Debug, Clone, PartialEq)]
enum Duration {
    Provisioned(ObjectLabels),
    Execution(JobDurationLabels),
}

impl Seen {
    /// What `object` says now (no duration set for it yet).
    pub(crate) fn of(object: &ObjectView<'_>) -> Self {
        let status = Status::parse(object.status);
        Self {
            uid: object.uid.to_string(),
            provisioned: status.is_true(PROVISIONED),
            job_status: status.job_deployment_status,
            failed: status.failed.unwrap_or(0),
            set: Vec::new(),
        }
    }
}

fn is_terminal(job_status: &str) -> bool {
    matches!(job_status, "Complete" | "Failed")
}

/// An RFC 3339 time as seconds since the Unix epoch.
fn seconds(text: &str) -> Option<f64> {
    text.parse::<Timestamp>()
        .ok()
        .map(|t| t.as_millisecond() as f64 / 1000.0)
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

type Source = Arc<RwLock<Option<Arc<dyn CustomResources>>>>;

/// KubeRay's families: the two duration gauges, set on transitions, and the collector of the others.
#[derive(Clone, Default)]
pub(crate) struct KubeRayMetrics {
    source: Source,
    provisioned: Family<ObjectLabels, Gauge<f64, AtomicU64>>,
    execution: Family<JobDurationLabels, Gauge<f64, AtomicU64>>,
}

impl KubeRayMetrics {
    /// Registers every family into `registry` (which must carry no prefix: the names are KubeRay's).
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "kuberay_cluster_provisioned_duration_seconds",
            "The time, in seconds, from a RayCluster's creation to its RayClusterProvisioned condition becoming true",
            self.provisioned.clone(),
        );
        registry.register(
            "kuberay_job_execution_duration_seconds",
            "The time, in seconds, from a RayJob's start to its JobDeploymentStatus becoming Complete, Failed or Retrying",
            self.execution.clone(),
        );
        registry.register_collector(Box::new(Listed {
            source: self.source.clone(),
        }));
    }

    /// The objects the listed families describe from now on (`None`: none, when the controllers stop).
    pub(crate) fn list_from(&self, source: Option<Arc<dyn CustomResources>>) {
        *self.source.write().unwrap_or_else(PoisonError::into_inner) = source;
    }

    /// Records what changed between `before` (what was seen of the object, `None` if it is new) and `now`
    /// (the object as it is) of `kind`; returns what to remember of it.
    pub(crate) fn changed(&self, kind: &str, before: Option<Seen>, now: &ObjectView<'_>) -> Seen {
        let mut seen = Seen::of(now);
        let before = match before {
            Some(before) if before.uid == seen.uid => before,
            // Recreated under the same name: the old object's durations go with it.
            Some(old) => {
                self.forget(old);
                Seen::default()
            }
            None => Seen::default(),
        };
        seen.set = before.set;
        let labels = ObjectLabels {
            name: now.name.to_string(),
            namespace: now.namespace.to_string(),
            uid: now.uid.to_string(),
        };
        match kind {
            "RayCluster" if !before.provisioned && seen.provisioned => {
                let status = Status::parse(now.status);
                let at = status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == PROVISIONED)
                    .and_then(|c| c.last_transition_time.as_deref())
                    .and_then(seconds)
                    .unwrap_or_else(self::now);
                let since = now.created.unwrap_or(at);
                self.provisioned.get_or_create(&labels).set((at - since).max(0.0));
                seen.set.push(Duration::Provisioned(labels));
            }
            "RayJob"
                if !is_terminal(&before.job_status)
                    && (is_terminal(&seen.job_status) || seen.job_status == "Retrying") =>
            {
                let status = Status::parse(now.status);
                let start = status.start_time.as_deref().and_then(seconds).or(now.created);
                let duration = start.map_or(0.0, |start| (self::now() - start).max(0.0));
                let labels = JobDurationLabels {
                    name: labels.name,
                    namespace: labels.namespace,
                    uid: labels.uid,
                    job_deployment_status: seen.job_status.clone(),
                    retry_count: before.failed.to_string(),
                };
                self.execution.get_or_create(&labels).set(duration);
                seen.set.push(Duration::Execution(labels));
            }
            _ => {}
        }
        seen
    }

    /// Drops the durations set for an object that is gone (as KubeRay does on its deletion).
    pub(crate) fn forget(&self, seen: Seen) {
        for set in seen.set {
            match set {
                Duration::Provisioned(labels) => self.provisioned.remove(&labels),
                Duration::Execution(labels) => self.execution.remove(&labels),
            };
        }
    }
}

/// What one watch of RayClusters or RayJobs has seen, by namespace and name. The durations set for those
/// objects go with it: when the watch ends (the replica steps down and stops its controllers, or its cache
/// stops), this replica stops exporting them, so a dashboard summing over replicas counts each once.
pub(crate) struct Followed {
    metrics: KubeRayMetrics,
    kind: String,
    seen: HashMap<(String, String), Seen>,
}

impl Followed {
    /// An empty record of `kind`'s objects, setting durations into `metrics`.
    pub(crate) fn new(metrics: KubeRayMetrics, kind: String) -> Self {
        Self {
            metrics,
            kind,
            seen: HashMap::new(),
        }
    }

    /// Remembers an object cached before the watch started, without reporting a transition.
    pub(crate) fn remember(&mut self, object: &ObjectView<'_>) {
        self.seen.insert(key(object), Seen::of(object));
    }

    /// Records a change of `object` (setting a duration on a transition).
    pub(crate) fn changed(&mut self, object: &ObjectView<'_>) {
        let key = key(object);
        let before = self.seen.remove(&key);
        let now = self.metrics.changed(&self.kind, before, object);
        self.seen.insert(key, now);
    }

    /// Forgets the object `namespace`/`name`, which is gone, with its durations.
    pub(crate) fn gone(&mut self, namespace: &str, name: &str) {
        if let Some(gone) = self.seen.remove(&(namespace.to_string(), name.to_string())) {
            self.metrics.forget(gone);
        }
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        for (_, seen) in self.seen.drain() {
            self.metrics.forget(seen);
        }
    }
}

fn key(object: &ObjectView<'_>) -> (String, String) {
    (object.namespace.to_string(), object.name.to_string())
}

/// The families listed from the caches at each scrape.
struct Listed {
    source: Source,
}

impl fmt::Debug for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KubeRay's listed metric families")
    }
}

/// One listed family: its name, help, and the labels of each object's row (each worth 1).
struct Rows {
    name: &'static str,
    help: &'static str,
    rows: Vec<Vec<(&'static str, String)>>,
}

impl Rows {
    fn new(name: &'static str, help: &'static str) -> Self {
        Self {
            name,
            help,
            rows: Vec::new(),
        }
    }

    /// A row of `object`, with `extra` labels after name, namespace and uid.
    fn push(&mut self, object: &ObjectView<'_>, extra: Option<(&'static str, String)>) {
        let mut labels = vec![
            ("name", object.name.to_string()),
            ("namespace", object.namespace.to_string()),
            ("uid", object.uid.to_string()),
        ];
        labels.extend(extra);
        self.rows.push(labels);
    }

    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> fmt::Result {
        let mut family = encoder.encode_descriptor(self.name, self.help, None, MetricType::Gauge)?;
        for labels in &self.rows {
            ConstGauge::new(1i64).encode(family.encode_family(labels)?)?;
        }
        Ok(())
    }
}

impl Listed {
    fn clusters(source: &dyn CustomResources) -> [Rows; 2] {
        let mut info = Rows::new(
            "kuberay_cluster_info",
            "Metadata information about RayCluster custom resources",
        );
        let mut provisioned = Rows::new(
            "kuberay_cluster_condition_provisioned",
            "Indicates whether the RayCluster is provisioned",
        );
        source.each(&ray_kind("RayCluster"), &mut |object| {
            let owner = object
                .labels
                .and_then(|l| l.get("ray.io/originated-from-crd"))
                .map_or("None", String::as_str);
            info.push(&object, Some(("owner_kind", owner.to_string())));
            let condition = Status::parse(object.status).is_true(PROVISIONED).to_string();
            provisioned.push(&object, Some(("condition", condition)));
        });
        [info, provisioned]
    }

    fn jobs(source: &dyn CustomResources) -> [Rows; 2] {
        let mut info = Rows::new(
            "kuberay_job_info",
            "Metadata information about RayJob custom resources",
        );
        let mut deployment = Rows::new(
            "kuberay_job_deployment_status",
            "The RayJob's current deployment status",
        );
        source.each(&ray_kind("RayJob"), &mut |object| {
            info.push(&object, None);
            let status = Status::parse(object.status).job_deployment_status;
            deployment.push(&object, Some(("deployment_status", status)));
        });
        [info, deployment]
    }

    fn services(source: &dyn CustomResources) -> [Rows; 3] {
        let mut info = Rows::new(
            "kuberay_service_info",
            "Metadata information about RayService custom resources",
        );
        let mut ready = Rows::new(
            "kuberay_service_condition_ready",
            "Describes whether the RayService is ready: it serves requests through the cluster's Serve endpoints",
        );
        let mut upgrading = Rows::new(
            "kuberay_service_condition_upgrade_in_progress",
            "Describes whether the RayService is performing a zero-downtime upgrade",
        );
        source.each(&ray_kind("RayService"), &mut |object| {
            let status = Status::parse(object.status);
            info.push(&object, None);
            ready.push(&object, Some(("condition", status.is_true("Ready").to_string())));
            let upgrade = status.is_true("UpgradeInProgress").to_string();
            upgrading.push(&object, Some(("condition", upgrade)));
        });
        [info, ready, upgrading]
    }
}

impl Collector for Listed {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let source = self.source.read().unwrap_or_else(PoisonError::into_inner).clone();
        let Some(source) = source else { return Ok(()) };
        let source = source.as_ref();
        for rows in Self::clusters(source)
            .into_iter()
            .chain(Self::jobs(source))
            .chain(Self::services(source))
        {
            rows.encode(&mut encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
