//! Watch caches: one reflector per kind and watched namespace (or one for all namespaces), shared by every
//! plugin that reads or owns that kind. Each also fans its events out to the controllers that want them.
//! Objects are kept in their compact form (`compact`: typed metadata, the rest as JSON text, no
//! `managedFields`). Each cache has a label index (`index`), so that a list by selector does not walk the
//! whole cache.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures::StreamExt;
use kube::{
    Api, Client,
    api::ApiResource,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event, watcher},
    },
};
use kuberay_plugin_sdk::{Kind, selector::Selector};
use tokio::{sync::mpsc, task::JoinHandle};

use super::{compact::CachedObject, discovery::Resolved, index::LabelIndex, overlay::Overlay};
use kuberay_admission::Key;

/// Which namespaces the operator watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchScope {
    All,
    Namespaces(Vec<String>),
}

impl WatchScope {
    /// The cache scopes: `None` for all namespaces, or each namespace.
    pub(crate) fn scopes(&self) -> Vec<Option<String>> {
        match self {
            Self::All => vec![None],
            Self::Namespaces(list) => list.iter().cloned().map(Some).collect(),
        }
    }

    /// The cache scope that holds objects of `namespace`.
    fn scope_of(&self, namespace: &str) -> Option<String> {
        match self {
            Self::All => None,
            Self::Namespaces(_) => Some(namespace.to_string()),
        }
    }
}

type Subscribers = Arc<Mutex<Vec<mpsc::UnboundedSender<Arc<CachedObject>>>>>;

struct Entry {
    store: Store<CachedObject>,
    index: Arc<LabelIndex>,
    resource: ApiResource,
    subscribers: Subscribers,
    task: JoinHandle<()>,
}

pub(crate) struct Caches {
    client: Client,
    scope: WatchScope,
    /// Told of every object the watches deliver, so that it forgets the writes they have caught up with.
    overlay: Arc<Overlay>,
    entries: Mutex<HashMap<(Kind, Option<String>), Entry>>,
}

impl Caches {
    pub(crate) fn new(client: Client, scope: WatchScope, overlay: Arc<Overlay>) -> Self {
        Self {
            client,
            scope,
            overlay,
            entries: Mutex::default(),
        }
    }

    pub(crate) fn scope(&self) -> &WatchScope {
        &self.scope
    }

    /// Starts watching `kind` in every scope, unless already watched.
    pub(crate) fn ensure(&self, kind: &Kind, resolved: &Resolved) {
        let mut entries = self.lock();
        for scope in self.scope.scopes() {
            let key = (kind.clone(), scope.clone());
            if entries.contains_key(&key) {
                continue;
            }
            let api: Api<CachedObject> = match (&scope, resolved.namespaced) {
                (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, &resolved.resource),
                _ => Api::all_with(self.client.clone(), &resolved.resource),
            };
            let subscribers: Subscribers = Arc::default();
            let index = Arc::new(LabelIndex::default());
            let label = format!(
                "{kind}{}",
                scope.as_ref().map(|s| format!(" in {s}")).unwrap_or_default()
            );
            let writer = reflector::store::Writer::new(resolved.resource.clone());
            let store = writer.as_reader();
            let task = tokio::spawn(follow(
                api,
                writer,
                Watched {
                    kind: kind.clone(),
                    resource: resolved.resource.clone(),
                    index: index.clone(),
                    overlay: self.overlay.clone(),
                    subscribers: subscribers.clone(),
                    label,
                },
            ));
            entries.insert(
                key,
                Entry {
                    store,
                    index,
                    resource: resolved.resource.clone(),
                    subscribers,
                    task,
                },
            );
        }
    }

    /// The object of `kind` named `name` in `namespace` as the cache has it; `None` if the kind is not
    /// watched, `Some(None)` if the cache has no such object.
    pub(crate) fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<Option<Arc<CachedObject>>> {
        let (store, resource) = {
            let entries = self.lock();
            let entry = entries.get(&(kind.clone(), self.scope.scope_of(namespace)))?;
            (entry.store.clone(), entry.resource.clone())
        };
        Some(store.get(&ObjectRef::new_with(name, resource).within(namespace)))
    }

    /// The cached objects of `kind` in `namespace` that match `selector`, in name order; `None` if the kind
    /// is not watched. Looked up in the cache's label index: the cost is that of the candidates, not of the
    /// whole cache.
    pub(crate) fn select(
        &self,
        kind: &Kind,
        namespace: &str,
        selector: &Selector,
    ) -> Option<Vec<Arc<CachedObject>>> {
        let (store, index, resource) = {
            let entries = self.lock();
            let entry = entries.get(&(kind.clone(), self.scope.scope_of(namespace)))?;
            (entry.store.clone(), entry.index.clone(), entry.resource.clone())
        };
        let selected = index.select(namespace, selector, |name| {
            store.get(&ObjectRef::new_with(name, resource.clone()).within(namespace))
        });
        Some(selected)
    }

    /// The store of one scope (`None` = all namespaces).
    pub(crate) fn scope_store(&self, kind: &Kind, scope: &Option<String>) -> Option<Store<CachedObject>> {
        self.lock()
            .get(&(kind.clone(), scope.clone()))
            .map(|e| e.store.clone())
    }

    /// Calls `each` with every cached object of `kind`, in every scope.
    pub(crate) fn for_each(&self, kind: &Kind, each: &mut dyn FnMut(&CachedObject)) {
        let stores: Vec<Store<CachedObject>> = self
            .lock()
            .iter()
            .filter(|((watched, _), _)| watched == kind)
            .map(|(_, entry)| entry.store.clone())
            .collect();
        for store in stores {
            for object in store.state() {
                each(&object);
            }
        }
    }

    /// A stream of every object of `kind` in `scope`: first those already cached, then every one that
    /// changes or goes away. (An object may come twice around the moment of subscribing; consumers are
    /// idempotent.)
    pub(crate) fn subscribe(
        &self,
        kind: &Kind,
        scope: &Option<String>,
    ) -> mpsc::UnboundedReceiver<Arc<CachedObject>> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(entry) = self.lock().get(&(kind.clone(), scope.clone())) {
            entry
                .subscribers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(tx.clone());
            for object in entry.store.state() {
                let _ = tx.send(object);
            }
        }
        rx
    }

    /// Waits until every cache has listed its objects once.
    pub(crate) async fn wait_ready(&self) {
        let stores: Vec<Store<CachedObject>> = self.lock().values().map(|e| e.store.clone()).collect();
        for store in stores {
            wait_synced(&store).await;
        }
    }

    pub(crate) fn shutdown(&self) {
        for entry in self.lock().values() {
            entry.task.abort();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Kind, Option<String>), Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether a store has listed its objects once.
pub(crate) fn is_synced(store: &Store<CachedObject>) -> bool {
    use futures::FutureExt;
    matches!(store.wait_until_ready().now_or_never(), Some(Ok(())))
}

/// Waits until a store has listed its objects once. This polls rather than awaiting
/// `Store::wait_until_ready`, which wakes only the most recent of several waiters, and several controllers
/// (and the readiness probe) wait on the same stores.
pub(crate) async fn wait_synced(store: &Store<CachedObject>) {
    while !is_synced(store) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// What one watch feeds besides its store.
struct Watched {
    kind: Kind,
    resource: ApiResource,
    index: Arc<LabelIndex>,
    overlay: Arc<Overlay>,
    subscribers: Subscribers,
    label: String,
}

/// Follows one watch: applies each event to the store and the label index together (a list never sees
/// one without the other), tells the overlay, then hands the object to the controllers. A changed object
/// is handed on as the store holds it, not copied.
async fn follow(api: Api<CachedObject>, mut writer: reflector::store::Writer<CachedObject>, w: Watched) {
    let store = writer.as_reader();
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(cache = %w.label, error = %e, "watch failed; retrying");
                continue;
            }
        };
        w.index.apply(&event, || writer.apply_watcher_event(&event));
        let (object, deleted) = match event {
            Event::Apply(o) => (
                store
                    .get(&ObjectRef::from_obj_with(&o, w.resource.clone()))
                    .unwrap_or_else(|| Arc::new(o)),
                false,
            ),
            Event::InitApply(o) => (Arc::new(o), false),
            Event::Delete(o) => (Arc::new(o), true),
            Event::Init | Event::InitDone => continue,
        };
        let key = Key {
            kind: w.kind.clone(),
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default(),
        };
        w.overlay.observe(&key, &object.metadata, deleted);
        broadcast(&w.subscribers, object);
    }
}

fn broadcast(subscribers: &Subscribers, object: Arc<CachedObject>) {
    subscribers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .retain(|tx| tx.send(object.clone()).is_ok());
}
