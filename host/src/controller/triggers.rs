//! What queues a reconcile. For the reconciled kind, only changes a reconcile should react to: spec
//! (generation), labels, annotations, finalizers and the start of deletion; not status, which the plugin
//! writes itself. For owned kinds, every change, deletions included.

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::Arc,
};

use futures::{Stream, StreamExt, stream};
use kube::{
    api::ObjectMeta,
    runtime::{reflector::Store, watcher},
};
use tokio::sync::mpsc::UnboundedReceiver;

use kuberay_plugin_sdk::Kind;

use crate::kubernetes::compact::CachedObject;

type Changes = Result<CachedObject, watcher::Error>;

fn receiver_stream(rx: UnboundedReceiver<Arc<CachedObject>>) -> impl Stream<Item = Arc<CachedObject>> + Send {
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|o| (o, rx)) })
}

/// What kube-runtime needs of a changed object to find the reconcile it queues: its name and namespace (for
/// the reconciled kind) and its owner references (for owned kinds). Passing this instead of a copy of the
/// whole object keeps a watch event's cost independent of the object's size.
fn trigger(object: &CachedObject) -> CachedObject {
    let meta = &object.metadata;
    CachedObject::from_metadata(ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        owner_references: meta.owner_references.clone(),
        ..ObjectMeta::default()
    })
}

/// The namespace and name of a changed object.
pub(crate) fn name_of(object: &CachedObject) -> (&str, &str) {
    let meta = &object.metadata;
    (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// The names of an object's owners of `kind` (whose reconciles its change queues).
pub(crate) fn owners_of<'a>(object: &'a CachedObject, kind: &'a Kind) -> impl Iterator<Item = &'a str> {
    let api_version = kind.api_version();
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(move |owner| owner.kind == kind.kind && owner.api_version == api_version)
        .map(|owner| owner.name.as_str())
}

pub(crate) fn all_changes(rx: UnboundedReceiver<Arc<CachedObject>>) -> impl Stream<Item = Changes> + Send {
    receiver_stream(rx).map(|o| Ok(trigger(&o)))
}

fn fingerprint(object: &CachedObject) -> u64 {
    let meta = &object.metadata;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}

/// Fingerprints of the objects seen; entries of objects that are gone from the cache are dropped whenever
/// the map has grown to twice the cache's size (and at least [`PRUNE_FLOOR`] entries).
struct Seen {
    prints: HashMap<String, u64>,
    store: Store<CachedObject>,
}

const PRUNE_FLOOR: usize = 1024;

impl Seen {
    /// Records `object`'s fingerprint; whether it changed.
    fn changed(&mut self, object: &CachedObject) -> bool {
        let uid = object.metadata.uid.clone().unwrap_or_default();
        let print = fingerprint(object);
        let changed = self.prints.insert(uid, print) != Some(print);
        if self.prints.len() > PRUNE_FLOOR.max(2 * self.store.len()) {
            self.prune();
        }
        changed
    }

    /// Drops the fingerprints of objects the cache no longer has (deleted ones).
    fn prune(&mut self) {
        let live: std::collections::HashSet<String> = self
            .store
            .state()
            .iter()
            .filter_map(|o| o.metadata.uid.clone())
            .collect();
        self.prints.retain(|uid, _| live.contains(uid));
    }
}

/// Changes of the reconciled kind (whose cache is `store`) that should queue a reconcile.
pub(crate) fn primary_changes(
    rx: UnboundedReceiver<Arc<CachedObject>>,
    store: Store<CachedObject>,
) -> impl Stream<Item = Changes> + Send {
    let mut seen = Seen {
        prints: HashMap::new(),
        store,
    };
    receiver_stream(rx).filter_map(move |o| {
        let changed = seen.changed(&o);
        futures::future::ready(changed.then(|| Ok(trigger(&o))))
    })
}
