//! Feeds KubeRay's duration metrics (`metrics::kuberay`) from the watch: every change of a RayCluster or
//! RayJob the cache sees is compared with what was seen of it before, the way KubeRay compares an object's
//! status before and after its reconcile. Objects already cached when this starts are only remembered, so a
//! transition that happened before is not reported (as with KubeRay after a restart).

use std::{collections::HashMap, sync::Arc};

use kube::{
    api::ApiResource,
    runtime::reflector::{ObjectRef, Store},
};
use tokio::sync::mpsc::{UnboundedReceiver, error::TryRecvError};

use crate::{
    kubernetes::compact::CachedObject,
    metrics::{KubeRayMetrics, Seen},
};

/// Whether `kind` (of `group`) has a duration KubeRay reports.
pub(crate) fn has_durations(group: &str, kind: &str) -> bool {
    group == "ray.io" && matches!(kind, "RayCluster" | "RayJob")
}

/// Follows the changes of `kind`'s objects in one scope (`changes`, as `Caches::subscribe` gives them;
/// `store` tells a deletion) until the cache stops.
pub(crate) async fn follow(
    kind: String,
    mut changes: UnboundedReceiver<Arc<CachedObject>>,
    store: Store<CachedObject>,
    resource: ApiResource,
    metrics: KubeRayMetrics,
) {
    let mut seen: HashMap<(String, String), Seen> = HashMap::new();
    // What the cache held when this started: remembered, not reported.
    loop {
        match changes.try_recv() {
            Ok(object) => {
                seen.insert(key(&object), Seen::of(&object.view()));
            }
            Err(TryRecvError::Empty) => break,
            Err(TryRecvError::Disconnected) => return,
        }
    }
    while let Some(object) = changes.recv().await {
        let key = key(&object);
        let object_ref = ObjectRef::new_with(&key.1, resource.clone()).within(&key.0);
        if store.get(&object_ref).is_none() {
            if let Some(gone) = seen.remove(&key) {
                metrics.forget(gone);
            }
            continue;
        }
        let before = seen.remove(&key);
        let now = metrics.changed(&kind, before, &object.view());
        seen.insert(key, now);
    }
}

fn key(object: &CachedObject) -> (String, String) {
    let meta = &object.metadata;
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}
