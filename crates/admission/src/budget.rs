//! The host-side work one plugin call may cause. A plugin chooses the sizes of the strings it hands the host
//! and how often it calls; without bounds, a few bytes of guest code could make the host parse gigabytes of
//! JSON, send thousands of writes to the API server or fill the event stream. Every host call is charged
//! here before the host does any work for it: the strings it passes are checked against fixed caps, and the
//! calls, writes, written bytes and events of one reconcile against the call's [`CallBudget`]. The first
//! breach is remembered; the call then fails as `PluginLimitExceeded` (the guest is stopped at its next
//! epoch tick).
//!
//! Across calls, a plugin's written bytes and its events are metered by token buckets ([`TokenBucket`], sized
//! by [`RateBudget`]) shared by all its calls: requeueing every 200 ms does not multiply what one call may
//! do. Bytes over the rate fail the call like any other breach; events over it are dropped
//! (`kubernetes::events`). Both budgets come from the plugin's policy entry (`budget:`), the operator's
//! defaults ([`CallBudget::default`]) where it says nothing.

use std::{sync::Mutex, time::Instant};

use kuberay_core::Kind;

/// Largest object (JSON text) a plugin may create or apply: etcd's default request limit.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;
/// Largest label selector.
pub const MAX_SELECTOR_BYTES: usize = 4096;
/// Largest name, group, version, kind or finalizer (a DNS subdomain is at most 253 bytes; a qualified
/// finalizer name adds a prefix).
pub const MAX_NAME_BYTES: usize = 317;
/// Largest event note (the events API refuses longer ones).
pub const MAX_EVENT_NOTE_BYTES: usize = 1024;
/// Largest event reason and action (the events API's limit).
pub const MAX_EVENT_REASON_BYTES: usize = 128;
/// Largest request body to a Ray head (a job submission with its runtime environment fits).
pub const MAX_RAY_BODY_BYTES: usize = 4 << 20;
/// Largest path (query included) of a request to a Ray head.
pub const MAX_RAY_PATH_BYTES: usize = 4096;
/// Headers of a request to a Ray head, and their total size.
pub const MAX_RAY_HEADERS: usize = 32;
pub const MAX_RAY_HEADER_BYTES: usize = 16 << 10;

/// A size check of something a plugin passed to a host call: what it is, its size and its limit.
pub type Input = (&'static str, usize, usize);

/// The size check of a kind (its longest part).
pub fn kind_input(kind: &Kind) -> Input {
    let len = kind.group.len().max(kind.version.len()).max(kind.kind.len());
    ("kind", len, MAX_NAME_BYTES)
}

/// The size checks of an event: its note, reason and action, and the kind and name of the object it is
/// also about.
pub fn event_inputs(note: &str, reason: &str, action: &str, related: Option<(&Kind, &str)>) -> Vec<Input> {
    let mut inputs = vec![
        ("event note", note.len(), MAX_EVENT_NOTE_BYTES),
        ("event reason", reason.len(), MAX_EVENT_REASON_BYTES),
        ("event action", action.len(), MAX_EVENT_REASON_BYTES),
    ];
    if let Some((kind, name)) = related {
        inputs.push(kind_input(kind));
        inputs.push(("related name", name.len(), MAX_NAME_BYTES));
    }
    inputs
}

/// The size checks of a request to a Ray head: cluster name, method, path, body and headers.
pub fn ray_inputs(
    cluster: &str,
    method: &str,
    path: &str,
    body: usize,
    headers: &[(String, String)],
) -> [Input; 6] {
    let header_bytes = headers.iter().map(|(k, v)| k.len() + v.len()).sum();
    [
        ("cluster name", cluster.len(), MAX_NAME_BYTES),
        ("method", method.len(), 16),
        ("path", path.len(), MAX_RAY_PATH_BYTES),
        ("request body", body, MAX_RAY_BODY_BYTES),
        ("header count", headers.len(), MAX_RAY_HEADERS),
        ("headers", header_bytes, MAX_RAY_HEADER_BYTES),
    ]
}

/// How much one call (one reconcile or cleanup) may ask of the host, and (`rates`) how much all of a
/// plugin's calls together may ask over time.
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
    /// Bytes of the objects and statuses created and applied (their JSON text, as the plugin passed it).
    pub write_bytes: u64,
    /// Across calls.
    pub rates: RateBudget,
}

impl Default for CallBudget {
    /// Well above what KubeRay's controllers do in one reconcile of a large cluster (a worker Pod of KubeRay's
    /// sample as the RayCluster plugin writes it is 4.1 KiB, its head Service 1 KiB: a reconcile creating
    /// 1000 workers writes about 4 MiB).
    fn default() -> Self {
        Self {
            host_calls: 5000,
            writes: 1000,
            events: 100,
            list_items: 10_000,
            write_bytes: 8 << 20,
            rates: RateBudget::default(),
        }
    }
}

/// What all of one plugin's calls together may ask of the host over time: a burst, then a steady rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateBudget {
    /// Events recorded in a burst, and per second after it; beyond, events are dropped and counted.
    pub event_burst: u32,
    pub events_per_second: u32,
    /// Bytes written in a burst, and per second after it; beyond, the call fails as `PluginLimitExceeded`.
    pub write_bytes_burst: u64,
    pub write_bytes_per_second: u64,
}

impl Default for RateBudget {
    /// A thousand RayClusters created at once (about 4,000 events and 20 MiB of Pods, Services and statuses in
    /// a minute) stay within it; a plugin flooding from many objects at once does not.
    fn default() -> Self {
        Self {
            event_burst: 1000,
            events_per_second: 50,
            write_bytes_burst: 64 << 20,
            write_bytes_per_second: 8 << 20,
        }
    }
}

/// A token bucket: `burst` tokens, refilled at `per_second`, shared by whoever holds it. A few lines rather
/// than a crate: `governor`'s buckets hold whole cells of at most `u32`, and this one meters bytes as well
/// as events.
#[derive(Debug)]
pub struct TokenBucket {
    burst: f64,
    per_second: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(burst: u64, per_second: u64) -> Self {
        let burst = burst as f64;
        Self {
            burst,
            per_second: per_second as f64,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Takes `n` tokens if there are that many.
    pub fn take(&self, n: u64) -> bool {
        self.take_at(n, Instant::now())
    }

    pub fn take_at(&self, n: u64, now: Instant) -> bool {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (tokens, at) = *state;
        let refilled = now.saturating_duration_since(at).as_secs_f64() * self.per_second;
        let tokens = (tokens + refilled).min(self.burst);
        let wanted = n as f64;
        let (left, taken) = if tokens >= wanted {
            (tokens - wanted, true)
        } else {
            (tokens, false)
        };
        *state = (left, now.max(at));
        taken
    }
}

/// A breach of a limit: which one (a fixed name, used as a metric label) and what happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Exceeded {
    /// One of the fixed limit names (`host-calls`, `writes`, `events`, `list-items`, `object-size`, ...).
    pub limit: &'static str,
    pub message: String,
}

/// What a call has used so far.
#[derive(Debug, Default)]
pub struct Usage {
    budget: CallBudget,
    host_calls: u32,
    writes: u32,
    events: u32,
    write_bytes: u64,
    /// The first breach, if any.
    pub exceeded: Option<Exceeded>,
    /// Whether the first breach was logged and counted.
    pub reported: bool,
}

/// What a host call costs, besides being one host call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    Read,
    Write,
    Event,
}

impl Usage {
    pub fn new(budget: CallBudget) -> Self {
        Self {
            budget,
            ..Self::default()
        }
    }

    /// Charges one host call. After a breach every further call is refused with the same breach.
    pub fn charge(&mut self, cost: Cost) -> Result<(), Exceeded> {
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
    pub fn input(&mut self, what: &'static str, len: usize, max: usize) -> Result<(), Exceeded> {
        if len > max {
            return self.breach(
                "input-size",
                format!("{what} of {len} bytes is larger than the limit of {max} bytes"),
            );
        }
        Ok(())
    }

    /// Checks the sizes of what the plugin passed, in order; the first breach ends the check.
    pub fn inputs(&mut self, inputs: &[Input]) -> Result<(), Exceeded> {
        inputs
            .iter()
            .try_for_each(|(what, len, max)| self.input(what, *len, *max))
    }

    /// Charges the bytes of an object or status to write: to this call's budget, then to the plugin's rate
    /// across calls (`rate`, which is only charged when the call's budget allows the write).
    pub fn write_bytes(&mut self, len: usize, rate: &TokenBucket) -> Result<(), Exceeded> {
        if let Some(exceeded) = &self.exceeded {
            return Err(exceeded.clone());
        }
        self.write_bytes = self.write_bytes.saturating_add(len as u64);
        let max = self.budget.write_bytes;
        if self.write_bytes > max {
            return self.breach(
                "write-bytes",
                format!("more than {max} bytes written in one reconcile"),
            );
        }
        if !rate.take(len as u64) {
            let (burst, per_second) = (
                self.budget.rates.write_bytes_burst,
                self.budget.rates.write_bytes_per_second,
            );
            return self.breach(
                "write-bytes-rate",
                format!(
                    "the plugin writes more than {per_second} bytes per second (after a burst of {burst}) across its reconciles; retried later"
                ),
            );
        }
        Ok(())
    }

    /// Checks the number of objects a list returns.
    pub fn list(&mut self, items: usize) -> Result<(), Exceeded> {
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
            ..CallBudget::default()
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

    #[test]
    fn written_bytes_are_bounded_per_call_and_across_calls() {
        let budget = CallBudget {
            write_bytes: 100,
            ..CallBudget::default()
        };
        let plenty = TokenBucket::new(1000, 0);
        let mut usage = Usage::new(budget);
        assert!(usage.write_bytes(60, &plenty).is_ok());
        assert!(usage.write_bytes(40, &plenty).is_ok());
        let breach = usage.write_bytes(1, &plenty).unwrap_err();
        assert_eq!(breach.limit, "write-bytes");
        assert!(
            breach.message.contains("more than 100 bytes"),
            "{}",
            breach.message
        );
        // The bucket was not charged for the write the call refused.
        assert!(plenty.take(900));
        assert!(!plenty.take(1));

        // A fresh call of the same plugin is refused once the shared bucket is empty.
        let shared = TokenBucket::new(150, 0);
        assert!(Usage::new(budget).write_bytes(100, &shared).is_ok());
        let mut next = Usage::new(budget);
        assert_eq!(
            next.write_bytes(100, &shared).unwrap_err().limit,
            "write-bytes-rate"
        );
        assert!(next.exceeded.is_some());
    }

    #[test]
    fn a_token_bucket_allows_a_burst_then_its_rate() {
        let bucket = TokenBucket::new(10, 5);
        let start = Instant::now();
        assert!((0..10).all(|_| bucket.take_at(1, start)));
        assert!(!bucket.take_at(1, start));
        let second = start + std::time::Duration::from_secs(1);
        assert!((0..5).all(|_| bucket.take_at(1, second)));
        assert!(!bucket.take_at(1, second));
        // Never more than the burst, however long it rested; more than the burst at once never passes.
        let later = start + std::time::Duration::from_secs(3600);
        assert!(!bucket.take_at(11, later));
        assert!(bucket.take_at(10, later));
        // A clock that goes backwards refills nothing.
        assert!(!bucket.take_at(1, start));
    }
}
