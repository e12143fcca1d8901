//! Events (events.k8s.io/v1) about reconciled objects, one recorder per plugin so that each plugin appears
//! as its own reporting controller (`raycluster-controller`, as KubeRay names its own).
//!
//! Plugins' events are published in the background, in the order recorded, as KubeRay's recorder does: a
//! reconcile does not wait for an API round trip per event (a cluster coming up records four). A failed
//! publish is logged with the object; when [`QUEUE`] events are waiting, recording waits for room, so
//! nothing is dropped.

use std::{collections::HashMap, sync::Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Client,
    runtime::events::{Event, Recorder, Reporter},
};
use tokio::sync::mpsc;

use crate::leadership::{Fence, NotLeader};

/// Events waiting to be published, at most.
const QUEUE: usize = 1024;

/// One event to publish with a plugin's recorder.
struct Pending {
    plugin: String,
    event: Event,
    about: ObjectReference,
}

pub(crate) struct EventRecorders {
    client: Client,
    instance: Option<String>,
    recorders: Mutex<HashMap<String, Recorder>>,
    /// Checked when an event is queued and again before it is published.
    fence: Fence,
    queue: Mutex<Option<(mpsc::Sender<Pending>, tokio::task::JoinHandle<()>)>>,
}

impl EventRecorders {
    pub(crate) fn new(client: Client, instance: Option<String>, fence: Fence) -> Self {
        Self {
            client,
            instance,
            recorders: Mutex::default(),
            fence,
            queue: Mutex::default(),
        }
    }

    /// Queues an event about `about` for publishing with `plugin`'s recorder. The publisher starts with the
    /// first event (on the caller's runtime) and ends when the recorders are dropped.
    pub(crate) async fn publish_later(
        self: &std::sync::Arc<Self>,
        plugin: &str,
        event: Event,
        about: ObjectReference,
    ) -> Result<(), NotLeader> {
        self.fence.check()?;
        let sender = {
            let mut queue = self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            queue
                .get_or_insert_with(|| {
                    let (tx, rx) = mpsc::channel(QUEUE);
                    (tx, tokio::spawn(publish_all(std::sync::Arc::downgrade(self), rx)))
                })
                .0
                .clone()
        };
        let pending = Pending {
            plugin: plugin.to_string(),
            event,
            about,
        };
        if sender.send(pending).await.is_err() {
            tracing::warn!(%plugin, "event publisher stopped; event not recorded");
        }
        Ok(())
    }

    /// Publishes the events still queued (waiting at most `timeout`); events recorded afterwards start a
    /// new publisher. Called when the operator stops.
    pub(crate) async fn flush(&self, timeout: std::time::Duration) {
        let queued = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((sender, publisher)) = queued {
            drop(sender);
            if tokio::time::timeout(timeout, publisher).await.is_err() {
                tracing::warn!("some events were not published before the operator stopped");
            }
        }
    }

    pub(crate) fn reporter(&self, plugin: &str) -> Reporter {
        Reporter {
            controller: format!("{plugin}-controller"),
            instance: self.instance.clone(),
        }
    }

    pub(crate) fn recorder(&self, plugin: &str) -> Recorder {
        let mut recorders = self
            .recorders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        recorders
            .entry(plugin.to_string())
            .or_insert_with(|| Recorder::new(self.client.clone(), self.reporter(plugin)))
            .clone()
    }
}

/// Publishes queued events one after the other while the recorders exist.
async fn publish_all(recorders: std::sync::Weak<EventRecorders>, mut rx: mpsc::Receiver<Pending>) {
    while let Some(pending) = rx.recv().await {
        let Some(recorders) = recorders.upgrade() else {
            return;
        };
        if let Err(e) = recorders.fence.check() {
            tracing::warn!(plugin = %pending.plugin, reason = %pending.event.reason, error = %e, "event not published");
            continue;
        }
        let recorder = recorders.recorder(&pending.plugin);
        drop(recorders);
        if let Err(e) = recorder.publish(&pending.event, &pending.about).await {
            let about = &pending.about;
            tracing::warn!(
                plugin = %pending.plugin, kind = about.kind.as_deref().unwrap_or_default(),
                namespace = about.namespace.as_deref().unwrap_or_default(),
                name = about.name.as_deref().unwrap_or_default(), reason = %pending.event.reason,
                error = %e, "could not record an event"
            );
        }
    }
}
