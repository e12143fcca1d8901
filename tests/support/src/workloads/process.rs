//! Containers of mapped images running for real: one `kuberay-testenv pod-exec` process per container (it
//! becomes the container's entrypoint, see [`crate::kubelet::exec`]), with its output appended to a log file,
//! its probes run from the node, SIGTERM then SIGKILL after the grace period when it must stop.

use std::{
    net::Ipv4Addr,
    path::{Path, PathBuf},
    process::Stdio,
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Container;
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use tokio::process::{Child, Command};

use crate::{
    error::{Error, Result},
    kubelet::{exec::ExecSpec, probe::Probes},
};

/// How to start one container.
pub struct ContainerLaunch {
    pub container: Container,
    pub spec: ExecSpec,
    /// Where the container's spec is written for `pod-exec`.
    pub spec_file: PathBuf,
    /// The container's log (stdout and stderr, appended across restarts).
    pub log: PathBuf,
}

struct Process {
    name: String,
    child: Child,
    probes: Probes,
    /// When a liveness failure's SIGTERM turns into SIGKILL.
    kill_at: Option<Instant>,
}

/// The running processes of a Pod's mapped containers.
pub struct ProcessPod {
    processes: Vec<Process>,
    grace: Duration,
}

impl ProcessPod {
    /// Starts every container; `helper` is the `kuberay-testenv` binary.
    pub fn start(helper: &Path, launches: &[ContainerLaunch], ip: Ipv4Addr, grace: Duration) -> Result<Self> {
        let mut processes = Vec::new();
        for launch in launches {
            let _ = std::fs::remove_dir_all(&launch.spec.shadow_dir);
            let json = serde_json::to_vec(&launch.spec).map_err(|e| Error::Other(e.to_string()))?;
            std::fs::write(&launch.spec_file, json).map_err(Error::io("writing a container spec"))?;
            if let Some(dir) = launch.log.parent() {
                std::fs::create_dir_all(dir).map_err(Error::io("creating the pod log directory"))?;
            }
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&launch.log)
                .map_err(Error::io(format!("opening {}", launch.log.display())))?;
            let log_err = log.try_clone().map_err(Error::io("duplicating a log handle"))?;
            let child = Command::new(helper)
                .arg("pod-exec")
                .arg(&launch.spec_file)
                .env_clear()
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log_err)
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
                .map_err(Error::io(format!("starting container {}", launch.container.name)))?;
            // `pod-enter` (exec in the container) joins this process's namespaces.
            if let Some(pid) = child.id() {
                std::fs::write(launch.spec_file.with_extension("pid"), pid.to_string())
                    .map_err(Error::io("writing a container's process id"))?;
            }
            processes.push(Process {
                name: launch.container.name.clone(),
                child,
                probes: Probes::start(&launch.container, ip),
                kill_at: None,
            });
        }
        Ok(Self { processes, grace })
    }

    /// Whether every container passes its readiness probe.
    pub fn ready(&self) -> bool {
        self.processes
            .iter()
            .all(|p| p.probes.state.ready.load(Ordering::Relaxed))
    }

    /// The exit code of the first container that has ended; also acts on failed liveness probes
    /// (SIGTERM, then SIGKILL once the grace period is over).
    pub fn exited(&mut self) -> Option<i32> {
        for p in &mut self.processes {
            if let Some(code) = super::exit_code(&mut p.child) {
                tracing::info!(container = %p.name, code, "container process exited");
                return Some(code);
            }
            if p.probes.state.liveness_failed.load(Ordering::Relaxed) {
                match p.kill_at {
                    None => {
                        tracing::info!(container = %p.name, "liveness probe failed; stopping the container");
                        signal(&p.child, Signal::SIGTERM);
                        p.kill_at = Some(Instant::now() + self.grace);
                    }
                    Some(at) if Instant::now() >= at => signal(&p.child, Signal::SIGKILL),
                    Some(_) => {}
                }
            }
        }
        None
    }

    /// Graceful stop: SIGTERM to every container, SIGKILL to those still running after `grace`. Returns the
    /// exit codes by container name.
    pub async fn terminate(&mut self, grace: Duration) -> Vec<(String, i32)> {
        for p in &self.processes {
            signal(&p.child, Signal::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        let mut codes: Vec<(String, i32)> = Vec::new();
        loop {
            for p in &mut self.processes {
                if !codes.iter().any(|(n, _)| *n == p.name)
                    && let Some(code) = super::exit_code(&mut p.child)
                {
                    codes.push((p.name.clone(), code));
                }
            }
            if codes.len() == self.processes.len() {
                return codes;
            }
            if Instant::now() >= deadline {
                for p in &self.processes {
                    signal(&p.child, Signal::SIGKILL);
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn signal(child: &Child, signal: Signal) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}
