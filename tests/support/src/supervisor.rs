//! The supervisor: one process that owns a whole test environment (control plane, pod network, simulated
//! kubelet and everything the Pods run) and tears all of it down when it is told to stop, when it receives
//! SIGTERM, SIGINT or SIGHUP, or, in supervised mode, when its standard input closes. Tests start it as a
//! child with a pipe on its stdin, so the environment goes away with the test binary however that ends
//! (normal exit, a panic, a kill), without relying on destructors of statics that never run.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tokio::{
    io::AsyncReadExt,
    signal::unix::{SignalKind, signal},
};

use crate::{
    controlplane::{ControlPlane, KUBELET_CLIENT_CN},
    error::{Error, Result},
    info::EnvInfo,
    kubelet::{HeadMode, KubeletConfig, SimKubelet, StreamingConfig},
    network::{
        OperatorLink, PodNetwork, api_forward,
        services::{ServiceView, dns, proxy},
    },
    paths::Layout,
    registry::RegistryServer,
    stale,
};

/// The node every simulated Pod runs on.
pub const NODE_NAME: &str = "testenv-node";

pub struct SupervisorConfig {
    pub layout: Layout,
    /// The environment's id and directory; `None` picks a fresh one.
    pub instance: Option<String>,
    pub default_head: HeadMode,
    /// Stop when standard input reaches end-of-file.
    pub exit_on_stdin_eof: bool,
    /// Extra copies of `env.json` and the admin kubeconfig (for `make cluster`), removed at shutdown.
    pub env_out: Option<PathBuf>,
    pub kubeconfig_out: Option<PathBuf>,
    pub startup_timeout: Duration,
}

/// Starts the environment, reports readiness on stdout (`READY <env.json>`), runs until told to stop, then
/// removes everything it created.
pub async fn run(config: SupervisorConfig) -> Result<()> {
    let instance = config.instance.clone().unwrap_or_else(new_instance_id);
    let dir = stale::state_dir_for(&instance);
    std::fs::create_dir_all(dir.join("logs")).map_err(Error::io(format!("creating {}", dir.display())))?;
    std::fs::write(
        dir.join(stale::SUPERVISOR_PID_FILE),
        std::process::id().to_string(),
    )
    .map_err(Error::io("writing the supervisor pid file"))?;
    stale::sweep().await;

    let mut shutdown = ShutdownSignal::new(config.exit_on_stdin_eof)?;
    let started = tokio::select! {
        started = start(&config, &instance, &dir) => Some(started),
        () = shutdown.wait() => None,
    };
    let result = match started {
        Some(Ok(mut env)) => {
            let outcome = env.serve(&config, &mut shutdown).await;
            env.stop().await;
            outcome
        }
        Some(Err(e)) => Err(e),
        None => Ok(()),
    };
    cleanup_outputs(&config);
    // Whatever did not stop cleanly (or never finished starting) is swept like a stale environment.
    stale::remove_instance(&instance, &dir).await;
    tracing::info!(%instance, "test environment removed");
    result
}

struct RunningEnv {
    info: EnvInfo,
    plane: ControlPlane,
    registry: Option<RegistryServer>,
    network: Arc<PodNetwork>,
    operator_link: OperatorLink,
    api_forwarder: tokio::task::JoinHandle<()>,
    /// The cluster DNS, the Service proxy and their watches.
    cluster_services: Vec<tokio::task::JoinHandle<()>>,
    kubelet: SimKubelet,
}

async fn start(config: &SupervisorConfig, instance: &str, dir: &Path) -> Result<RunningEnv> {
    // The network comes first: the API server's certificate must name the host's address on it, where Pods
    // reach the `kubernetes` Service.
    // Every binary is found before anything starts.
    let streaming_binary = config.layout.binary("kubelet-streaming")?;
    let network = PodNetwork::create(instance).await?;
    let sans = [network.host_ip().to_string()];
    // The registry starts alongside the control plane (it needs about a second and nothing of it).
    let (plane, registry) = tokio::join!(
        ControlPlane::start(&config.layout, dir, NODE_NAME, &sans, config.startup_timeout),
        start_registry(config, dir, network.host_ip()),
    );
    // On a failure below, dropping the registry kills its process and stops its relay.
    let registry = match registry {
        Ok(registry) => registry,
        Err(e) => {
            if let Ok(plane) = plane {
                plane.stop().await;
            }
            network.destroy().await;
            return Err(e);
        }
    };
    let plane = match plane {
        Ok(plane) => plane,
        Err(e) => {
            if let Some(registry) = registry {
                registry.stop().await;
            }
            network.destroy().await;
            return Err(e);
        }
    };
    let mut component_pids = plane.pids();
    component_pids.extend(registry.as_ref().and_then(RegistryServer::pid));
    write_component_pids(dir, &component_pids)?;
    let api_server: SocketAddr = plane
        .server()
        .trim_start_matches("https://")
        .parse()
        .map_err(|e| Error::Other(format!("unexpected API server address {}: {e}", plane.server())))?;
    let service = SocketAddr::from((network.host_ip(), api_forward::SERVICE_PORT));
    let links = match OperatorLink::create(instance, api_server).await {
        Ok(link) => match api_forward::start(service, api_server).await {
            Ok(forwarder) => Ok((link, forwarder)),
            Err(e) => {
                link.destroy().await;
                Err(e)
            }
        },
        Err(e) => Err(e),
    };
    let (operator_link, api_forwarder) = match links {
        Ok(links) => links,
        Err(e) => {
            network.destroy().await;
            plane.stop().await;
            return Err(e);
        }
    };
    let cluster_services = match start_cluster_services(&plane, &network).await {
        Ok(tasks) => tasks,
        Err(e) => {
            api_forwarder.abort();
            operator_link.destroy().await;
            network.destroy().await;
            plane.stop().await;
            return Err(e);
        }
    };
    let operator_kubeconfig = dir.join("kubeconfigs/operator-isolated.kubeconfig");
    crate::controlplane::write_kubeconfig_via(
        &operator_kubeconfig,
        &format!("https://{}", operator_link.api_addr),
        plane.ca_cert(),
        &plane.identities().admin,
        Some("localhost"),
    )?;
    let kubelet_config = KubeletConfig {
        node_name: NODE_NAME.to_string(),
        default_head: config.default_head,
        ray_cli: config.layout.ray_cli(),
        light_submitter: config.layout.binary("kuberay-rayjob-submitter").ok(),
        ray_python_path: Some(config.layout.ray_apps()),
        state_dir: dir.to_path_buf(),
        images_file: std::env::var_os(crate::images::IMAGES_ENV)
            .map(|f| std::path::absolute(&f).unwrap_or_else(|_| PathBuf::from(f))),
        api_service: Some(service),
        cluster_dns: Some(network.host_ip()),
        exec_helper: std::env::current_exe().ok(),
        streaming: Some(StreamingConfig {
            binary: streaming_binary,
            cert: plane.pki().kubelet_cert.clone(),
            key: plane.pki().kubelet_key.clone(),
            client_ca: plane.ca_cert().to_path_buf(),
            client_cn: KUBELET_CLIENT_CN.to_string(),
        }),
    };
    let kubelet = match SimKubelet::start(
        kubelet_config,
        network.clone(),
        plane.client(&plane.identities().kubelet.user).await?,
        plane.client(&plane.identities().scheduler.user).await?,
    )
    .await
    {
        Ok(k) => k,
        Err(e) => {
            api_forwarder.abort();
            cluster_services.iter().for_each(tokio::task::JoinHandle::abort);
            operator_link.destroy().await;
            network.destroy().await;
            plane.stop().await;
            return Err(e);
        }
    };
    if let Some(pid) = kubelet.streaming_pid() {
        component_pids.push(pid);
        write_component_pids(dir, &component_pids)?;
    }
    let kubeconfigs: BTreeMap<String, PathBuf> = ["admin", "alice", "bob"]
        .iter()
        .map(|who| (who.to_string(), plane.kubeconfig(who)))
        .collect();
    let info = EnvInfo {
        instance: instance.to_string(),
        server: plane.server().to_string(),
        ca_cert: plane.ca_cert().to_path_buf(),
        kubeconfigs,
        identities: plane.identities().clone(),
        node_name: NODE_NAME.to_string(),
        pod_subnet: network.subnet().to_string(),
        host_ip: network.host_ip().to_string(),
        bridge: network.bridge().to_string(),
        state_dir: dir.to_path_buf(),
        supervisor_pid: std::process::id(),
        component_pids,
        operator_netns: operator_link.netns.clone(),
        operator_kubeconfig,
        audit_log: plane.audit_log().map(Path::to_path_buf),
        registry: registry.as_ref().map(|r| r.registry().clone()),
    };
    Ok(RunningEnv {
        info,
        plane,
        registry,
        network,
        operator_link,
        api_forwarder,
        cluster_services,
        kubelet,
    })
}

/// Records the child processes a sweep kills if this supervisor dies (see [`stale`]).
fn write_component_pids(dir: &Path, pids: &[u32]) -> Result<()> {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    std::fs::write(dir.join(stale::COMPONENT_PIDS_FILE), pids.join("\n"))
        .map_err(Error::io("writing the component pid file"))
}

/// The cluster DNS on the host's pod-network address and the Service proxy on the bridge, reading Services and
/// EndpointSlices as kube-proxy's user.
async fn start_cluster_services(
    plane: &ControlPlane,
    network: &PodNetwork,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let client = plane.client(&plane.identities().proxy.user).await?;
    let (view, mut tasks) = ServiceView::start(&client);
    match dns::serve(network.host_ip(), view.clone()).await {
        Ok(task) => tasks.push(task),
        Err(e) => {
            tasks.iter().for_each(tokio::task::JoinHandle::abort);
            return Err(e);
        }
    }
    tasks.push(proxy::start(view, network.bridge().to_string()));
    Ok(tasks)
}

impl RunningEnv {
    async fn serve(&mut self, config: &SupervisorConfig, shutdown: &mut ShutdownSignal) -> Result<()> {
        let env_file = self.info.state_dir.join("env.json");
        self.info.write(&env_file)?;
        if let Some(out) = &config.env_out {
            self.info.write(out)?;
        }
        if let (Some(out), Some(admin)) = (&config.kubeconfig_out, self.info.kubeconfig("admin")) {
            std::fs::copy(admin, out).map_err(Error::io(format!("writing {}", out.display())))?;
        }
        tracing::info!(instance = %self.info.instance, server = %self.info.server, "test environment ready");
        println!("READY {}", env_file.display());
        loop {
            tokio::select! {
                () = shutdown.wait() => return Ok(()),
                () = tokio::time::sleep(Duration::from_secs(2)) => {
                    let running = self.plane.check_running().and_then(|()| match self.registry.as_mut() {
                        Some(registry) => registry.check_running(),
                        None => Ok(()),
                    });
                    if let Err(e) = running {
                        tracing::error!(error = %e, "a control-plane component died; shutting down");
                        return Err(e);
                    }
                }
            }
        }
    }

    async fn stop(self) {
        self.kubelet.shutdown().await;
        self.api_forwarder.abort();
        self.cluster_services
            .iter()
            .for_each(tokio::task::JoinHandle::abort);
        self.operator_link.destroy().await;
        self.network.destroy().await;
        if let Some(registry) = self.registry {
            registry.stop().await;
        }
        self.plane.stop().await;
    }
}

/// The OCI registry, or none (with a warning) when `make registry` has not built it: the environment works
/// without it, and [`crate::TestEnv::registry`] tells the tests that need it what to run.
async fn start_registry(
    config: &SupervisorConfig,
    dir: &Path,
    pod_host: std::net::Ipv4Addr,
) -> Result<Option<RegistryServer>> {
    match RegistryServer::start(&config.layout, dir, Some(pod_host), config.startup_timeout).await {
        Ok(registry) => Ok(Some(registry)),
        Err(Error::MissingBinary { path }) => {
            tracing::warn!(binary = %path.display(), "no OCI registry in this environment; run `make registry`");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn cleanup_outputs(config: &SupervisorConfig) {
    for path in [&config.env_out, &config.kubeconfig_out].into_iter().flatten() {
        let _ = std::fs::remove_file(path);
    }
}

/// Resolves when the supervisor should stop.
struct ShutdownSignal {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
    stdin_closed: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl ShutdownSignal {
    fn new(watch_stdin: bool) -> Result<Self> {
        let sig = |kind| signal(kind).map_err(Error::io("installing a signal handler"));
        let stdin_closed = watch_stdin.then(|| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                let mut stdin = tokio::io::stdin();
                let mut buf = [0u8; 256];
                while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
                let _ = tx.send(());
            });
            rx
        });
        Ok(Self {
            terminate: sig(SignalKind::terminate())?,
            interrupt: sig(SignalKind::interrupt())?,
            hangup: sig(SignalKind::hangup())?,
            stdin_closed,
        })
    }

    async fn wait(&mut self) {
        let stdin = async {
            match self.stdin_closed.as_mut() {
                Some(rx) => {
                    let _ = rx.await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.terminate.recv() => tracing::info!("SIGTERM received"),
            _ = self.interrupt.recv() => tracing::info!("SIGINT received"),
            _ = self.hangup.recv() => tracing::info!("SIGHUP received"),
            () = stdin => tracing::info!("standard input closed"),
        }
    }
}

pub fn new_instance_id() -> String {
    loop {
        let mut bytes = [0u8; 2];
        let _ = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
        let id = format!("{:02x}{:02x}", bytes[0], bytes[1]);
        if !stale::state_dir_for(&id).exists() {
            return id;
        }
    }
}
