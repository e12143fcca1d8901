//! `make kuberay-samples-record`: KubeRay's real operator (v1.7.0, `tests/kuberay-operator/build-v1.7.sh`)
//! on a private local control plane with fake Ray heads, every KubeRay sample that needs no third-party CRD
//! applied into a namespace of its own, and the normalized graph of what KubeRay made of each written to
//! `tests/fixtures/kuberay-objects/<sample>` once it settled. The operator's test
//! `host/tests/all/kuberay_samples.rs` compares ours with these files. See that folder's README.
//!
//! `--profile <name>` runs KubeRay with a profile's flags (a batch scheduler, alpha feature gates) on the
//! profile's samples instead, into `tests/fixtures/kuberay-objects/<group>/<profile>/`
//! (`kuberay_testenv::kuberay_samples::profiles`).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use clap::Parser;
use kube::Discovery;
use kuberay_testenv::{
    HeadMode, TestEnv, crds,
    kuberay_samples::{
        self, GOLDEN_DIR, Sample,
        graph::{to_golden, to_profile_golden},
        observe::{Ended, Settle, Target, observe},
        profiles::{self, PROFILES, Profile},
    },
    paths::Layout,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    process::{Child, Command},
};

#[derive(Debug, Parser)]
#[command(about = "Record the objects KubeRay's operator v1.7.0 creates for each of KubeRay's samples")]
struct Args {
    /// Only samples whose path contains one of these (comma-separated); the other golden files stay.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Run KubeRay with this profile's flags on its samples, into
    /// `tests/fixtures/kuberay-objects/<group>/<profile>/` (see `kuberay_samples::profiles`): volcano,
    /// yunikorn, scheduler-plugins, kai-scheduler, network-policy, history-server.
    #[arg(long)]
    profile: Option<String>,
    /// A graph unchanged this long has settled, in seconds.
    #[arg(long, default_value_t = 40)]
    quiet_secs: u64,
    /// Longest wait for all graphs to settle, in seconds.
    #[arg(long, default_value_t = 420)]
    deadline_secs: u64,
    /// The directory `tests/kuberay-operator/build-v1.7.sh` built KubeRay into (`kuberay-operator`, `crds/`);
    /// default `.local/kuberay-v1.7.0`.
    #[arg(long)]
    kuberay_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "info,kube_client=warn,kube_runtime=warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let profile = match &args.profile {
        None => None,
        Some(name) => Some(profiles::profile(name).with_context(|| {
            let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
            format!("no profile {name}; the profiles are {}", names.join(", "))
        })?),
    };
    let layout = Layout::discover();
    let kuberay_dir = args
        .kuberay_dir
        .clone()
        .unwrap_or_else(|| layout.local_dir().join("kuberay-v1.7.0"));
    let operator = kuberay_dir.join("kuberay-operator");
    if !operator.is_file() || !kuberay_dir.join("crds").is_dir() {
        bail!(
            "KubeRay's operator v1.7.0 is not in {}: build it with `KUBERAY_SRC=<a clone of \
             github.com/ray-project/kuberay> make kuberay-operator-v1.7` (tests/kuberay-operator/build-v1.7.sh)",
            kuberay_dir.display()
        );
    }
    if !layout.gateway_api_crds_dir().is_dir() {
        bail!("the Gateway API CRDs are missing: run `make gateway-api`");
    }
    if !layout.batch_scheduler_crds_dir().is_dir() {
        bail!("the batch schedulers' CRDs (PodGroup, Queue) are missing: run `make batch-schedulers`");
    }
    let out_dir = layout.local_dir().join("kuberay-samples");
    std::fs::create_dir_all(&out_dir)?;

    tracing::info!("starting a private test environment (fake Ray heads)");
    let start_layout = layout.clone();
    let env =
        tokio::task::spawn_blocking(move || TestEnv::start_private(&start_layout, HeadMode::Fake)).await??;
    let outcome = record(&args, profile, &layout, &env, &kuberay_dir, &out_dir).await;
    tokio::task::spawn_blocking(move || env.shutdown()).await??;
    outcome
}

async fn record(
    args: &Args,
    profile: Option<&Profile>,
    layout: &Layout,
    env: &TestEnv,
    kuberay_dir: &Path,
    out_dir: &Path,
) -> Result<()> {
    let client = env.client().await?;
    // KubeRay's own CRDs (their defaults are part of what KubeRay does), the Gateway API's and the batch
    // schedulers' (KubeRay watches PodGroups when it runs with Volcano; the graph lists them).
    crds::install(&client, &kuberay_dir.join("crds")).await?;
    env.install_gateway_api_crds().await?;
    env.install_batch_scheduler_crds().await?;

    let flags = kuberay_flags(profile);
    let log = out_dir.join(match profile {
        None => "kuberay-operator.log".to_string(),
        Some(p) => format!("kuberay-operator.{}.log", p.name),
    });
    let mut operator = start_kuberay(
        &kuberay_dir.join("kuberay-operator"),
        &flags,
        env.kubeconfig(),
        &log,
    )
    .await?;
    tracing::info!(log = %log.display(), ?flags, "KubeRay's operator is ready");

    let root = layout.root();
    let all: Vec<Sample> = match profile {
        None => kuberay_samples::samples(root)?,
        Some(p) => p
            .samples
            .iter()
            .map(|s| kuberay_samples::load(root, s).map(|sample| p.documents(&sample)))
            .collect::<Result<_, _>>()?,
    };
    let samples: Vec<_> = all
        .into_iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|o| s.path.contains(o.as_str())))
        .collect();
    if samples.is_empty() {
        bail!("no sample matches {:?}", args.only);
    }
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut targets = Vec::new();
    let mut failed = Vec::new();
    for sample in samples {
        let ns = env
            .namespace_with(
                &kuberay_samples::namespace_prefix(&sample.path),
                Some(HeadMode::Fake),
            )
            .await?;
        match kuberay_samples::apply(&client, &discovery, ns.name(), &sample).await {
            Ok(applied) => targets.push(Target {
                sample,
                namespace: ns.name().to_string(),
                applied,
            }),
            Err(e) => failed.push(format!("{}: {e}", sample.path)),
        }
    }
    tracing::info!(
        samples = targets.len(),
        "applied; waiting until every graph settles"
    );
    let settle = Settle {
        interval: Duration::from_secs(2),
        quiet: Duration::from_secs(args.quiet_secs),
        confirm: Duration::ZERO,
        accept_after: Duration::ZERO,
        deadline: Duration::from_secs(args.deadline_secs),
    };
    let mut last = 0;
    let observed = observe(
        &client,
        &targets,
        &settle,
        |_, _| false,
        |done, all| {
            if done != last {
                tracing::info!("{done} of {all} samples settled");
                last = done;
            }
        },
    )
    .await;
    if let Ok(status) = operator.try_wait()
        && let Some(status) = status
    {
        bail!("KubeRay's operator exited ({status}); see {}", log.display());
    }
    let _ = operator.kill().await;
    let observed = observed?;

    let mut written = Vec::new();
    for (target, seen) in targets.iter().zip(&observed) {
        if seen.ended == Ended::Deadline {
            failed.push(format!(
                "{}: still changing after {:?} (namespace {})",
                target.sample.path, seen.after, target.namespace
            ));
            continue;
        }
        let (path, text) = match profile {
            None => (
                kuberay_samples::golden_path(root, &target.sample.path),
                to_golden(&seen.graph),
            ),
            Some(p) => (
                p.golden_path(root, &target.sample.path),
                to_profile_golden(&seen.graph, p, &profile_flags(p)),
            ),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.clone());
        println!(
            "{:70} {:3} created, settled {:>4.0}s after the samples were applied",
            target.sample.path,
            seen.graph.created.iter().map(|e| e.count).sum::<usize>(),
            seen.after.as_secs_f64()
        );
    }
    if args.only.is_empty() {
        match profile {
            None => remove_stale(&root.join(GOLDEN_DIR), &written)?,
            Some(p) => remove_stale(&p.golden_dir(root), &written)?,
        }
    }
    if !failed.is_empty() {
        bail!("not recorded:\n  {}", failed.join("\n  "));
    }
    Ok(())
}

/// Removes golden files of samples that were not recorded this time (removed or now skipped). The profiles'
/// folders ([`profiles::GROUPS`]) at the top of the golden folder are left to their own recordings.
fn remove_stale(dir: &Path, written: &[PathBuf]) -> Result<()> {
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            let profile_group = d == dir
                && path
                    .file_name()
                    .is_some_and(|n| profiles::GROUPS.iter().any(|g| n == *g));
            if path.is_dir() && !profile_group {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") && !written.contains(&path) {
                tracing::info!(file = %path.display(), "removing a golden file no sample was recorded into");
                std::fs::remove_file(&path)?;
            }
        }
    }
    Ok(())
}

async fn free_addr() -> Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0").await?.local_addr()?)
}

/// The flags a profile sets: its batch scheduler and its feature gates (with the `RayCronJob` gate every
/// recording turns on).
fn profile_flags(profile: &Profile) -> Vec<String> {
    let mut flags = profile.operator_args();
    flags.push(feature_gates(Some(profile)));
    flags
}

/// `--feature-gates=`: `RayCronJob`, which our RayCronJob plugin implements without a gate, and the
/// profile's gates.
fn feature_gates(profile: Option<&Profile>) -> String {
    let gates: Vec<String> = std::iter::once("RayCronJob")
        .chain(profile.into_iter().flat_map(|p| p.feature_gates.iter().copied()))
        .map(|g| format!("{g}=true"))
        .collect();
    format!("--feature-gates={}", gates.join(","))
}

/// The flags KubeRay is run with besides the fixed ones of [`start_kuberay`].
fn kuberay_flags(profile: Option<&Profile>) -> Vec<String> {
    match profile {
        None => vec![feature_gates(None)],
        Some(p) => profile_flags(p),
    }
}

/// KubeRay's operator as the admin, watching every namespace, reaching Ray heads through the API server's
/// proxy (it runs outside the Pod network and cannot resolve Service names), with its default flags and
/// feature gates but for `flags` ([`kuberay_flags`]).
async fn start_kuberay(binary: &Path, flags: &[String], kubeconfig: &Path, log: &Path) -> Result<Child> {
    let (metrics, health) = (free_addr().await?, free_addr().await?);
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut child = Command::new(binary)
        .arg("--enable-leader-election=false")
        .arg(format!("--metrics-addr={metrics}"))
        .arg(format!("--health-probe-bind-address={health}"))
        .arg("--use-kubernetes-proxy")
        .args(flags)
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "KubeRay's operator exited before it was ready ({status}); see {}",
                log.display()
            );
        }
        if readyz(health).await {
            return Ok(child);
        }
        if Instant::now() > deadline {
            bail!(
                "KubeRay's operator was not ready after 120 s; see {}",
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn readyz(addr: SocketAddr) -> bool {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET /readyz HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    match tokio::time::timeout(Duration::from_secs(5), exchange).await {
        Ok(Ok(raw)) => {
            String::from_utf8_lossy(&raw).starts_with("HTTP/1.1 200")
                || String::from_utf8_lossy(&raw).starts_with("HTTP/1.0 200")
        }
        _ => false,
    }
}
