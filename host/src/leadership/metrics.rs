//! The election's metrics, registered by it into the operator's registry (`crate::metrics`).

use prometheus_client::{
    metrics::{counter::Counter, gauge::Gauge},
    registry::Registry,
};

/// `kuberay_wasm_leader` (1 while this replica leads) and `kuberay_wasm_leader_transitions_total`.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeaderMetrics {
    leader: Gauge,
    transitions: Counter,
}

impl LeaderMetrics {
    /// Registers the metrics into `registry`.
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "leader",
            "1 while this replica holds the leader election's lease and runs the controllers, else 0",
            self.leader.clone(),
        );
        registry.register(
            "leader_transitions",
            "Times this replica became the leader or stopped being it",
            self.transitions.clone(),
        );
    }

    /// Records that this replica leads (`true`) or does not (`false`); a change counts as a transition.
    pub(crate) fn set_leading(&self, leading: bool) {
        let value = i64::from(leading);
        if self.leader.set(value) != value {
            self.transitions.inc();
        }
    }
}
