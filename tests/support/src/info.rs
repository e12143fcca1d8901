//! The description of a running environment (`env.json`), which the supervisor writes once everything is
//! ready and from which tests and `make cluster` users learn how to reach it.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::{
    controlplane::Identities,
    error::{Error, Result},
    registry::Registry,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvInfo {
    /// Short random id; every network object and the state directory carry it.
    pub instance: String,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    pub ca_cert: PathBuf,
    /// Kubeconfigs by short name: `admin`, `alice`, `bob`.
    pub kubeconfigs: BTreeMap<String, PathBuf>,
    pub identities: Identities,
    pub node_name: String,
    pub pod_subnet: String,
    /// The host's address on the pod network.
    pub host_ip: String,
    pub bridge: String,
    pub state_dir: PathBuf,
    pub supervisor_pid: u32,
    /// Control-plane processes (etcd, kube-apiserver, kube-controller-manager) and the OCI registry.
    pub component_pids: Vec<u32>,
    /// A network namespace with no route to Pods, for running an operator that must not reach them, and the
    /// admin kubeconfig that works from inside it.
    pub operator_netns: String,
    pub operator_kubeconfig: PathBuf,
    /// The API server's audit log, when the environment was started with `KUBERAY_TESTENV_AUDIT_GROUPS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_log: Option<PathBuf>,
    /// The OCI registry (`make registry`): its addresses, CA and credentials. `None` when its binary was not
    /// built, or for an environment started before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<Registry>,
}

impl EnvInfo {
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(Error::io(format!("reading {}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| Error::BadEnvFile {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Other(e.to_string()))?;
        std::fs::write(path, text).map_err(Error::io(format!("writing {}", path.display())))
    }

    pub fn kubeconfig(&self, who: &str) -> Option<&Path> {
        self.kubeconfigs.get(who).map(PathBuf::as_path)
    }
}

/// Whether a process with this pid is alive and is a `kuberay-testenv` supervisor.
pub fn is_supervisor_alive(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmd| String::from_utf8_lossy(&cmd).contains("kuberay-testenv"))
        .unwrap_or(false)
}
