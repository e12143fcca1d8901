//! When to rescan the plugin directory: as soon as the filesystem says it changed (inotify on Linux, through
//! `notify`), and in any case every reload interval, the fallback for filesystems without notifications
//! (network mounts) and for a watch that could not be set up.
//!
//! Events are coalesced: a rescan starts once the directory has been quiet for [`QUIET`] (a plugin copied in
//! place, rather than written aside and renamed, is several writes), or [`MAX_WAIT`] after the first event,
//! whichever comes first. A rescan of a half-written file fails like any broken plugin (the running version
//! stays) and the closing write wakes another one.

use std::{path::Path, time::Duration};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// How long the directory must be quiet before a rescan.
const QUIET: Duration = Duration::from_millis(100);
/// The longest a rescan waits for quiet after the first event.
const MAX_WAIT: Duration = Duration::from_secs(1);

/// A wake-up source for the rescan loop.
pub(crate) struct DirWatch {
    /// Kept alive for its events; `None` when the directory cannot be watched.
    _watcher: Option<notify::RecommendedWatcher>,
    events: mpsc::Receiver<()>,
}

impl DirWatch {
    /// Watches `dir` (not recursively); on failure logs why and falls back to the interval alone.
    pub(crate) fn new(dir: &Path) -> Self {
        let (tx, events) = mpsc::channel(1);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok() {
                // A full channel already holds a wake-up; this one adds nothing.
                let _ = tx.try_send(());
            }
        })
        .and_then(|mut w| w.watch(dir, RecursiveMode::NonRecursive).map(|()| w));
        let watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e,
                    "cannot watch the plugin directory; rescanning on the reload interval only");
                None
            }
        };
        Self {
            _watcher: watcher,
            events,
        }
    }

    /// Resolves when the directory changed (and settled), or after `fallback`.
    pub(crate) async fn changed(&mut self, fallback: Duration) {
        tokio::select! {
            Some(()) = self.events.recv() => {}
            () = tokio::time::sleep(fallback) => return,
        }
        let deadline = tokio::time::Instant::now() + MAX_WAIT;
        loop {
            let quiet = tokio::time::sleep(QUIET);
            tokio::select! {
                Some(()) = self.events.recv() => {
                    if tokio::time::Instant::now() >= deadline {
                        return;
                    }
                }
                () = quiet => return,
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_new_file_wakes_the_watch_long_before_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = DirWatch::new(dir.path());
        let path = dir.path().join("plugin.wasm");
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            std::fs::write(path, b"component").unwrap();
        });
        let woke =
            tokio::time::timeout(Duration::from_secs(30), watch.changed(Duration::from_secs(3600))).await;
        assert!(woke.is_ok(), "no wake-up for a new file");
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn without_changes_the_fallback_wakes_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = DirWatch::new(dir.path());
        let woke =
            tokio::time::timeout(Duration::from_secs(30), watch.changed(Duration::from_millis(20))).await;
        assert!(woke.is_ok());
    }

    #[tokio::test]
    async fn an_unwatchable_directory_still_wakes_on_the_fallback() {
        let mut watch = DirWatch::new(Path::new("/nonexistent/kuberay-wasm/plugins"));
        assert!(watch._watcher.is_none());
        let woke =
            tokio::time::timeout(Duration::from_secs(30), watch.changed(Duration::from_millis(20))).await;
        assert!(woke.is_ok());
    }
}
