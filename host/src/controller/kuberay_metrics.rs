//! Feeds KubeRay's duration metrics (`metrics::kuberay`) from the watch: every change of a RayCluster or
//! RayJob the cache sees is compared with what was seen of it before, the way KubeRay compares an object's
//! status before and after its reconcile. Objects already cached when this starts are only remembered, so a
//! transition that happened before is not reported (as with KubeRay after a restart).

use std::sync::Arc;

use kube::{
    api::ApiResource,
    runtime::reflector::{ObjectRef, Store},
};
use tokio::sync::mpsc::{UnboundedReceiver, error::TryRecvError};

use crate::{
    kubernetes::compact::CachedObject,
    metrics::{Followed, KubeRayMetrics},
};

/// Whether `kind` (of `group`) has a duration KubeRay reports.
pub(crate) fn has_durations(group: &str, kind: &str) -> bool {
    group == "ray.io" && matches!(kind, "RayCluster" | "RayJob")
}

/// Follows the changes of `kind`'s objects in one scope (`changes`, as `Caches::subscribe` gives them;
/// `store` tells a deletion) until the cache stops or the future is dropped (the controllers stop); either
/// way the durations it set are dropped with it.
pub(crate) async fn follow(
    kind: String,
    mut changes: UnboundedReceiver<Arc<CachedObject>>,
    store: Store<CachedObject>,
    resource: ApiResource,
    metrics: KubeRayMetrics,
) {
    let mut followed = Followed::new(metrics, kind);
    // What the cache held when this started: remembered, not reported.
    loop {
        match changes.try_recv() {
            Ok(object) => followed.remember(&object.view()),
            Err(TryRecvError::Empty) => break,
            Err(TryRecvError::Disconnected) => return,
        }
    }
    while let Some(object) = changes.recv().await {
        let view = object.view();
        let object_ref = ObjectRef::new_with(view.name, resource.clone()).within(view.namespace);
        if store.get(&object_ref).is_none() {
            followed.gone(view.namespace, view.name);
        } else {
            followed.changed(&view);
        }
    }
}
