//! Child processes of the test environment (etcd, kube-apiserver, kube-controller-manager, Ray heads): each
//! logs to its own file, runs in its own process group so that a Ctrl-C reaches only the supervisor, and is
//! stopped with SIGTERM, then SIGKILL, in the order the supervisor chooses.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use tokio::process::{Child, Command};

use crate::error::{Error, Result};

pub struct ManagedProcess {
    name: String,
    log: PathBuf,
    child: Child,
}

impl ManagedProcess {
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> Result<Self> {
        let out = std::fs::File::create(log).map_err(Error::io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io("duplicating a log file handle"))?;
        command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .kill_on_drop(true);
        let child = command.spawn().map_err(Error::io(format!("starting {name}")))?;
        tracing::debug!(process = name, pid = child.id(), log = %log.display(), "started");
        Ok(Self {
            name: name.to_string(),
            log: log.to_path_buf(),
            child,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// An error if the process has already exited.
    pub fn check_running(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(_)) | Err(_) => Err(Error::ProcessExited(self.name.clone(), self.log.clone())),
        }
    }

    /// SIGTERM, then SIGKILL once `grace` has passed.
    pub async fn stop(mut self, grace: Duration) {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            if tokio::time::timeout(grace, self.child.wait()).await.is_ok() {
                tracing::debug!(process = %self.name, "stopped");
                return;
            }
        }
        let _ = self.child.kill().await;
        tracing::debug!(process = %self.name, "killed");
    }
}
