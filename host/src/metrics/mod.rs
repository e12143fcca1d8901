//! Prometheus metrics of the operator, served on `/metrics`: this operator's own (`kuberay_wasm_*`, below)
//! and, under their own names, the families a KubeRay operator exports (`kuberay`: KubeRay's `kuberay_*`;
//! `controllers`: controller-runtime's and the work queue's; `rest_client`: client-go's requests;
//! `process`: the process), so that dashboards and alerts made for KubeRay keep working.

mod controllers;
mod in_flight;
mod kuberay;
mod process;
mod rest_client;

use std::sync::Arc;

pub(crate) use controllers::{ControllerHandle, ReconcileResult};
pub(crate) use in_flight::RunningToken;
pub(crate) use kuberay::{CustomResources, Followed, KubeRayMetrics, ObjectView};
pub(crate) use rest_client::RateLimitWait;
pub use rest_client::RestClientMetrics;

use crate::leadership::LeaderMetrics;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ReconcileLabels {
    pub(crate) kind: String,
    pub(crate) plugin: String,
    pub(crate) result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ErrorLabels {
    pub(crate) kind: String,
    pub(crate) plugin: String,
    pub(crate) reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct KindLabels {
    pub(crate) kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLabels {
    pub(crate) plugin: String,
    pub(crate) export: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HostCallLabels {
    pub(crate) plugin: String,
    pub(crate) verb: String,
    pub(crate) outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct WriteLabels {
    pub(crate) plugin: String,
    pub(crate) verb: String,
    pub(crate) result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RefusalLabels {
    pub(crate) plugin: String,
    pub(crate) verb: String,
    pub(crate) kind: String,
}

/// A plugin file the policy refused: the entry's name (or `unknown`) and a reason of a fixed set.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct PluginRefusalLabels {
    pub(crate) plugin: String,
    pub(crate) reason: String,
}

/// A plugin limit that was exceeded (`limit` is one of a fixed set of names, never the plugin's text).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct LimitLabels {
    pub(crate) plugin: String,
    pub(crate) limit: String,
}

/// A plugin's event that was dropped: `reason` is one of a fixed set (`rate-limited`, `queue-full`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct DroppedEventLabels {
    pub(crate) plugin: String,
    pub(crate) reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct PluginLabels {
    pub(crate) plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct LoadLabels {
    pub(crate) plugin: String,
    pub(crate) source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RayLabels {
    pub(crate) route: String,
    pub(crate) outcome: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    ])
}

/// Every metric the operator exports. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    pub(crate) reconciles: Family<ReconcileLabels, Counter>,
    pub(crate) reconcile_errors: Family<ErrorLabels, Counter>,
    pub(crate) reconcile_duration: Family<KindLabels, Histogram>,
    pub(crate) plugin_call_duration: Family<CallLabels, Histogram>,
    pub(crate) host_calls: Family<HostCallLabels, Counter>,
    pub(crate) refused_calls: Family<RefusalLabels, Counter>,
    pub(crate) api_writes: Family<WriteLabels, Counter>,
    pub(crate) plugin_loads: Family<LoadLabels, Counter>,
    pub(crate) plugin_refusals: Family<PluginRefusalLabels, Counter>,
    /// Plugins loaded and ready (`kuberay_wasm_plugins_loaded`); embedders and tests wait on it.
    pub plugins_loaded: Gauge,
    pub(crate) ray_requests: Family<RayLabels, Counter>,
    pub(crate) limits_exceeded: Family<LimitLabels, Counter>,
    pub(crate) log_lines_dropped: Family<PluginLabels, Counter>,
    pub(crate) events_dropped: Family<DroppedEventLabels, Counter>,
    /// The leader election's metrics (registered by it).
    pub(crate) leadership: LeaderMetrics,
    /// KubeRay's `kuberay_*` families.
    pub(crate) kuberay: KubeRayMetrics,
    /// controller-runtime's and the work queue's families.
    pub(crate) controllers: controllers::ControllerMetrics,
    /// client-go's request families (recorded by the API clients' layer).
    pub(crate) rest_client: RestClientMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric of the operator.
    pub fn new() -> Self {
        let mut root = Registry::default();
        let kuberay = KubeRayMetrics::default();
        kuberay.register(&mut root);
        let controllers = controllers::ControllerMetrics::default();
        controllers.register(&mut root);
        let rest_client = RestClientMetrics::default();
        rest_client.register(&mut root);
        root.register_collector(Box::new(process::ProcessCollector));
        let leadership = LeaderMetrics::default();
        leadership.register_client_go(&mut root);
        let registry = root.sub_registry_with_prefix("kuberay_wasm");
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        let reconcile_errors = Family::<ErrorLabels, Counter>::default();
        let reconcile_duration =
            Family::<KindLabels, Histogram>::new_with_constructor(duration_histogram as fn() -> Histogram);
        let plugin_call_duration =
            Family::<CallLabels, Histogram>::new_with_constructor(duration_histogram as fn() -> Histogram);
        let host_calls = Family::<HostCallLabels, Counter>::default();
        let refused_calls = Family::<RefusalLabels, Counter>::default();
        let api_writes = Family::<WriteLabels, Counter>::default();
        let plugin_loads = Family::<LoadLabels, Counter>::default();
        let plugin_refusals = Family::<PluginRefusalLabels, Counter>::default();
        let plugins_loaded = Gauge::default();
        let ray_requests = Family::<RayLabels, Counter>::default();
        let limits_exceeded = Family::<LimitLabels, Counter>::default();
        let log_lines_dropped = Family::<PluginLabels, Counter>::default();
        let events_dropped = Family::<DroppedEventLabels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles by kind, plugin and result",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Failed reconciles by kind, plugin and reason",
            reconcile_errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time per reconcile, plugin call included",
            reconcile_duration.clone(),
        );
        registry.register(
            "plugin_call_duration_seconds",
            "Time per plugin call: instantiate, call and host calls",
            plugin_call_duration.clone(),
        );
        registry.register(
            "host_calls",
            "Host calls made by plugins, by verb and outcome (ok, error, refused, unchanged)",
            host_calls.clone(),
        );
        registry.register(
            "refused_calls",
            "Host calls the policy refused, by plugin (policy entry), verb and kind (one the policy names, else other)",
            refused_calls.clone(),
        );
        registry.register(
            "api_writes",
            "Writes plugins asked for, by whether they reached the API server (written) or changed nothing (skipped)",
            api_writes.clone(),
        );
        registry.register(
            "plugin_loads",
            "Plugin loads, from the compiled-plugin cache or compiled",
            plugin_loads.clone(),
        );
        registry.register(
            "plugin_refusals",
            "Plugin files refused at load, by entry (or unknown) and reason: by the policy, or for breaching a compile bound",
            plugin_refusals.clone(),
        );
        registry.register(
            "plugins_loaded",
            "Plugins currently loaded",
            plugins_loaded.clone(),
        );
        registry.register(
            "ray_requests",
            "HTTP requests to Ray heads, by route and outcome",
            ray_requests.clone(),
        );
        registry.register(
            "plugin_limits_exceeded",
            "Plugin calls that exceeded a limit (host calls, writes, written bytes, events, list items, input size)",
            limits_exceeded.clone(),
        );
        registry.register(
            "plugin_log_lines_dropped",
            "Plugin log and output lines dropped by the per-plugin rate limit",
            log_lines_dropped.clone(),
        );
        registry.register(
            "events_dropped",
            "Plugin events dropped, by plugin and reason (rate-limited: over its budget across reconciles; queue-full)",
            events_dropped.clone(),
        );
        leadership.register(registry);
        Self {
            registry: Arc::new(root),
            reconciles,
            reconcile_errors,
            reconcile_duration,
            plugin_call_duration,
            host_calls,
            refused_calls,
            api_writes,
            plugin_loads,
            plugin_refusals,
            plugins_loaded,
            ray_requests,
            limits_exceeded,
            log_lines_dropped,
            events_dropped,
            leadership,
            kuberay,
            controllers,
            rest_client,
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    pub(crate) fn host_call(&self, plugin: &str, verb: &str, outcome: &str) {
        self.host_calls
            .get_or_create(&HostCallLabels {
                plugin: plugin.into(),
                verb: verb.into(),
                outcome: outcome.into(),
            })
            .inc();
    }

    pub(crate) fn write(&self, plugin: &str, verb: &str, written: bool) {
        let result = if written { "written" } else { "skipped" };
        self.api_writes
            .get_or_create(&WriteLabels {
                plugin: plugin.into(),
                verb: verb.into(),
                result: result.into(),
            })
            .inc();
    }

    /// One request to a Ray head (`route` and `outcome` as [`kuberay_rayhead::Sent`] reports them).
    pub(crate) fn ray_request(&self, route: &str, outcome: &str) {
        self.ray_requests
            .get_or_create(&RayLabels {
                route: route.into(),
                outcome: outcome.into(),
            })
            .inc();
    }

    /// A plugin file refused by the policy.
    pub(crate) fn plugin_refused(&self, plugin: &str, reason: &str) {
        self.plugin_refusals
            .get_or_create(&PluginRefusalLabels {
                plugin: plugin.into(),
                reason: reason.into(),
            })
            .inc();
    }

    /// A plugin call that exceeded `limit` (a fixed name from the sandbox's budget).
    pub(crate) fn limit_exceeded(&self, plugin: &str, limit: &'static str) {
        self.limits_exceeded
            .get_or_create(&LimitLabels {
                plugin: plugin.into(),
                limit: limit.into(),
            })
            .inc();
    }

    /// A plugin log line dropped by the rate limit.
    pub(crate) fn log_dropped(&self, plugin: &str) {
        self.log_lines_dropped
            .get_or_create(&PluginLabels {
                plugin: plugin.into(),
            })
            .inc();
    }

    /// A plugin's event that was dropped (`reason`: `rate-limited` or `queue-full`).
    pub(crate) fn event_dropped(&self, plugin: &str, reason: &'static str) {
        self.events_dropped
            .get_or_create(&DroppedEventLabels {
                plugin: plugin.into(),
                reason: reason.into(),
            })
            .inc();
    }

    /// A host call refused by the policy (counted once, also as a host call with outcome `refused`).
    pub(crate) fn refused(&self, plugin: &str, verb: &str, kind: &str) {
        self.refused_calls
            .get_or_create(&RefusalLabels {
                plugin: plugin.into(),
                verb: verb.into(),
                kind: kind.into(),
            })
            .inc();
        self.host_call(plugin, verb, "refused");
    }
}
