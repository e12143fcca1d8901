//! One attempt to acquire or renew the Lease, and its release. Every update carries the `resourceVersion`
//! it was computed from, so two replicas racing for the Lease cannot both win: the API server refuses the
//! second with a conflict.

use std::time::{Duration, Instant};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{Api, Client, api::PostParams};

/// The Lease as a candidate last saw it, and when (its own clock) it last saw it change.
#[derive(Debug, Default)]
pub(super) struct Observed {
    record: Option<Record>,
    changed_at: Option<Instant>,
}

/// What tells one holder's renewal from the next.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    holder: String,
    renew_time: Option<Timestamp>,
    transitions: i32,
}

impl Observed {
    fn see(&mut self, spec: &LeaseSpec) -> &Record {
        let record = Record {
            holder: spec.holder_identity.clone().unwrap_or_default(),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or_default(),
        };
        if self.record.as_ref() != Some(&record) {
            self.changed_at = Some(Instant::now());
        }
        self.record.insert(record)
    }

    /// Whether the holder last seen has not renewed for `duration`.
    fn expired(&self, duration: Duration) -> bool {
        self.changed_at.is_none_or(|at| at.elapsed() >= duration)
    }
}

/// The result of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Attempt {
    /// This replica holds the Lease (acquired or renewed).
    Held,
    /// Another replica holds it and has renewed within the lease duration.
    HeldBy(String),
}

/// The Lease of one election, seen by one replica.
pub(super) struct LeaseLock {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
}

impl LeaseLock {
    pub(super) fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        duration: Duration,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity: identity.to_string(),
            duration,
        }
    }

    /// Acquires the Lease if it is free, released or expired, renews it if this replica holds it.
    pub(super) async fn try_acquire_or_renew(&self, observed: &mut Observed) -> Result<Attempt, kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return self.create().await;
        };
        let spec = lease.spec.take().unwrap_or_default();
        let record = observed.see(&spec).clone();
        let ours = record.holder == self.identity;
        if !ours && !record.holder.is_empty() && !observed.expired(self.duration) {
            return Ok(Attempt::HeldBy(record.holder));
        }
        let now = MicroTime(Timestamp::now());
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(seconds(self.duration)),
            acquire_time: if ours {
                spec.acquire_time
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if ours {
                record.transitions
            } else {
                record.transitions.saturating_add(1)
            }),
            ..LeaseSpec::default()
        });
        // `replace` sends the resourceVersion read above: a concurrent change makes it a conflict.
        let replaced = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        if let Some(spec) = &replaced.spec {
            observed.see(spec);
        }
        Ok(Attempt::Held)
    }

    async fn create(&self) -> Result<Attempt, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(seconds(self.duration)),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(Attempt::Held),
            // Another replica created it first; it is theirs until it expires.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(Attempt::HeldBy(String::from("(unknown)"))),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up, if this replica still holds it: the holder is cleared, so a standby takes over
    /// at its next retry instead of waiting for the lease to expire.
    pub(super) async fn release(&self) -> Result<bool, kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(false);
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(false);
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(false);
        }
        spec.holder_identity = None;
        spec.acquire_time = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        Ok(true)
    }
}

/// A duration in whole seconds, rounded up (the Lease's `leaseDurationSeconds`).
fn seconds(duration: Duration) -> i32 {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    i32::try_from(seconds).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, renewed_at: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Timestamp::from_second(renewed_at).ok().map(MicroTime),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_holder_expires_only_after_a_lease_duration_without_a_change_seen() {
        let duration = Duration::from_millis(100);
        let mut observed = Observed::default();
        assert!(observed.expired(duration), "never seen: free to take");
        observed.see(&spec("other", 1));
        assert!(!observed.expired(duration));
        std::thread::sleep(Duration::from_millis(60));
        // A renewal (new renewTime) restarts the wait; the same record seen again does not.
        observed.see(&spec("other", 2));
        std::thread::sleep(Duration::from_millis(60));
        assert!(!observed.expired(duration));
        observed.see(&spec("other", 2));
        std::thread::sleep(Duration::from_millis(60));
        assert!(observed.expired(duration));
    }

    #[test]
    fn lease_durations_round_up_to_whole_seconds() {
        assert_eq!(seconds(Duration::from_secs(15)), 15);
        assert_eq!(seconds(Duration::from_millis(1500)), 2);
    }
}
