//! The kubelet's streaming endpoint. `kubelet-streaming` (built from `tests/cluster/cmd/kubelet-streaming`,
//! Kubernetes' own exec protocol code) listens at the Node's address and kubelet port, which the Node status
//! advertises; the API server sends `pods/exec` there with its kubelet client certificate, and each command
//! runs through `kuberay-testenv pod-enter` in the container's namespaces (see [`super::enter`]).

use std::{
    net::{Ipv4Addr, SocketAddr},
    path::PathBuf,
    time::{Duration, Instant},
};

use tokio::process::Command;

use crate::{
    controlplane::{ports::free_port, process::ManagedProcess},
    error::{Error, Result},
};

/// What the streaming endpoint needs besides the kubelet's own configuration.
#[derive(Debug, Clone)]
pub struct StreamingConfig {
    /// The `kubelet-streaming` binary.
    pub binary: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The CA of the API server's kubelet client certificate.
    pub client_ca: PathBuf,
    /// The common name that certificate has.
    pub client_cn: String,
}

/// The running endpoint; stopped with the kubelet.
pub(crate) struct StreamingServer {
    process: ManagedProcess,
    pub(crate) port: u16,
}

const START_TIMEOUT: Duration = Duration::from_secs(20);

impl StreamingServer {
    /// Starts the endpoint on a free port of `host_ip` and returns once it accepts connections.
    pub(crate) async fn start(
        config: &StreamingConfig,
        host_ip: Ipv4Addr,
        enter: &std::path::Path,
        state_dir: &std::path::Path,
    ) -> Result<Self> {
        let port = free_port()?;
        let mut command = Command::new(&config.binary);
        command
            .arg(format!("--listen={host_ip}:{port}"))
            .arg(format!("--tls-cert-file={}", config.cert.display()))
            .arg(format!("--tls-private-key-file={}", config.key.display()))
            .arg(format!("--client-ca-file={}", config.client_ca.display()))
            .arg(format!("--client-cn={}", config.client_cn))
            .arg(format!("--enter={}", enter.display()))
            .arg(format!("--state-dir={}", state_dir.display()));
        let log = state_dir.join("logs/kubelet-streaming.log");
        let mut process = ManagedProcess::spawn("kubelet-streaming", command, &log)?;
        let address = SocketAddr::from((host_ip, port));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            process.check_running()?;
            if tokio::net::TcpStream::connect(address).await.is_ok() {
                tracing::info!(%address, "kubelet streaming endpoint serving");
                return Ok(Self { process, port });
            }
            if Instant::now() > deadline {
                return Err(Error::Other(format!(
                    "kubelet-streaming did not listen on {address} within {START_TIMEOUT:?}; see {}",
                    log.display()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    pub(crate) async fn stop(self) {
        self.process.stop(Duration::from_secs(5)).await;
    }
}
