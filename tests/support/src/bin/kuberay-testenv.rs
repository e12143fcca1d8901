//! `kuberay-testenv`: runs the local Kubernetes test environment.
//!
//! - `up` / `down` back `make cluster` and `make cluster-down`;
//! - `run` is the supervisor itself (tests start it with `--supervised`);
//! - `status`, `leftovers` and `sweep` inspect and clean up.

use std::{
    os::unix::process::CommandExt,
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use kuberay_testenv::{
    HeadMode,
    info::{EnvInfo, is_supervisor_alive},
    paths::Layout,
    stale,
    supervisor::{self, SupervisorConfig},
};

#[derive(Parser)]
#[command(
    version,
    about = "Local Kubernetes control plane, simulated kubelet and Ray heads for kuberay-wasm"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start an environment in the background and return once it is ready (`make cluster`).
    Up {
        /// What Ray head Pods run unless their Pod or Namespace says otherwise.
        #[arg(long, default_value = "real", value_parser = parse_head)]
        ray_head: HeadMode,
        /// Seconds to wait for the environment to become ready.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// Stop the environment `up` started and remove its state (`make cluster-down`).
    Down,
    /// Print how to reach the environment `up` started.
    Status,
    /// Run an environment in the foreground until SIGTERM/SIGINT (or, with --supervised, until stdin closes).
    Run {
        #[arg(long, default_value = "real", value_parser = parse_head)]
        ray_head: HeadMode,
        /// Stop when standard input closes (how tests tie an environment to their own lifetime).
        #[arg(long)]
        supervised: bool,
        /// Also write the environment description here (removed at shutdown).
        #[arg(long)]
        env_out: Option<PathBuf>,
        /// Also write the admin kubeconfig here (removed at shutdown).
        #[arg(long)]
        kubeconfig_out: Option<PathBuf>,
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// Fail if any environment other than the running `make cluster` left processes, network namespaces,
    /// links or directories behind.
    Leftovers {
        /// Keep looking for this many seconds while environments are still shutting down.
        #[arg(long, default_value_t = 60)]
        wait: u64,
    },
    /// Remove environments whose supervisor is gone.
    Sweep,
    /// Start one container of a mapped image (the simulated kubelet runs this; see `kubelet::exec`).
    #[command(hide = true)]
    PodExec {
        /// The container's spec (JSON) the kubelet wrote.
        spec: PathBuf,
    },
    /// Run a command in a running container of a mapped image (the kubelet's streaming endpoint runs this
    /// for `kubectl exec`; see `kubelet::enter`).
    #[command(hide = true)]
    PodEnter {
        /// The environment's state directory.
        #[arg(long)]
        state_dir: PathBuf,
        /// `<namespace>/<name>`.
        #[arg(long)]
        pod: String,
        #[arg(long)]
        container: String,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

fn parse_head(s: &str) -> Result<HeadMode, String> {
    s.parse()
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Before any thread exists: it enters namespaces and becomes the container's process.
    if let Cmd::PodExec { spec } = &cli.command {
        return pod_exec(spec);
    }
    if let Cmd::PodEnter {
        state_dir,
        pod,
        container,
        command,
    } = &cli.command
    {
        return pod_enter(state_dir, pod, container, command);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let layout = Layout::discover();
    match cli.command {
        Cmd::Run {
            ray_head,
            supervised,
            env_out,
            kubeconfig_out,
            timeout,
        } => {
            let instance = supervisor::new_instance_id();
            let log = stale::state_dir_for(&instance).join("logs/supervisor.log");
            init_tracing(Some(&log), !supervised)?;
            let config = SupervisorConfig {
                layout,
                instance: Some(instance),
                default_head: ray_head,
                exit_on_stdin_eof: supervised,
                env_out,
                kubeconfig_out,
                startup_timeout: Duration::from_secs(timeout),
            };
            let result = runtime.block_on(supervisor::run(config));
            // The stdin watcher is a blocking read that ends only when stdin closes; a supervisor stopped
            // by a signal must not wait for it (its parent may be waiting for this process to exit).
            runtime.shutdown_background();
            if let Err(e) = result {
                println!("FAILED {e}");
                return Err(e.into());
            }
            Ok(())
        }
        Cmd::Up { ray_head, timeout } => up(&layout, ray_head, timeout),
        Cmd::Down => runtime.block_on(down(&layout)),
        Cmd::Status => status(&layout),
        Cmd::Leftovers { wait } => runtime.block_on(leftovers(&layout, wait)),
        Cmd::Sweep => {
            runtime.block_on(stale::sweep());
            Ok(())
        }
        Cmd::PodExec { .. } | Cmd::PodEnter { .. } => Ok(()),
    }
}

fn pod_exec(spec: &std::path::Path) -> anyhow::Result<()> {
    let text = std::fs::read(spec).with_context(|| format!("reading {}", spec.display()))?;
    let spec: kuberay_testenv::kubelet::exec::ExecSpec = serde_json::from_slice(&text)?;
    match kuberay_testenv::kubelet::exec::exec(&spec) {
        Ok(never) => match never {},
        Err(message) => bail!("kuberay-testenv pod-exec: cannot start the container: {message}"),
    }
}

fn pod_enter(
    state_dir: &std::path::Path,
    pod: &str,
    container: &str,
    command: &[String],
) -> anyhow::Result<()> {
    use kuberay_testenv::kubelet::enter;
    let result =
        enter::locate(state_dir, pod, container).and_then(|(spec, pid)| enter::enter(&spec, pid, command));
    match result {
        Ok(never) => match never {},
        // The exec session's stderr: the user of `kubectl exec` reads this.
        Err(message) => bail!("cannot run {command:?} in container {container} of pod {pod}: {message}"),
    }
}

fn init_tracing(log: Option<&std::path::Path>, to_stderr: bool) -> anyhow::Result<()> {
    use tracing_subscriber::{EnvFilter, fmt, prelude::*};
    let filter = EnvFilter::try_from_env("KUBERAY_TESTENV_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,kube_client::client::builder=off"));
    let file_layer = match log {
        Some(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let file = std::fs::File::create(path)?;
            Some(
                fmt::layer()
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(file)),
            )
        }
        None => None,
    };
    let stderr_layer = to_stderr.then(|| {
        fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(file_layer)
        .with(stderr_layer)
        .init();
    Ok(())
}

fn up(layout: &Layout, ray_head: HeadMode, timeout: u64) -> anyhow::Result<()> {
    let env_file = layout.cluster_env_file();
    if let Ok(info) = EnvInfo::read(&env_file)
        && is_supervisor_alive(info.supervisor_pid)
    {
        println!("A cluster is already running (instance {}).", info.instance);
        return status(layout);
    }
    std::fs::create_dir_all(layout.local_dir())?;
    let _ = std::fs::remove_file(&env_file);
    let kubeconfig = layout.cluster_kubeconfig();
    let mode = match ray_head {
        HeadMode::Real => "real",
        HeadMode::Fake => "fake",
        HeadMode::None => "none",
    };
    let started = Instant::now();
    let mut child = Command::new(std::env::current_exe()?)
        .args(["run", "--ray-head", mode, "--timeout", &timeout.to_string()])
        .arg("--env-out")
        .arg(&env_file)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .context("starting the supervisor")?;
    let deadline = started + Duration::from_secs(timeout + 10);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            bail!("the cluster failed to start ({status}); run `kuberay-testenv run` to see why");
        }
        if EnvInfo::read(&env_file).is_ok() && kubeconfig.is_file() {
            println!("Cluster ready in {:.1}s.", started.elapsed().as_secs_f64());
            return status(layout);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    bail!("the cluster did not become ready within {timeout}s")
}

async fn down(layout: &Layout) -> anyhow::Result<()> {
    let env_file = layout.cluster_env_file();
    let Ok(info) = EnvInfo::read(&env_file) else {
        println!("No cluster is running.");
        stale::sweep().await;
        return Ok(());
    };
    if is_supervisor_alive(info.supervisor_pid) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(info.supervisor_pid)?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while is_supervisor_alive(info.supervisor_pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if is_supervisor_alive(info.supervisor_pid) {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
    stale::remove_instance(&info.instance, &info.state_dir).await;
    let _ = std::fs::remove_file(&env_file);
    let _ = std::fs::remove_file(layout.cluster_kubeconfig());
    println!("Cluster {} stopped and removed.", info.instance);
    Ok(())
}

fn status(layout: &Layout) -> anyhow::Result<()> {
    let info = EnvInfo::read(&layout.cluster_env_file()).context("no cluster is running (`make cluster`)")?;
    if !is_supervisor_alive(info.supervisor_pid) {
        bail!(
            "the cluster's supervisor (pid {}) is gone; run `make cluster-down`",
            info.supervisor_pid
        );
    }
    let kubectl = layout.local_dir().join("bin/kubectl");
    println!("  API server:   {}", info.server);
    println!(
        "  kubeconfig:   {} (admin)",
        layout.cluster_kubeconfig().display()
    );
    for who in ["alice", "bob"] {
        if let Some(path) = info.kubeconfig(who) {
            println!("                {} ({who}, no RBAC bindings)", path.display());
        }
    }
    println!(
        "  node:         {} (pod subnet {})",
        info.node_name, info.pod_subnet
    );
    if let Some(registry) = &info.registry {
        println!(
            "  registry:     https://{} (Pods: {}), user {}",
            registry.host_port,
            registry.pod_host_port.as_deref().unwrap_or("-"),
            registry.username
        );
        println!(
            "                CA {}, credentials {}",
            registry.ca_path.display(),
            registry.docker_config_path.display()
        );
    }
    println!("  logs:         {}/logs", info.state_dir.display());
    println!(
        "  try:          export KUBECONFIG={}",
        layout.cluster_kubeconfig().display()
    );
    println!("                {} get nodes", kubectl.display());
    println!("  stop:         make cluster-down");
    Ok(())
}

async fn leftovers(layout: &Layout, wait: u64) -> anyhow::Result<()> {
    let running: Vec<String> = EnvInfo::read(&layout.cluster_env_file())
        .ok()
        .filter(|i| is_supervisor_alive(i.supervisor_pid))
        .map(|i| vec![i.instance])
        .unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(wait);
    loop {
        let found = stale::leftovers(&layout.local_dir(), &running).await;
        if found.is_empty() {
            println!("No test environment left anything behind.");
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("test environments left things behind: {found:#?}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
