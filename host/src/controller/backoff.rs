//! Failures in a row per object, and the exponential delay before the next attempt.

use std::{collections::HashMap, sync::Mutex, time::Duration};

const FIRST: Duration = Duration::from_secs(1);
const MAX: Duration = Duration::from_secs(300);
/// Objects whose failures are remembered at most. An entry goes when its object reconciles or is gone;
/// past the cap (objects deleted while failing, never seen again), an arbitrary entry is forgotten, which
/// only restarts that object's backoff.
const CAP: usize = 50_000;

/// `1s, 2s, 4s, ...` up to five minutes.
pub(crate) fn delay(attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    FIRST.saturating_mul(factor).min(MAX)
}

#[derive(Default)]
pub(crate) struct Failures {
    counts: Mutex<HashMap<String, u32>>,
}

impl Failures {
    pub(crate) fn get(&self, key: &str) -> u32 {
        self.lock().get(key).copied().unwrap_or(0)
    }

    /// Records a failure; returns the number in a row.
    pub(crate) fn record(&self, key: &str) -> u32 {
        let mut counts = self.lock();
        if counts.len() >= CAP && !counts.contains_key(key) {
            let victim = counts.keys().next().cloned();
            if let Some(victim) = victim {
                counts.remove(&victim);
            }
        }
        let count = counts.entry(key.to_string()).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    pub(crate) fn reset(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Objects with failures remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_five_minutes() {
        assert_eq!(delay(1), Duration::from_secs(1));
        assert_eq!(delay(4), Duration::from_secs(8));
        assert_eq!(delay(30), Duration::from_secs(300));
        let failures = Failures::default();
        assert_eq!(
            (failures.record("a"), failures.record("a"), failures.get("b")),
            (1, 2, 0)
        );
        failures.reset("a");
        assert_eq!(failures.get("a"), 0);
    }

    #[test]
    fn failures_stay_within_the_cap() {
        let failures = Failures::default();
        for i in 0..CAP + 10 {
            failures.record(&format!("k{i}"));
        }
        assert_eq!(failures.len(), CAP);
    }
}
