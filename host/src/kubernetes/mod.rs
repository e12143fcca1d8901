//! The Kubernetes bridge, shared by every reconcile: discovery, the watch caches (their objects in a compact
//! form, `compact`), plugins' recent writes merged into what they read (`overlay`), the last applied
//! intents that let a write that would change nothing be skipped (`kuberay_admission::unchanged`'s record),
//! namespaces' Pod Security levels (`namespaces`), and the event recorders. It knows nothing of plugins or
//! admission: they build on it.

mod cache;
pub(crate) mod compact;
mod discovery;
pub(crate) mod errors;
mod events;
mod index;
#[cfg(test)]
pub(crate) mod mock_api;
mod namespaces;
pub(crate) mod overlay;
pub(crate) mod rate_limit;

use std::sync::Arc;

pub(crate) use cache::{Caches, WatchScope, wait_synced};
pub(crate) use discovery::{Discovery, Resolved};
use kube::{Api, Client, api::ListParams};
use kuberay_plugin_sdk::{HostError, HostResult, Kind, selector::Selector};
use kuberay_rayhead::ObjectLookup;
use serde_json::Value;

use self::{compact::CachedObject, events::EventRecorders, namespaces::NamespaceLevels, overlay::Overlay};
use crate::{
    leadership::Fence,
    metrics::{CustomResources, Metrics, ObjectView},
};
use kuberay_admission::{Key, unchanged::LastApplied};

/// Field manager of the host's own writes (the failure condition on an object's status).
pub(crate) const HOST_FIELD_MANAGER: &str = "kuberay-wasm";

/// KubeRay's listed metric families read the controllers' caches.
impl CustomResources for KubeBridge {
    fn each(&self, kind: &Kind, each: &mut dyn FnMut(ObjectView<'_>)) {
        self.caches.for_each(kind, &mut |object| each(object.view()));
    }
}

/// Shared by every reconcile.
pub(crate) struct KubeBridge {
    pub client: Client,
    pub discovery: Discovery,
    pub caches: Caches,
    /// Plugins' recent writes, merged into what they read.
    pub(crate) overlay: Arc<Overlay>,
    /// What each plugin last applied, to skip applies that would change nothing.
    pub(crate) applied: LastApplied,
    pub(crate) events: Arc<EventRecorders>,
    /// The Pod Security level of namespaces plugins write in.
    pub(crate) namespaces: NamespaceLevels,
    metrics: Metrics,
    /// Every write checks it first: with leader election, only a current leader writes.
    fence: Fence,
}

impl KubeBridge {
    pub(crate) fn new(
        client: Client,
        scope: WatchScope,
        reporter_instance: Option<String>,
        metrics: Metrics,
        fence: Fence,
    ) -> Arc<Self> {
        let overlay = Arc::new(Overlay::default());
        Arc::new(Self {
            discovery: Discovery::new(client.clone()),
            caches: Caches::new(client.clone(), scope, overlay.clone()),
            overlay,
            applied: LastApplied::default(),
            events: Arc::new(EventRecorders::new(
                client.clone(),
                reporter_instance,
                fence.clone(),
                metrics.clone(),
            )),
            namespaces: NamespaceLevels::default(),
            client,
            metrics,
            fence,
        })
    }

    /// `Ok` while this replica may write (see [`crate::leadership::Fence`]); every write calls it right
    /// before its request.
    pub(crate) fn fenced(&self) -> HostResult<()> {
        self.fence
            .check()
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }

    /// Starts watching a kind (idempotent).
    pub(crate) async fn watch(&self, kind: &Kind) -> HostResult<Resolved> {
        let resolved = self.discovery.resolve(kind).await?;
        self.caches.ensure(kind, &resolved);
        Ok(resolved)
    }

    /// An object as plugins see it (cache plus recent writes), as JSON.
    pub(crate) async fn read(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        let key = Key {
            kind: kind.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        let cached = match self.caches.get(kind, namespace, name) {
            Some(cached) => cached.map(|o| to_json(&*o)).transpose()?,
            None => {
                let resolved = self.discovery.resolve(kind).await?;
                let api: Api<CachedObject> =
                    Api::namespaced_with(self.client.clone(), namespace, &resolved.resource);
                api.get_opt(name)
                    .await
                    .map_err(errors::from_kube)?
                    .map(|o| to_json(&o))
                    .transpose()?
            }
        };
        Ok(self.overlay.merge(&key, cached))
    }

    /// Objects of `kind` in `namespace` matching a label selector, as plugins see them (cache plus recent
    /// writes; a direct list for kinds that are not cached).
    pub(crate) async fn list(
        &self,
        kind: &Kind,
        namespace: &str,
        label_selector: &str,
    ) -> HostResult<Vec<Value>> {
        let selector = Selector::parse(label_selector).map_err(|e| HostError::Invalid(e.to_string()))?;
        let cached = match self.caches.select(kind, namespace, &selector) {
            Some(selected) => selected
                .iter()
                .map(|o| to_json(&**o))
                .collect::<HostResult<Vec<Value>>>()?,
            None => {
                let resolved = self.discovery.resolve(kind).await?;
                let api: Api<CachedObject> =
                    Api::namespaced_with(self.client.clone(), namespace, &resolved.resource);
                let list = api
                    .list(&ListParams::default().labels(label_selector))
                    .await
                    .map_err(errors::from_kube)?;
                list.items
                    .iter()
                    .map(to_json)
                    .collect::<HostResult<Vec<Value>>>()?
            }
        };
        let in_cache = |name: &str| self.caches.get(kind, namespace, name).flatten();
        Ok(self
            .overlay
            .merge_list(kind, namespace, cached, &selector, in_cache))
    }

    /// The event recorder of `plugin`'s reconciles.
    pub(crate) fn recorder(&self, plugin: &str) -> kube::runtime::events::Recorder {
        self.events.recorder(plugin)
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}

/// Ray heads are reached with what plugins would read: the watch caches merged with recent writes (head
/// Service, head Pod), and direct reads with the operator's own credentials for kinds it does not watch
/// (EndpointSlices, usually the token Secret).
impl ObjectLookup for KubeBridge {
    async fn get(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        self.read(kind, namespace, name).await
    }

    async fn list(&self, kind: &Kind, namespace: &str, label_selector: &str) -> HostResult<Vec<Value>> {
        KubeBridge::list(self, kind, namespace, label_selector).await
    }
}

/// An object (cached, read or returned by a write) as the JSON plugins see.
pub(crate) fn to_json(object: &impl serde::Serialize) -> HostResult<Value> {
    serde_json::to_value(object).map_err(|e| HostError::Internal(format!("serializing an object: {e}")))
}
