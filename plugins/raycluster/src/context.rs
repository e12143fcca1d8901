//! What one reconcile carries around: the host, the cluster as read, and whether anything was written
//! (which decides between the short and the long requeue). Writes go through these helpers so that
//! none is forgotten in that bookkeeping.

use std::{
    cell::{Cell, RefCell},
    time::Duration,
};

use k8s_openapi::{Metadata, Resource, api::core::v1::Pod, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kuberay_crds::{RayCluster, constants::labels};
use kuberay_plugin_sdk::{Event, Host, HostError, Kind, LogLevel, TypedHost, selector::Selector};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use kuberay_rules::batch_scheduler::BatchScheduler;

use crate::cluster::Identity;

/// Why the reconcile pipeline stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The `ReplicaFailure` condition's reason, for failures to create or delete Pods.
    pub replica_failure: Option<&'static str>,
    pub message: String,
    /// The host or the API server failed (retried with backoff), as opposed to a deliberate pause such
    /// as "unhealthy Pods were deleted, create their replacements next time".
    pub host_error: bool,
    /// How soon a pause looks again when nothing else calls for it; `None`: the short requeue. For waits on
    /// something outside the operator whose change comes as a watch event anyway (cert-manager issuing).
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn pause(message: impl Into<String>) -> Self {
        Self {
            replica_failure: None,
            message: message.into(),
            host_error: false,
            retry_after: None,
        }
    }

    /// A pause that looks again after `after` unless an event comes first.
    pub fn wait(message: impl Into<String>, after: Duration) -> Self {
        Self {
            retry_after: Some(after),
            ..Self::pause(message)
        }
    }

    /// A failure retried with backoff that is not a Pod's (`ReplicaFailure`).
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            host_error: true,
            ..Self::pause(message)
        }
    }

    pub fn replica(reason: &'static str, error: &HostError) -> Self {
        Self {
            replica_failure: Some(reason),
            message: format!("{reason}\n{}", error.message()),
            host_error: true,
            retry_after: None,
        }
    }
}

impl From<HostError> for Failure {
    fn from(error: HostError) -> Self {
        Self::error(error.to_string())
    }
}

pub struct Ctx<'h, H: Host> {
    pub host: &'h H,
    pub cluster: RayCluster,
    pub id: Identity,
    wrote: Cell<bool>,
    settling: Cell<bool>,
    /// Every Pod of the cluster as last read, until the next write: a reconcile looks at its Pods several
    /// times (head, each group, the status) and each read parses every Pod it returns.
    pods: RefCell<Option<Vec<Pod>>>,
}

impl<'h, H: Host> Ctx<'h, H> {
    pub fn new(host: &'h H, cluster: RayCluster) -> Self {
        let mut id = Identity::of(&cluster);
        if let Some(domain) = host
            .config_str(kuberay_rules::config::CLUSTER_DOMAIN)
            .filter(|d| !d.is_empty())
        {
            id.cluster_domain = domain;
        }
        let config = host.config();
        id.env = kuberay_rules::operator_env::OperatorEnv::from_config(&config);
        // An unknown scheduler never gets here: `config::check` refuses it when the plugin is loaded.
        id.batch_scheduler = BatchScheduler::from_config(&config).ok().flatten();
        id.gates = kuberay_rules::cluster_spec::Gates::from_config(&config);
        Self {
            host,
            cluster,
            id,
            wrote: Cell::new(false),
            settling: Cell::new(false),
            pods: RefCell::new(None),
        }
    }

    pub fn wrote(&self) -> bool {
        self.wrote.get()
    }

    pub fn mark_written(&self) {
        self.wrote.set(true);
        // What was read before a write may no longer be what the host serves.
        self.pods.take();
    }

    /// Something is still in motion (Pods terminating): look again soon even if nothing was written.
    pub fn settling(&self) -> bool {
        self.settling.get()
    }

    pub fn mark_settling(&self) {
        self.settling.set(true);
    }

    /// `Namespace/name` of the cluster, as KubeRay's event messages print it.
    pub fn key(&self) -> String {
        format!("{}/{}", self.id.namespace, self.id.name)
    }

    /// Records an event; a failure to record one is logged, never returned.
    pub fn event(&self, event: Event) {
        kuberay_rules::report::record(self.host, &event);
    }

    pub fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, message, &[]);
    }

    pub fn create<K: Resource + Serialize + DeserializeOwned>(&self, object: &K) -> Result<K, HostError> {
        let created = self.host.create_as(object)?;
        self.mark_written();
        Ok(created)
    }

    pub fn apply<K: Resource + Serialize + DeserializeOwned>(&self, object: &K) -> Result<K, HostError> {
        let applied = self.host.apply_as(object)?;
        self.mark_written();
        Ok(applied)
    }

    /// Deletes this incarnation of an object (by uid, so a successor with the same name is safe).
    pub fn delete<K: Resource + Metadata<Ty = ObjectMeta>>(&self, object: &K) -> Result<(), HostError> {
        self.host.delete_object(object)?;
        self.mark_written();
        Ok(())
    }

    /// The raw JSON of an object, for checks the typed view cannot make (unknown fields, ownership).
    pub fn get_raw<K: Resource>(&self, name: &str) -> Result<Option<Value>, HostError> {
        self.host.get(&Kind::of::<K>(), name)
    }

    pub fn get<K: Resource + DeserializeOwned>(&self, name: &str) -> Result<Option<K>, HostError> {
        self.host.get_as(name)
    }

    pub fn list<K: Resource + DeserializeOwned>(&self, selector: &str) -> Result<Vec<K>, HostError> {
        self.host.list_as(selector)
    }

    /// The cluster's Pods that `selector` selects. A selector of this cluster's Pods (one requiring
    /// `ray.io/cluster=<name>`) is answered from one read of all of them, kept until the next write; any
    /// other goes to the host.
    pub fn pods(&self, selector: &str) -> Result<Vec<Pod>, HostError> {
        let parsed = Selector::parse(selector).ok().filter(|s| {
            s.required_pairs()
                .any(|pair| pair == (labels::RAY_CLUSTER, self.id.name.as_str()))
        });
        let Some(parsed) = parsed else {
            return self.list(selector);
        };
        if self.pods.borrow().is_none() {
            let all = self.list::<Pod>(&kuberay_rules::labels::all_pods(&self.id.name))?;
            self.pods.replace(Some(all));
        }
        let pods = self.pods.borrow();
        let selected = pods.iter().flatten().filter(|pod| {
            let labels = pod.metadata.labels.as_ref();
            labels.is_some_and(|l| parsed.matches(l))
        });
        Ok(selected.cloned().collect())
    }

    /// Whether an object is controlled by this cluster (objects of the same name that are not are left
    /// alone, as KubeRay does).
    pub fn controls(&self, meta: &ObjectMeta) -> bool {
        meta.owner_references
            .iter()
            .flatten()
            .any(|r| r.uid == self.id.uid && r.controller == Some(true))
    }
}
