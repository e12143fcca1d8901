//! Reconcile permits, shared fairly between plugins. `--concurrency` bounds the reconciles running at once
//! across all kinds. Each plugin is always entitled to its fair share (the permits divided by the plugins
//! loaded, rounded up); beyond that it may borrow permits nobody uses, except one kept free for each other
//! plugin that holds none. So a busy kind uses the operator's whole concurrency while the others are idle
//! (a thousand RayClusters coming up are not held to a quarter of it because RayJob, RayService and
//! RayCronJob plugins are loaded), and a plugin whose calls all run into the timeout cannot starve the
//! others: each of them gets in at once, and back to its fair share as the borrowed permits come back.

use std::{collections::HashMap, sync::Mutex};

use tokio::sync::{Notify, Semaphore, SemaphorePermit};

/// The operator's reconcile permits.
pub(crate) struct Permits {
    global: Semaphore,
    total: usize,
    /// Permits held (or being waited for) per plugin; entries go when they drop to zero.
    held: Mutex<HashMap<String, usize>>,
    released: Notify,
}

/// One running reconcile's permit; released when dropped.
pub(crate) struct Permit<'a> {
    _share: Share<'a>,
    _global: SemaphorePermit<'a>,
}

/// A place in a plugin's share; given back when dropped.
struct Share<'a> {
    permits: &'a Permits,
    plugin: String,
}

impl Permits {
    /// `total` permits (at least one).
    pub(crate) fn new(total: usize) -> Self {
        let total = total.max(1);
        Self {
            global: Semaphore::new(total),
            total,
            held: Mutex::default(),
            released: Notify::new(),
        }
    }

    /// The most permits one plugin may hold while `plugins` are loaded.
    pub(crate) fn share(&self, plugins: usize) -> usize {
        self.total.div_ceil(plugins.max(1)).max(1)
    }

    /// Waits for a permit for `plugin` (one of `plugins` loaded); `None` once the permits are closed.
    pub(crate) async fn acquire(&self, plugin: &str, plugins: usize) -> Option<Permit<'_>> {
        let share = self.share(plugins);
        loop {
            // Registered before the check, so a release in between is not missed.
            let released = self.released.notified();
            if self.reserve(plugin, share, plugins) {
                break;
            }
            released.await;
        }
        let share = Share {
            permits: self,
            plugin: plugin.to_string(),
        };
        let global = self.global.acquire().await.ok()?;
        Some(Permit {
            _share: share,
            _global: global,
        })
    }

    /// Takes a place for `plugin` within its share, or a borrowed one (see the module docs).
    fn reserve(&self, plugin: &str, share: usize, plugins: usize) -> bool {
        let mut held = self.lock();
        let mine = held.get(plugin).copied().unwrap_or(0);
        let in_use: usize = held.values().sum();
        let others_busy = held.len() - usize::from(mine > 0);
        let kept_free = plugins.saturating_sub(1).saturating_sub(others_busy);
        if mine >= share && in_use + kept_free >= self.total {
            return false;
        }
        *held.entry(plugin.to_string()).or_insert(0) += 1;
        true
    }

    fn release(&self, plugin: &str) {
        {
            let mut held = self.lock();
            if let Some(count) = held.get_mut(plugin) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    held.remove(plugin);
                }
            }
        }
        self.released.notify_waiters();
    }

    /// Permits `plugin` holds or is about to hold.
    #[cfg(test)]
    pub(crate) fn held_by(&self, plugin: &str) -> usize {
        self.lock().get(plugin).copied().unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        self.permits.release(&self.plugin);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_busy_plugin_cannot_take_the_permits_another_needs() {
        let permits = Permits::new(4);
        assert_eq!(permits.share(1), 4);
        assert_eq!(permits.share(2), 2);
        assert_eq!(permits.share(3), 2);
        assert_eq!(permits.share(8), 1);
        // The hog takes its share of two and borrows a third; the fourth is kept for the idle plugin.
        let first = permits.acquire("hog", 2).await.unwrap();
        let _second = permits.acquire("hog", 2).await.unwrap();
        let _third = permits.acquire("hog", 2).await.unwrap();
        let fourth = tokio::time::timeout(Duration::from_millis(50), permits.acquire("hog", 2)).await;
        assert!(fourth.is_err(), "a plugin took the permit kept for another");
        assert_eq!(permits.held_by("hog"), 3);
        // The other plugin still gets in.
        let other = tokio::time::timeout(Duration::from_millis(50), permits.acquire("other", 2)).await;
        assert!(matches!(other, Ok(Some(_))), "the other plugin was starved");
        // Its second reconcile, within its share, runs as soon as the hog gives a permit back; the hog's
        // next one does not take it first.
        let others_next = permits.acquire("other", 2);
        let hogs_next = permits.acquire("hog", 2);
        drop(first);
        let next = tokio::time::timeout(Duration::from_millis(50), others_next).await;
        assert!(matches!(next, Ok(Some(_))));
        assert!(
            tokio::time::timeout(Duration::from_millis(50), hogs_next)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_busy_plugin_borrows_what_idle_plugins_leave() {
        // Eight permits, four plugins loaded (a share of two), one busy: it runs five at once, one permit
        // stays free for each idle plugin.
        let permits = Permits::new(8);
        let mut held = Vec::new();
        while let Ok(Some(permit)) =
            tokio::time::timeout(Duration::from_millis(20), permits.acquire("busy", 4)).await
        {
            held.push(permit);
        }
        assert_eq!(held.len(), 5);
        for plugin in ["a", "b", "c"] {
            let got = tokio::time::timeout(Duration::from_millis(50), permits.acquire(plugin, 4)).await;
            assert!(matches!(got, Ok(Some(_))), "{plugin} was starved");
        }
    }

    #[tokio::test]
    async fn a_plugin_alone_gets_every_permit_and_entries_go_when_released() {
        let permits = Permits::new(3);
        let all: Vec<_> = futures::future::join_all((0..3).map(|_| permits.acquire("only", 1)))
            .await
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(all.len(), 3);
        drop(all);
        assert_eq!(permits.held_by("only"), 0);
        assert!(permits.lock().is_empty());
    }
}
