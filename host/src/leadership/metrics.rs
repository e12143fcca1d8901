//! The election's metrics, registered by it into the operator's registry (`crate::metrics`).

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

/// `kuberay_wasm_leader` (1 while this replica leads) and `kuberay_wasm_leader_transitions_total`, and
/// client-go's `leader_election_master_status` (the same, by the Lease's `name`).
#[derive(Debug, Clone, Default)]
pub(crate) struct LeaderMetrics {
    leader: Gauge,
    transitions: Counter,
    master_status: Family<LeaseLabels, Gauge>,
    /// The Lease's name, once an election uses these metrics.
    lease: Option<String>,
}

impl LeaderMetrics {
    /// Registers client-go's family into `registry` (which must carry no prefix).
    pub(crate) fn register_client_go(&self, registry: &mut Registry) {
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease",
            self.master_status.clone(),
        );
    }

    /// These metrics, for the election on the Lease `name`.
    pub(crate) fn for_lease(&self, name: &str) -> Self {
        Self {
            lease: Some(name.to_string()),
            ..self.clone()
        }
    }

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
        if let Some(name) = &self.lease {
            self.master_status
                .get_or_create(&LeaseLabels { name: name.clone() })
                .set(value);
        }
    }
}
