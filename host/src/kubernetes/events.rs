//! Events (events.k8s.io/v1) about reconciled objects, one recorder per plugin so that each plugin appears
//! as its own reporting controller (`raycluster-controller`, as KubeRay names its own).
//!
//! Plugins' events are published in the background, in the order recorded, as KubeRay's recorder does: a
//! reconcile does not wait for an API round trip per event (a cluster coming up records four). Each plugin
//! has a lane of its own: a budget across its reconciles (a token bucket, [`RateBudget`]: a burst, then a
//! steady rate) and a bounded queue with its own publisher. Recording never waits: an event beyond the budget
//! or that finds the queue full is dropped (as client-go's recorder drops), counted in
//! `events_dropped_total{plugin,reason}` and logged once per [`DROP_LOG_WINDOW`] with the plugin's name. So
//! a plugin that floods events from many objects blocks neither its own reconciles nor any other plugin's
//! events, and the host's own failure events (`controller::report`, published directly) are never behind
//! a plugin's. A failed publish is logged with the object.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError, Weak},
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Client,
    runtime::events::{Event, Recorder, Reporter},
};
use kuberay_admission::budget::{RateBudget, TokenBucket};
use tokio::{sync::mpsc, task::JoinHandle};

use crate::{
    leadership::{Fence, NotLeader},
    metrics::Metrics,
};

/// Events one plugin may have waiting to be published.
const QUEUE: usize = 512;

/// Drops of one plugin's events are logged at most once per window, with how many there were.
pub(crate) const DROP_LOG_WINDOW: Duration = Duration::from_secs(30);

/// Why an event was dropped (a metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// The plugin recorded faster than its budget across reconciles allows.
    RateLimited,
    /// Its queue was full: the API server is slower than the plugin's budget.
    QueueFull,
}

impl Dropped {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate-limited",
            Self::QueueFull => "queue-full",
        }
    }
}

/// One event to publish with a plugin's recorder.
struct Pending {
    plugin: String,
    event: Event,
    about: ObjectReference,
}

/// One plugin's budget, queue and drop log.
struct Lane {
    rate: TokenBucket,
    sender: mpsc::Sender<Pending>,
    drops: Mutex<DropLog>,
}

/// Drops not yet logged, and when they last were.
#[derive(Default)]
struct DropLog {
    unlogged: u64,
    logged_at: Option<Instant>,
}

impl DropLog {
    /// Counts one drop; returns how many to log now, if a line is due.
    fn record(&mut self, now: Instant) -> Option<u64> {
        self.unlogged = self.unlogged.saturating_add(1);
        let due = self
            .logged_at
            .is_none_or(|at| now.saturating_duration_since(at) >= DROP_LOG_WINDOW);
        if !due {
            return None;
        }
        self.logged_at = Some(now);
        Some(std::mem::take(&mut self.unlogged))
    }
}

pub(crate) struct EventRecorders {
    client: Client,
    instance: Option<String>,
    recorders: Mutex<HashMap<String, Recorder>>,
    /// Checked when an event is queued and again before it is published.
    fence: Fence,
    metrics: Metrics,
    lanes: Mutex<HashMap<String, Arc<Lane>>>,
    publishers: Mutex<Vec<JoinHandle<()>>>,
}

impl EventRecorders {
    pub(crate) fn new(client: Client, instance: Option<String>, fence: Fence, metrics: Metrics) -> Self {
        Self {
            client,
            instance,
            recorders: Mutex::default(),
            fence,
            metrics,
            lanes: Mutex::default(),
            publishers: Mutex::default(),
        }
    }

    /// Queues an event about `about` for publishing with `plugin`'s recorder, or drops it (counted) when
    /// the plugin is over `budget` or its queue is full; never waits. The plugin's publisher starts with its
    /// first event (on the caller's runtime) and ends when the recorders are dropped or flushed.
    pub(crate) fn publish_later(
        self: &Arc<Self>,
        plugin: &str,
        budget: &RateBudget,
        event: Event,
        about: ObjectReference,
    ) -> Result<(), NotLeader> {
        self.fence.check()?;
        let lane = self.lane(plugin, budget);
        if !lane.rate.take(1) {
            self.dropped(plugin, &lane, Dropped::RateLimited);
            return Ok(());
        }
        let pending = Pending {
            plugin: plugin.to_string(),
            event,
            about,
        };
        match lane.sender.try_send(pending) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.dropped(plugin, &lane, Dropped::QueueFull),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!(%plugin, "event publisher stopped; event not recorded");
            }
        }
        Ok(())
    }

    /// `plugin`'s lane, created (with its publisher) on first use.
    fn lane(self: &Arc<Self>, plugin: &str, budget: &RateBudget) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lane) = lanes.get(plugin) {
            return lane.clone();
        }
        let (sender, receiver) = mpsc::channel(QUEUE);
        let publisher = tokio::spawn(publish_all(Arc::downgrade(self), receiver));
        self.publishers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(publisher);
        let lane = Arc::new(Lane {
            rate: TokenBucket::new(u64::from(budget.event_burst), u64::from(budget.events_per_second)),
            sender,
            drops: Mutex::default(),
        });
        lanes.insert(plugin.to_string(), lane.clone());
        lane
    }

    /// Counts a dropped event and logs the drops when a line is due.
    fn dropped(&self, plugin: &str, lane: &Lane, why: Dropped) {
        self.metrics.event_dropped(plugin, why.as_str());
        let due = lane
            .drops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(Instant::now());
        if let Some(dropped) = due {
            tracing::warn!(
                %plugin, reason = why.as_str(), dropped, window_secs = DROP_LOG_WINDOW.as_secs(),
                "dropping the plugin's events: it records more than its budget allows or than can be published"
            );
        }
    }

    /// Publishes the events still queued (waiting at most `timeout`); events recorded afterwards start new
    /// publishers. Called when the operator stops.
    pub(crate) async fn flush(&self, timeout: Duration) {
        // Dropping the lanes closes their queues: each publisher ends once its queue is empty.
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner).clear();
        let publishers = std::mem::take(&mut *self.publishers.lock().unwrap_or_else(PoisonError::into_inner));
        if tokio::time::timeout(timeout, futures::future::join_all(publishers))
            .await
            .is_err()
        {
            tracing::warn!("some events were not published before the operator stopped");
        }
    }

    pub(crate) fn reporter(&self, plugin: &str) -> Reporter {
        Reporter {
            controller: format!("{plugin}-controller"),
            instance: self.instance.clone(),
        }
    }

    pub(crate) fn recorder(&self, plugin: &str) -> Recorder {
        let mut recorders = self.recorders.lock().unwrap_or_else(PoisonError::into_inner);
        recorders
            .entry(plugin.to_string())
            .or_insert_with(|| Recorder::new(self.client.clone(), self.reporter(plugin)))
            .clone()
    }
}

/// Publishes one plugin's queued events one after the other while the recorders exist.
async fn publish_all(recorders: Weak<EventRecorders>, mut rx: mpsc::Receiver<Pending>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_logged_once_per_window_with_their_count() {
        let mut log = DropLog::default();
        let start = Instant::now();
        assert_eq!(log.record(start), Some(1), "the first drop is logged at once");
        for _ in 0..9 {
            assert_eq!(log.record(start + Duration::from_secs(1)), None);
        }
        let next = start + DROP_LOG_WINDOW;
        assert_eq!(
            log.record(next),
            Some(10),
            "the next line counts every drop since"
        );
        assert_eq!(log.record(next), None);
    }

    /// Recorders whose API server accepts connections and never answers: a publisher stays on its first
    /// event for as long as the test runs.
    async fn stuck_recorders() -> (Arc<EventRecorders>, Metrics, tokio::net::TcpListener) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let config = kube::Config::new(url.parse().expect("a URL"));
        let client = Client::try_from(config).expect("a client");
        let metrics = Metrics::new();
        let recorders = EventRecorders::new(client, None, Fence::open(), metrics.clone());
        (Arc::new(recorders), metrics, listener)
    }

    fn event() -> (Event, ObjectReference) {
        let event = Event {
            type_: kube::runtime::events::EventType::Normal,
            reason: "Flood".into(),
            note: Some("again".into()),
            action: "Flood".into(),
            secondary: None,
        };
        let about = ObjectReference {
            namespace: Some("ns".into()),
            name: Some("x".into()),
            ..ObjectReference::default()
        };
        (event, about)
    }

    fn dropped(metrics: &Metrics, plugin: &str, reason: &str) -> f64 {
        let needle = format!("plugin=\"{plugin}\",reason=\"{reason}\"");
        metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with("kuberay_wasm_events_dropped_total") && l.contains(&needle))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    #[tokio::test]
    async fn a_plugin_over_its_budget_or_queue_loses_its_own_events_only_and_never_waits() {
        let (recorders, metrics, _listener) = stuck_recorders().await;
        let small = RateBudget {
            event_burst: 10,
            events_per_second: 0,
            ..RateBudget::default()
        };
        for _ in 0..25 {
            let (event, about) = event();
            recorders.publish_later("flooder", &small, event, about).unwrap();
        }
        assert_eq!(dropped(&metrics, "flooder", "rate-limited"), 15.0);

        // A budget the API server cannot keep up with: the queue fills and the rest is dropped, at once.
        let large = RateBudget {
            event_burst: 100_000,
            ..RateBudget::default()
        };
        let extra = 100;
        for _ in 0..QUEUE + 1 + extra {
            let (event, about) = event();
            recorders.publish_later("stuck", &large, event, about).unwrap();
        }
        // One event is with the publisher, QUEUE wait; the rest was dropped.
        let full = dropped(&metrics, "stuck", "queue-full");
        assert!(full >= extra as f64 && full <= extra as f64 + 1.0, "{full}");

        // Another plugin's lane is its own: nothing of it is dropped.
        for _ in 0..5 {
            let (event, about) = event();
            recorders
                .publish_later("bystander", &large, event, about)
                .unwrap();
        }
        assert_eq!(dropped(&metrics, "bystander", "queue-full"), 0.0);
        assert_eq!(dropped(&metrics, "bystander", "rate-limited"), 0.0);
    }
}
