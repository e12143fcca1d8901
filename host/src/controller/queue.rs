//! The reconcile queue as client-go's work-queue metrics describe it (`metrics::controllers`). kube-runtime
//! keeps its queue to itself, so the requests are followed from outside it: a request joins when a trigger
//! names an object of the store (a request already waiting is not added twice) and leaves when its
//! reconcile starts. A request whose object went away before its reconcile is dropped by [`Queue::prune`].

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use crate::metrics::{ControllerHandle, ReconcileResult, RunningToken};

/// The waiting requests of one controller (all its scopes), by namespace and name.
pub(crate) struct Queue {
    metrics: ControllerHandle,
    waiting: Mutex<HashMap<(String, String), Instant>>,
}

impl Queue {
    pub(crate) fn new(metrics: ControllerHandle) -> Self {
        Self {
            metrics,
            waiting: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), Instant>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A trigger asked for a reconcile of `namespace/name`.
    pub(crate) fn added(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let mut waiting = self.lock();
        if waiting.contains_key(&key) {
            return;
        }
        waiting.insert(key, Instant::now());
        drop(waiting);
        self.metrics.added();
    }

    /// The reconcile of `namespace/name` starts; it runs (for the work-queue gauges) until the token is
    /// given to [`Queue::ended`] or dropped.
    pub(crate) fn started(&self, namespace: &str, name: &str) -> RunningToken {
        let key = (namespace.to_string(), name.to_string());
        let waited = self.lock().remove(&key).map(|since| since.elapsed());
        self.metrics.reconcile_started(waited)
    }

    /// The reconcile of `running` ended after `took`.
    pub(crate) fn ended(&self, running: RunningToken, took: Duration, result: ReconcileResult) {
        self.metrics.reconcile_ended(running, took, result);
    }

    /// The reconcile's plugin trapped.
    pub(crate) fn panicked(&self) {
        self.metrics.panicked();
    }

    /// Drops the requests of objects that no longer `exist` (kube-runtime drops them without a reconcile).
    pub(crate) fn prune(&self, exist: impl Fn(&str, &str) -> bool) {
        let mut waiting = self.lock();
        let before = waiting.len();
        waiting.retain(|(namespace, name), _| exist(namespace, name));
        let dropped = before - waiting.len();
        drop(waiting);
        if dropped > 0 {
            self.metrics.dropped(dropped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    fn sample(metrics: &Metrics, series: &str) -> f64 {
        let text = metrics.encode();
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{series} missing in {text}"))
    }

    const QUEUE: &str = r#"{name="raycluster",controller="raycluster"}"#;

    #[test]
    fn requests_are_counted_once_while_waiting_and_leave_when_their_reconcile_starts() {
        let metrics = Metrics::new();
        let queue = Queue::new(metrics.controllers.started("RayCluster", 3));
        let max = r#"controller_runtime_max_concurrent_reconciles{controller="raycluster"}"#;
        assert_eq!(sample(&metrics, max), 3.0);
        assert_eq!(sample(&metrics, &format!("workqueue_depth{QUEUE}")), 0.0);

        queue.added("ns", "a");
        queue.added("ns", "a");
        queue.added("ns", "b");
        queue.added("ns", "gone");
        assert_eq!(sample(&metrics, &format!("workqueue_adds_total{QUEUE}")), 3.0);
        assert_eq!(sample(&metrics, &format!("workqueue_depth{QUEUE}")), 3.0);

        let running = queue.started("ns", "a");
        let active = r#"controller_runtime_active_workers{controller="raycluster"}"#;
        assert_eq!(sample(&metrics, active), 1.0);
        assert_eq!(sample(&metrics, &format!("workqueue_depth{QUEUE}")), 2.0);
        assert_eq!(
            sample(
                &metrics,
                &format!("workqueue_queue_duration_seconds_count{QUEUE}")
            ),
            1.0
        );
        let longest =
            r#"workqueue_longest_running_processor_seconds{name="raycluster",controller="raycluster"}"#;
        std::thread::sleep(Duration::from_millis(10));
        assert!(sample(&metrics, longest) > 0.0, "a reconcile runs");
        queue.ended(running, Duration::from_millis(20), ReconcileResult::Error);
        assert_eq!(sample(&metrics, longest), 0.0);
        assert_eq!(sample(&metrics, active), 0.0);
        let errors = r#"controller_runtime_reconcile_total{controller="raycluster",result="error"}"#;
        assert_eq!(sample(&metrics, errors), 1.0);
        let error_count = r#"controller_runtime_reconcile_errors_total{controller="raycluster"}"#;
        assert_eq!(sample(&metrics, error_count), 1.0);
        assert_eq!(sample(&metrics, &format!("workqueue_retries_total{QUEUE}")), 1.0);
        let time = r#"controller_runtime_reconcile_time_seconds_count{controller="raycluster"}"#;
        assert_eq!(sample(&metrics, time), 1.0);

        // A requeue after a delay was never queued: it starts without leaving the queue.
        let running = queue.started("ns", "a");
        queue.ended(running, Duration::from_millis(5), ReconcileResult::RequeueAfter);
        assert_eq!(sample(&metrics, &format!("workqueue_depth{QUEUE}")), 2.0);
        let requeued =
            r#"controller_runtime_reconcile_total{controller="raycluster",result="requeue_after"}"#;
        assert_eq!(sample(&metrics, requeued), 1.0);

        queue.prune(|_, name| name != "gone");
        assert_eq!(sample(&metrics, &format!("workqueue_depth{QUEUE}")), 1.0);
    }
}
