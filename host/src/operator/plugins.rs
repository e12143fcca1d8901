//! The plugins of the plugin directory, loaded (compiled) at start-up by every replica, leader or standby,
//! and rescanned when the directory changes: the set of reconciled kinds they make is what each term runs
//! controllers for.

use std::{collections::BTreeSet, path::Path, sync::Arc, time::Duration};

use kuberay_plugin_sdk::Kind;
use tokio::sync::watch;

use crate::{plugin_watch::DirWatch, sandbox::Sandbox};

/// Scans `dir` once and adds the kinds of the plugins it loaded to `kinds`.
pub(super) async fn load(sandbox: &Sandbox, dir: &Path, kinds: &watch::Sender<BTreeSet<Kind>>) {
    match sandbox.scan(dir).await {
        Ok(report) => {
            if report.loaded.is_empty() {
                tracing::warn!(dir = %dir.display(), "no plugin loaded; nothing will be reconciled until one is");
            }
            add(kinds, report.new_kinds);
        }
        Err(e) => tracing::error!(error = %e, "could not read the plugin directory"),
    }
}

/// Rescans `dir` whenever `dir_watch` reports a change (at least every `interval`), forever.
pub(super) async fn reload(
    sandbox: Arc<Sandbox>,
    dir: &Path,
    dir_watch: Option<(Duration, DirWatch)>,
    kinds: &watch::Sender<BTreeSet<Kind>>,
) {
    let Some((interval, mut dir_watch)) = dir_watch else {
        return std::future::pending().await;
    };
    loop {
        dir_watch.changed(interval).await;
        match sandbox.scan(dir).await {
            Ok(report) => add(kinds, report.new_kinds),
            Err(e) => tracing::warn!(error = %e, "could not rescan the plugin directory"),
        }
    }
}

fn add(kinds: &watch::Sender<BTreeSet<Kind>>, new: impl IntoIterator<Item = Kind>) {
    let new: Vec<Kind> = new.into_iter().collect();
    if !new.is_empty() {
        kinds.send_modify(|kinds| kinds.extend(new));
    }
}
