//! What queues a reconcile. For the reconciled kind, only changes a reconcile should react to: spec
//! (generation), labels, annotations, finalizers and the start of deletion; not status, which the plugin
//! writes itself. For owned kinds, every change, deletions included.

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::Arc,
};

use futures::{Stream, StreamExt, stream};
use kube::{api::DynamicObject, runtime::watcher};
use tokio::sync::mpsc::UnboundedReceiver;

type Changes = Result<DynamicObject, watcher::Error>;

fn receiver_stream(
    rx: UnboundedReceiver<Arc<DynamicObject>>,
) -> impl Stream<Item = Arc<DynamicObject>> + Send {
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|o| (o, rx)) })
}

pub fn all_changes(rx: UnboundedReceiver<Arc<DynamicObject>>) -> impl Stream<Item = Changes> + Send {
    receiver_stream(rx).map(|o| Ok((*o).clone()))
}

fn fingerprint(object: &DynamicObject) -> u64 {
    let meta = &object.metadata;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}

pub fn primary_changes(rx: UnboundedReceiver<Arc<DynamicObject>>) -> impl Stream<Item = Changes> + Send {
    let mut seen: HashMap<String, u64> = HashMap::new();
    receiver_stream(rx).filter_map(move |o| {
        let uid = o.metadata.uid.clone().unwrap_or_default();
        let print = fingerprint(&o);
        let changed = seen.insert(uid, print) != Some(print);
        futures::future::ready(changed.then(|| Ok((*o).clone())))
    })
}
