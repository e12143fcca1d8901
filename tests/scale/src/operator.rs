//! Running one operator under test as a child process: its command line, readiness, metrics and SIGTERM.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use nix::{sys::signal, unistd::Pid};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    process::{Child, Command},
};

/// The operators the benchmark compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// KubeRay with its default `--reconcile-concurrency` (1).
    KubeRayDefault,
    /// KubeRay with `--reconcile-concurrency 8`, our default concurrency.
    KubeRayC8,
    /// kuberay-wasm with its defaults.
    Ours,
}

impl Flavor {
    pub const ALL: [Flavor; 3] = [Flavor::KubeRayDefault, Flavor::KubeRayC8, Flavor::Ours];

    /// Column title.
    pub fn title(self) -> &'static str {
        match self {
            Flavor::KubeRayDefault => "KubeRay (default)",
            Flavor::KubeRayC8 => "KubeRay (concurrency 8)",
            Flavor::Ours => "ours",
        }
    }

    /// Short name: the ServiceAccount it runs as and the key in the JSON results.
    pub fn key(self) -> &'static str {
        match self {
            Flavor::KubeRayDefault => "kuberay-c1",
            Flavor::KubeRayC8 => "kuberay-c8",
            Flavor::Ours => "kuberay-wasm",
        }
    }

    /// The reconcile-duration histogram and the label selecting `kind`'s controller (`RayCluster`, `RayJob`).
    pub fn reconcile_histogram(self, kind: &str) -> (&'static str, String) {
        match self {
            Flavor::Ours => (
                "kuberay_wasm_reconcile_duration_seconds",
                format!("kind=\"{kind}\""),
            ),
            _ => (
                "controller_runtime_reconcile_time_seconds",
                format!("controller=\"{}\"", kind.to_lowercase()),
            ),
        }
    }
}

/// Where the binaries and plugins are.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub ours: PathBuf,
    pub kuberay: PathBuf,
    pub plugins: PathBuf,
    pub cache_dir: PathBuf,
}

/// A running operator.
pub struct RunningOperator {
    child: Child,
    pub pid: u32,
    pub metrics: SocketAddr,
    pub health: SocketAddr,
}

/// A free loopback port (bound and released).
pub async fn free_addr() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    Ok(listener.local_addr()?)
}

/// Starts `flavor` watching `namespace` with `kubeconfig`, its output in `log`.
pub async fn start(
    flavor: Flavor,
    bins: &Binaries,
    namespace: &str,
    kubeconfig: &Path,
    proxy: bool,
    log: &Path,
) -> Result<RunningOperator> {
    let (metrics, health) = (free_addr().await?, free_addr().await?);
    let mut command = match flavor {
        Flavor::Ours => {
            let mut c = Command::new(&bins.ours);
            c.arg("operator")
                .arg("--plugins")
                .arg(&bins.plugins)
                .arg("--cache-dir")
                .arg(&bins.cache_dir)
                .arg("--metrics-bind-address")
                .arg(metrics.to_string())
                .arg("--health-probe-bind-address")
                .arg(health.to_string());
            if !namespace.is_empty() {
                c.arg("--watch-namespace").arg(namespace);
            }
            c
        }
        Flavor::KubeRayDefault | Flavor::KubeRayC8 => {
            let mut c = Command::new(&bins.kuberay);
            c.arg("--enable-leader-election=false")
                .arg(format!("--metrics-addr={metrics}"))
                .arg(format!("--health-probe-bind-address={health}"))
                .arg(format!("--watch-namespace={namespace}"));
            if flavor == Flavor::KubeRayC8 {
                c.arg("--reconcile-concurrency=8");
            }
            c
        }
    };
    if proxy {
        command.arg("--use-kubernetes-proxy");
    }
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    command
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true);
    let child = command
        .spawn()
        .with_context(|| format!("starting {}", flavor.title()))?;
    let pid = child.id().context("operator exited at once")?;
    tracing::info!(operator = flavor.key(), pid, %metrics, %health, "operator started");
    Ok(RunningOperator {
        child,
        pid,
        metrics,
        health,
    })
}

impl RunningOperator {
    /// Waits until `/readyz` answers 200.
    pub async fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the operator exited before it was ready ({status})");
            }
            if let Ok((200, _)) = http_get(self.health, "/readyz").await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the operator was not ready after {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The `/metrics` text.
    pub async fn metrics(&self) -> Result<String> {
        let (status, body) = http_get(self.metrics, "/metrics").await?;
        if status != 200 {
            bail!("GET /metrics answered {status}");
        }
        Ok(body)
    }

    /// SIGTERM, then SIGKILL after 30 s.
    pub async fn stop(mut self) -> Result<()> {
        let pid = Pid::from_raw(i32::try_from(self.pid)?);
        let _ = signal::kill(pid, signal::Signal::SIGTERM);
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => {
                status?;
            }
            Err(_) => {
                tracing::warn!(
                    pid = self.pid,
                    "operator still running 30 s after SIGTERM; killing it"
                );
                self.child.kill().await?;
            }
        }
        Ok(())
    }
}

/// A plain HTTP/1.0 GET on loopback: (status, body).
pub async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange).await??;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no HTTP status line")?;
    Ok((status, body.to_string()))
}
