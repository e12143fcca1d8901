//! The metrics controller-runtime and client-go's work queue export for every controller of a Go operator
//! (KubeRay's included), with their names, labels and buckets, so that KubeRay's operator dashboard (its
//! reconcile rate and latency, work-queue depth panels, and the `controller_runtime_active_workers` its
//! variables list controllers by) works unchanged. A controller is named as controller-runtime names one,
//! its kind in lower case (`raycluster`, `rayjob`, `rayservice`, `raycronjob`).
//!
//! | family | labels |
//! |---|---|
//! | `controller_runtime_reconcile_total` | controller, result (`success`, `error`, `requeue_after`) |
//! | `controller_runtime_reconcile_errors_total`, `controller_runtime_reconcile_time_seconds` | controller |
//! | `controller_runtime_reconcile_panics_total` | controller: reconciles whose plugin trapped (a Rust plugin's panic is a trap; so are its other crashes) |
//! | `controller_runtime_active_workers`, `controller_runtime_max_concurrent_reconciles` | controller |
//! | `workqueue_depth`, `workqueue_adds_total`, `workqueue_retries_total` | name, controller |
//! | `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds` | name, controller |
//! | `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds` | name, controller (`in_flight`) |
//!
//! A reconcile request joins the queue when a change of the object or of one it owns asks for one (a
//! request already waiting is not added twice, as in client-go), and leaves it when its reconcile starts;
//! a requeue after a delay joins when it is due, so it is counted in the reconcile rate but not in the
//! depth or queue duration.

use super::in_flight::{InFlight, RunningToken};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

/// How a reconcile ended, as controller-runtime's `result` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReconcileResult {
    /// Done until something changes.
    Success,
    /// Done, and to run again after a delay.
    RequeueAfter,
    /// Failed (reported on the object); retried with backoff.
    Error,
}

impl ReconcileResult {
    fn label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::RequeueAfter => "requeue_after",
            Self::Error => "error",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

fn reconcile_buckets() -> Histogram {
    // controller-runtime's buckets for controller_runtime_reconcile_time_seconds.
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
        1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0,
        40.0, 50.0, 60.0,
    ])
}

fn queue_buckets() -> Histogram {
    // client-go's work-queue buckets: 10 ns to 1,000 s, by powers of ten.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1e-8, 10.0, 12,
    ))
}

/// The families of every controller.
#[derive(Clone)]
pub(crate) struct ControllerMetrics {
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    time: Family<ControllerLabels, Histogram>,
    active: Family<ControllerLabels, Gauge>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    queue_duration: Family<QueueLabels, Histogram>,
    work_duration: Family<QueueLabels, Histogram>,
    in_flight: InFlight,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self {
            reconciles: Family::default(),
            errors: Family::default(),
            panics: Family::default(),
            time: Family::new_with_constructor(reconcile_buckets as fn() -> Histogram),
            active: Family::default(),
            max_concurrent: Family::default(),
            depth: Family::default(),
            adds: Family::default(),
            retries: Family::default(),
            queue_duration: Family::new_with_constructor(queue_buckets as fn() -> Histogram),
            work_duration: Family::new_with_constructor(queue_buckets as fn() -> Histogram),
            in_flight: InFlight::default(),
        }
    }
}

/// The name controller-runtime gives the controller of `kind`.
pub(crate) fn controller_name(kind: &str) -> String {
    kind.to_lowercase()
}

impl ControllerMetrics {
    /// Registers every family into `registry` (which must carry no prefix: the names are controller-runtime's).
    pub(crate) fn register(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.reconciles.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.errors.clone(),
        );
        r.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            self.panics.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.time.clone(),
        );
        r.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            self.active.clone(),
        );
        r.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            self.max_concurrent.clone(),
        );
        r.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.queue_duration.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work_duration.clone(),
        );
        r.register_collector(Box::new(self.in_flight.clone()));
    }

    /// The controller of `kind` started, running at most `concurrency` reconciles at once: its series
    /// exist (at zero) from now on.
    pub(crate) fn started(&self, kind: &str, concurrency: u16) -> ControllerHandle {
        let handle = ControllerHandle {
            metrics: self.clone(),
            controller: ControllerLabels {
                controller: controller_name(kind),
            },
        };
        let queue = handle.queue();
        self.max_concurrent
            .get_or_create(&handle.controller)
            .set(i64::from(concurrency));
        // Creating a series is all these do (the guards they return are dropped at once).
        drop(self.active.get_or_create(&handle.controller));
        drop(self.depth.get_or_create(&queue));
        drop(self.adds.get_or_create(&queue));
        for result in [
            ReconcileResult::Success,
            ReconcileResult::RequeueAfter,
            ReconcileResult::Error,
        ] {
            drop(self.reconciles.get_or_create(&handle.result(result)));
        }
        drop(self.errors.get_or_create(&handle.controller));
        drop(self.panics.get_or_create(&handle.controller));
        self.in_flight.controller(&handle.controller.controller);
        handle
    }
}

/// One controller's series.
#[derive(Clone)]
pub(crate) struct ControllerHandle {
    metrics: ControllerMetrics,
    controller: ControllerLabels,
}

impl ControllerHandle {
    fn queue(&self) -> QueueLabels {
        QueueLabels {
            name: self.controller.controller.clone(),
            controller: self.controller.controller.clone(),
        }
    }

    fn result(&self, result: ReconcileResult) -> ResultLabels {
        ResultLabels {
            controller: self.controller.controller.clone(),
            result: result.label().into(),
        }
    }

    /// A request joined the queue.
    pub(crate) fn added(&self) {
        let queue = self.queue();
        self.metrics.adds.get_or_create(&queue).inc();
        self.metrics.depth.get_or_create(&queue).inc();
    }

    /// Requests left the queue without a reconcile (their object is gone).
    pub(crate) fn dropped(&self, count: usize) {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.metrics.depth.get_or_create(&self.queue()).dec_by(count);
    }

    /// A reconcile started; `waited` is how long its request was queued, if it was. It counts as running
    /// until the token is dropped.
    pub(crate) fn reconcile_started(&self, waited: Option<std::time::Duration>) -> RunningToken {
        if let Some(waited) = waited {
            let queue = self.queue();
            self.metrics.depth.get_or_create(&queue).dec();
            self.metrics
                .queue_duration
                .get_or_create(&queue)
                .observe(waited.as_secs_f64());
        }
        self.metrics.active.get_or_create(&self.controller).inc();
        self.metrics.in_flight.start(&self.controller.controller)
    }

    /// A reconcile's plugin trapped (controller-runtime counts a reconciler's panic; a plugin's panic is a
    /// trap).
    pub(crate) fn panicked(&self) {
        self.metrics.panics.get_or_create(&self.controller).inc();
    }

    /// A reconcile ended after `took`, with `result`.
    pub(crate) fn reconcile_ended(
        &self,
        running: RunningToken,
        took: std::time::Duration,
        result: ReconcileResult,
    ) {
        drop(running);
        let metrics = &self.metrics;
        metrics.active.get_or_create(&self.controller).dec();
        metrics
            .time
            .get_or_create(&self.controller)
            .observe(took.as_secs_f64());
        metrics
            .work_duration
            .get_or_create(&self.queue())
            .observe(took.as_secs_f64());
        metrics.reconciles.get_or_create(&self.result(result)).inc();
        if result == ReconcileResult::Error {
            metrics.errors.get_or_create(&self.controller).inc();
            metrics.retries.get_or_create(&self.queue()).inc();
        }
    }
}
