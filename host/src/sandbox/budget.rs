//! The host-side work one plugin call may cause. A plugin chooses the sizes of the strings it hands the host
//! and how often it calls; without bounds, a few bytes of guest code could make the host parse gigabytes of
//! JSON, send thousands of writes to the API server or fill the event stream. Every host call is charged
//! here before the host does any work for it: the strings it passes are checked against fixed caps, and the
//! calls, writes and events of one reconcile against the call's [`CallBudget`]. The first breach is
//! remembered; the call then fails as `PluginLimitExceeded` (the guest is stopped at its next epoch tick).

/// Largest object (JSON text) a plugin may create or apply: etcd's default request limit.
pub(crate) const MAX_OBJECT_BYTES: usize = 1536 * 1024;
/// Largest label selector.
pub(crate) const MAX_SELECTOR_BYTES: usize = 4096;
/// Largest name, group, version, kind or finalizer (a DNS subdomain is at most 253 bytes; a qualified
/// finalizer name adds a prefix).
pub(crate) const MAX_NAME_BYTES: usize = 317;
/// Largest event note (the events API refuses longer ones).
pub(crate) const MAX_EVENT_NOTE_BYTES: usize = 1024;
/// Largest event reason and action (the events API's limit).
pub(crate) const MAX_EVENT_REASON_BYTES: usize = 128;
/// Largest request body to a Ray head (a job submission with its runtime environment fits).
pub(crate) const MAX_RAY_BODY_BYTES: usize = 4 << 20;
/// Largest path (query included) of a request to a Ray head.
pub(crate) const MAX_RAY_PATH_BYTES: usize = 4096;
/// Headers of a request to a Ray head, and their total size.
pub(crate) const MAX_RAY_HEADERS: usize = 32;
pub(crate) const MAX_RAY_HEADER_BYTES: usize = 16 << 10;

/// How much one call (one reconcile or cleanup) may ask of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBudget {
    /// Host calls of any kind (reads, writes, events, Ray requests; not log lines).
    pub host_calls: u32,
    /// Creates, applies, status applies, deletes and finalizer changes.
    pub writes: u32,
    /// Events recorded.
    pub events: u32,
    /// Objects one list may return.
    pub list_items: usize,
}

impl Default for CallBudget {
    /// Well above what KubeRay's controllers do in one reconcile of a large cluster.
    fn default() -> Self {
        Self {
            host_calls: 5000,
            writes: 1000,
            events: 100,
            list_items: 10_000,
        }
    }
}

/// A breach of a limit: which one (a fixed name, used as a metric label) and what happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Exceeded {
    /// One of the fixed limit names (`host-calls`, `writes`, `events`, `list-items`, `object-size`, ...).
    pub(crate) limit: &'static str,
    pub(crate) message: String,
}

/// What a call has used so far.
#[derive(Debug, Default)]
pub(crate) struct Usage {
    budget: CallBudget,
    host_calls: u32,
    writes: u32,
    events: u32,
    /// The first breach, if any.
    pub(crate) exceeded: Option<Exceeded>,
    /// Whether the first breach was logged and counted.
    pub(crate) reported: bool,
}

/// What a host call costs, besides being one host call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cost {
    Read,
    Write,
    Event,
}

impl Usage {
    pub(crate) fn new(budget: CallBudget) -> Self {
        Self {
            budget,
            ..Self::default()
        }
    }

    /// Charges one host call. After a breach every further call is refused with the same breach.
    pub(crate) fn charge(&mut self, cost: Cost) -> Result<(), Exceeded> {
        if let Some(exceeded) = &self.exceeded {
            return Err(exceeded.clone());
        }
        self.host_calls = self.host_calls.saturating_add(1);
        let (limit, used, allowed, what) = match cost {
            Cost::Write => {
                self.writes = self.writes.saturating_add(1);
                ("writes", self.writes, self.budget.writes, "writes")
            }
            Cost::Event => {
                self.events = self.events.saturating_add(1);
                ("events", self.events, self.budget.events, "events")
            }
            Cost::Read => (
                "host-calls",
                self.host_calls,
                self.budget.host_calls,
                "host calls",
            ),
        };
        if used > allowed {
            return self.breach(limit, format!("more than {allowed} {what} in one reconcile"));
        }
        if self.host_calls > self.budget.host_calls {
            let allowed = self.budget.host_calls;
            return self.breach(
                "host-calls",
                format!("more than {allowed} host calls in one reconcile"),
            );
        }
        Ok(())
    }

    /// Checks the size of a string the plugin passed.
    pub(crate) fn input(&mut self, what: &'static str, len: usize, max: usize) -> Result<(), Exceeded> {
        if len > max {
            return self.breach(
                "input-size",
                format!("{what} of {len} bytes is larger than the limit of {max} bytes"),
            );
        }
        Ok(())
    }

    /// Checks the number of objects a list returns.
    pub(crate) fn list(&mut self, items: usize) -> Result<(), Exceeded> {
        let max = self.budget.list_items;
        if items > max {
            return self.breach(
                "list-items",
                format!("a list of {items} objects is longer than the limit of {max}"),
            );
        }
        Ok(())
    }

    fn breach(&mut self, limit: &'static str, message: String) -> Result<(), Exceeded> {
        let exceeded = Exceeded {
            limit,
            message: format!("plugin limit exceeded: {message}"),
        };
        self.exceeded.get_or_insert_with(|| exceeded.clone());
        Err(exceeded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_writes_and_events_are_counted_against_the_budget() {
        let budget = CallBudget {
            host_calls: 5,
            writes: 2,
            events: 1,
            list_items: 3,
        };
        let mut usage = Usage::new(budget);
        assert!(usage.charge(Cost::Write).is_ok());
        assert!(usage.charge(Cost::Write).is_ok());
        let breach = usage.charge(Cost::Write).unwrap_err();
        assert_eq!(breach.limit, "writes");
        // Once exceeded, everything else is refused too.
        assert_eq!(usage.charge(Cost::Read).unwrap_err(), breach);

        let mut usage = Usage::new(budget);
        assert!(usage.charge(Cost::Event).is_ok());
        assert_eq!(usage.charge(Cost::Event).unwrap_err().limit, "events");

        let mut usage = Usage::new(budget);
        for _ in 0..5 {
            assert!(usage.charge(Cost::Read).is_ok());
        }
        assert_eq!(usage.charge(Cost::Read).unwrap_err().limit, "host-calls");
    }

    #[test]
    fn oversized_inputs_and_lists_are_refused() {
        let mut usage = Usage::new(CallBudget::default());
        assert!(usage.input("object", 10, 10).is_ok());
        let breach = usage.input("object", 11, 10).unwrap_err();
        assert_eq!(breach.limit, "input-size");
        assert!(
            breach.message.contains("object of 11 bytes"),
            "{}",
            breach.message
        );
        assert_eq!(usage.exceeded, Some(breach));

        let mut usage = Usage::new(CallBudget::default());
        assert!(usage.list(10_000).is_ok());
        assert_eq!(usage.list(10_001).unwrap_err().limit, "list-items");
    }
}
