//! Finding and removing what a test environment leaves behind when its supervisor is killed outright
//! (SIGKILL gives it no chance to clean up): control-plane processes, pod network namespaces with their Ray
//! processes, the bridge and the state directory. A supervisor sweeps stale environments when it starts, and
//! `kuberay-testenv leftovers` checks that nothing remains after a test run.

use std::path::{Path, PathBuf};

use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};

use crate::{info::is_supervisor_alive, network};

/// State directories live in the system temp dir under this prefix, followed by the instance id.
pub const STATE_DIR_PREFIX: &str = "kuberay-testenv.";
/// The file in a state directory that names its supervisor.
pub const SUPERVISOR_PID_FILE: &str = "supervisor.pid";
/// The file in a state directory that lists the component processes.
pub const COMPONENT_PIDS_FILE: &str = "components.pids";

pub fn state_dir_for(instance: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{STATE_DIR_PREFIX}{instance}"))
}

/// The network-object prefix of one instance (namespaces `kwt-<id>-N`, links `kwtb<id>`, `kwtv<id>-N`).
pub fn network_prefixes(instance: &str) -> [String; 3] {
    let p = network::NAME_PREFIX;
    [
        format!("{p}-{instance}-"),
        format!("{p}b{instance}"),
        format!("{p}v{instance}-"),
    ]
}

/// Every environment's state directory with its supervisor pid, if it recorded one.
pub fn state_dirs() -> Vec<(String, PathBuf, Option<u32>)> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let instance = name.strip_prefix(STATE_DIR_PREFIX)?.to_string();
            let pid = read_pids(&e.path().join(SUPERVISOR_PID_FILE)).first().copied();
            Some((instance, e.path(), pid))
        })
        .collect()
}

fn read_pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// Removes every environment whose supervisor is no longer running.
pub async fn sweep() {
    for (instance, dir, pid) in state_dirs() {
        let alive = match pid {
            Some(pid) => is_supervisor_alive(pid),
            // A supervisor creates its directory a moment before it records its pid there; a directory
            // without a pid is only stale once it is older than any start-up.
            None => is_recent(&dir),
        };
        if alive {
            continue;
        }
        tracing::info!(%instance, dir = %dir.display(), "removing a stale test environment");
        remove_instance(&instance, &dir).await;
    }
}

/// How long a state directory may lack its supervisor's pid before it counts as abandoned.
const PID_GRACE: std::time::Duration = std::time::Duration::from_secs(120);

fn is_recent(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age < PID_GRACE)
}

/// Kills an instance's recorded processes, removes its network objects and its state directory.
pub async fn remove_instance(instance: &str, dir: &Path) {
    for pid in read_pids(&dir.join(COMPONENT_PIDS_FILE)) {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    let (namespaces, links) = instance_network_objects(instance).await;
    network::remove_objects(&namespaces, &links).await;
    let _ = std::fs::remove_dir_all(dir);
}

async fn instance_network_objects(instance: &str) -> (Vec<String>, Vec<String>) {
    let prefixes = network_prefixes(instance);
    let (namespaces, links) = network::objects_with_prefix(network::NAME_PREFIX).await;
    let keep = |name: &String| prefixes.iter().any(|p| name.starts_with(p.as_str()));
    (
        namespaces.into_iter().filter(keep).collect(),
        links.into_iter().filter(keep).collect(),
    )
}

/// What any test environment has left on this machine: state directories, network objects and processes
/// started from the project's control-plane binaries or virtualenv.
#[derive(Debug, Default)]
pub struct Leftovers {
    pub state_dirs: Vec<PathBuf>,
    pub namespaces: Vec<String>,
    pub links: Vec<String>,
    pub processes: Vec<String>,
}

impl Leftovers {
    pub fn is_empty(&self) -> bool {
        self.state_dirs.is_empty()
            && self.namespaces.is_empty()
            && self.links.is_empty()
            && self.processes.is_empty()
    }
}

/// Looks for leftovers of every environment except those in `except` (instance ids still in use).
pub async fn leftovers(project_local_dir: &Path, except: &[String]) -> Leftovers {
    let skip = |name: &str| {
        except
            .iter()
            .any(|i| network_prefixes(i).iter().any(|p| name.starts_with(p.as_str())))
    };
    let state_dirs = state_dirs()
        .into_iter()
        .filter(|(instance, _, _)| !except.contains(instance))
        .map(|(_, dir, _)| dir)
        .collect();
    let (namespaces, links) = network::objects_with_prefix(network::NAME_PREFIX).await;
    let mut in_use_pids = Vec::new();
    for ns in namespaces.iter().filter(|n| skip(n)) {
        in_use_pids.extend(
            network::namespace_pids(ns)
                .await
                .into_iter()
                .filter_map(|p| u32::try_from(p).ok()),
        );
    }
    let namespaces = namespaces.into_iter().filter(|n| !skip(n)).collect();
    let links = links.into_iter().filter(|n| !skip(n)).collect();
    let local = project_local_dir.to_string_lossy().into_owned();
    let mut processes = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if pid == std::process::id() || in_use_pids.contains(&pid) {
                continue;
            }
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let ours =
                cmdline.contains(&format!("{local}/bin/")) || cmdline.contains(&format!("{local}/venv/"));
            let in_use = except
                .iter()
                .any(|i| cmdline.contains(&format!("{STATE_DIR_PREFIX}{i}")));
            if ours && !in_use {
                processes.push(format!("{pid}: {}", cmdline.trim()));
            }
        }
    }
    Leftovers {
        state_dirs,
        namespaces,
        links,
        processes,
    }
}
