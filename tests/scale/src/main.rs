//! `make scale`: the same workload against kuberay-wasm and the KubeRay operator, one after the other on one
//! private local control plane and simulated kubelet, with a Markdown table per size and the ratios
//! ours/KubeRay. See docs/benchmarks.md, "Scale benchmark".

mod audit;
mod histogram;
mod operator;
mod procfs;
mod report;
mod workload;

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result, bail};
use clap::Parser;
use k8s_openapi::api::{core::v1::Namespace, rbac::v1::ClusterRoleBinding};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use kuberay_testenv::{HeadMode, TestEnv, controlplane::AUDIT_GROUPS_ENV, paths::Layout};
use serde_json::json;

use crate::{
    operator::{Binaries, Flavor},
    report::RunResult,
    workload::Workload,
};

/// The namespace of the operators' ServiceAccounts; the audit log records this group's requests.
const IDENTITY_NAMESPACE: &str = "kuberay-scale";

/// Left out of both the bring-up and the steady-state window.
const SETTLE: Duration = Duration::from_secs(5);

#[derive(Debug, Parser)]
#[command(about = "RayCluster and RayJob scale benchmark: kuberay-wasm against the KubeRay operator")]
struct Args {
    /// Numbers of RayClusters (1 head + 2 workers each), one run of every operator per size.
    #[arg(long, value_delimiter = ',', default_value = "100,1000")]
    sizes: Vec<usize>,
    /// RayJobs (HTTPMode, fake heads, through the API server's proxy) per operator; 0 skips the RayJob runs.
    #[arg(long, default_value_t = 50)]
    rayjobs: usize,
    /// Seconds of steady state measured after all RayClusters are ready.
    #[arg(long, default_value_t = 60)]
    steady_secs: u64,
    /// Objects created per second.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Longest wait for a workload to be done, in seconds.
    #[arg(long, default_value_t = 1800)]
    timeout_secs: u64,
    /// Longest wait for a run's namespace to be gone, in seconds (the run is then reported without it).
    #[arg(long, default_value_t = 300)]
    delete_timeout_secs: u64,
    /// Only these operators (kuberay-c1, kuberay-c8, kuberay-wasm); all by default.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// kuberay-wasm binary; default: the release build next to this binary's target directory.
    #[arg(long)]
    operator_bin: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "info,kube_client=warn,kube_runtime=warn".into());
    use tracing_subscriber::prelude::*;
    tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new(filter))
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_writer(std::io::stderr),
        )
        .init();
    // The audit opt-in is read by the environment's supervisor, a child: make sure it inherits it.
    if std::env::var_os(AUDIT_GROUPS_ENV).is_none() {
        let status = std::process::Command::new(std::env::current_exe()?)
            .args(std::env::args_os().skip(1))
            .env(
                AUDIT_GROUPS_ENV,
                format!("system:serviceaccounts:{IDENTITY_NAMESPACE}"),
            )
            .status()?;
        std::process::exit(status.code().unwrap_or(1));
    }
    let args = Args::parse();
    let layout = Layout::discover();
    let bins = binaries(&args, &layout)?;
    let out_dir = layout.local_dir().join("scale");
    std::fs::create_dir_all(out_dir.join("logs"))?;

    tracing::info!("starting a private test environment with the API server's audit log");
    let start_layout = layout.clone();
    let env =
        tokio::task::spawn_blocking(move || TestEnv::start_private(&start_layout, HeadMode::None)).await??;
    let outcome = benchmark(&args, &env, &bins, &out_dir).await;
    tokio::task::spawn_blocking(move || env.shutdown()).await??;
    outcome
}

fn binaries(args: &Args, layout: &Layout) -> Result<Binaries> {
    let ours = match &args.operator_bin {
        Some(bin) => bin.clone(),
        None => {
            let exe = std::env::current_exe()?;
            let target = exe
                .parent()
                .and_then(Path::parent)
                .context("locating the target directory")?;
            target.join("release/kuberay-wasm")
        }
    };
    let bins = Binaries {
        ours,
        kuberay: layout.local_dir().join("bin/kuberay-operator"),
        plugins: layout.local_dir().join("plugins"),
        cache_dir: layout.local_dir().join("scale/cache"),
    };
    let wants = |f: Flavor| args.only.is_empty() || args.only.iter().any(|o| o == f.key());
    let needed = [
        (
            wants(Flavor::Ours),
            "kuberay-wasm (cargo build --release -p kuberay-wasm)",
            &bins.ours,
        ),
        (wants(Flavor::Ours), "the plugins (make plugins)", &bins.plugins),
        (
            wants(Flavor::KubeRayDefault) || wants(Flavor::KubeRayC8),
            "kuberay-operator (make kuberay-operator)",
            &bins.kuberay,
        ),
    ];
    for (wanted, what, path) in needed {
        if wanted && !path.exists() {
            bail!("{what} missing: {}", path.display());
        }
    }
    std::fs::create_dir_all(&bins.cache_dir)?;
    Ok(bins)
}

/// What every run shares.
struct Shared<'a> {
    env: &'a TestEnv,
    admin: Client,
    bins: &'a Binaries,
    out_dir: &'a Path,
    audit_log: Option<PathBuf>,
    args: &'a Args,
}

async fn benchmark(args: &Args, env: &TestEnv, bins: &Binaries, out_dir: &Path) -> Result<()> {
    env.install_crds().await?;
    let admin = env.client().await?;
    let ctx = Shared {
        env,
        admin,
        bins,
        out_dir,
        audit_log: env.info().audit_log.clone(),
        args,
    };
    if ctx.audit_log.is_none() {
        tracing::warn!("the environment has no audit log; request counts are left out");
    }
    let flavors: Vec<Flavor> = Flavor::ALL
        .into_iter()
        .filter(|f| args.only.is_empty() || args.only.iter().any(|o| o == f.key()))
        .collect();
    let kubeconfigs = identities(&ctx, &flavors).await?;
    if flavors.contains(&Flavor::Ours) {
        warm_up(&ctx).await?;
    }

    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let mut all: Vec<RunResult> = Vec::new();
    let mut tables = String::new();
    let mut plan: Vec<(Workload, usize)> = args.sizes.iter().map(|n| (Workload::RayClusters, *n)).collect();
    if args.rayjobs > 0 {
        plan.push((Workload::RayJobs, args.rayjobs));
    }
    for (workload, n) in plan {
        let mut results = Vec::new();
        for (flavor, kubeconfig) in flavors.iter().zip(&kubeconfigs) {
            let result = run_one(&ctx, *flavor, kubeconfig, workload, n).await?;
            tracing::info!(result = %serde_json::to_string(&result)?, "run done");
            results.push(result);
            let so_far: Vec<RunResult> = all.iter().chain(&results).cloned().collect();
            write_results(out_dir, stamp, &so_far)?;
        }
        let title = match workload {
            Workload::RayClusters => format!("N = {n} RayClusters (1 head + 2 workers each)"),
            Workload::RayJobs => format!("{n} RayJobs (HTTPMode, fake heads, --use-kubernetes-proxy)"),
        };
        let table = report::table(&title, &results, workload == Workload::RayJobs);
        println!("{table}");
        tables.push_str(&table);
        tables.push('\n');
        all.extend(results);
        write_results(out_dir, stamp, &all)?;
    }
    println!(
        "Reconcile percentiles are interpolated linearly within the buckets of each operator's histogram \
         (KubeRay: controller_runtime_reconcile_time_seconds; ours: kuberay_wasm_reconcile_duration_seconds).\n\
         Raw numbers: {}",
        out_dir.join(format!("results-{stamp}.json")).display()
    );
    Ok(())
}

fn write_results(out_dir: &Path, stamp: u64, all: &[RunResult]) -> Result<()> {
    let path = out_dir.join(format!("results-{stamp}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(all)?)?;
    Ok(())
}

/// A ServiceAccount per operator in `kuberay-scale`, bound to cluster-admin, and a kubeconfig with its token.
async fn identities(ctx: &Shared<'_>, flavors: &[Flavor]) -> Result<Vec<PathBuf>> {
    let apply = PatchParams::apply("kuberay-scale").force();
    let namespaces: Api<Namespace> = Api::all(ctx.admin.clone());
    let ns: Namespace = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": IDENTITY_NAMESPACE}}))?;
    namespaces
        .patch(IDENTITY_NAMESPACE, &apply, &Patch::Apply(&ns))
        .await?;
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.admin.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "kuberay-scale-operators"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                      "name": format!("system:serviceaccounts:{IDENTITY_NAMESPACE}")}],
    }))?;
    bindings
        .patch("kuberay-scale-operators", &apply, &Patch::Apply(&binding))
        .await?;
    let mut out = Vec::new();
    for flavor in flavors {
        let token = ctx
            .env
            .service_account_token(IDENTITY_NAMESPACE, flavor.key())
            .await?;
        out.push(ctx.env.kubeconfig_with_token(flavor.key(), &token, None)?);
    }
    Ok(out)
}

/// Starts and stops our operator once so that its compiled-plugin cache is warm for the measured runs.
async fn warm_up(ctx: &Shared<'_>) -> Result<()> {
    let kubeconfig = ctx.env.kubeconfig();
    let log = ctx.out_dir.join("logs/warm-up.log");
    let mut op = operator::start(
        Flavor::Ours,
        ctx.bins,
        IDENTITY_NAMESPACE,
        kubeconfig,
        false,
        &log,
    )
    .await?;
    op.wait_ready(Duration::from_secs(300)).await?;
    op.stop().await
}

/// One operator on one workload in a fresh namespace, which is deleted (and waited for) afterwards.
async fn run_one(
    ctx: &Shared<'_>,
    flavor: Flavor,
    kubeconfig: &Path,
    workload: Workload,
    n: usize,
) -> Result<RunResult> {
    let timeout = Duration::from_secs(ctx.args.timeout_secs);
    let delete_timeout = Duration::from_secs(ctx.args.delete_timeout_secs);
    let head = match workload {
        Workload::RayClusters => HeadMode::None,
        Workload::RayJobs => HeadMode::Fake,
    };
    let ns = ctx
        .env
        .namespace_with(&format!("scale-{}", flavor.key()), Some(head))
        .await?;
    let user = format!("system:serviceaccount:{IDENTITY_NAMESPACE}:{}", flavor.key());
    let log = ctx.out_dir.join(format!(
        "logs/{}-{}-{n}.log",
        flavor.key(),
        workload.kind().to_lowercase()
    ));
    tracing::info!(
        operator = flavor.key(),
        workload = workload.kind(),
        n,
        namespace = ns.name(),
        "run"
    );

    // The control plane's own processes: the supervisor (which runs the simulated kubelet), etcd, the API
    // server and the controller-manager; the operator competes with them for the same cores.
    let plane: Vec<u32> = std::iter::once(ctx.env.info().supervisor_pid)
        .chain(ctx.env.info().component_pids.iter().copied())
        .collect();
    let plane_start = procfs::cpu_ticks_of(&plane);
    let audit_start = ctx.audit_log.as_deref().map(audit::mark);
    let started = Instant::now();
    let proxy = workload == Workload::RayJobs;
    let mut op = operator::start(flavor, ctx.bins, ns.name(), kubeconfig, proxy, &log).await?;
    let sampler = procfs::Sampler::start(op.pid);
    op.wait_ready(Duration::from_secs(300)).await?;
    let startup = started.elapsed();

    let timing = workload::run(&ctx.admin, ns.name(), workload, n, ctx.args.rate, timeout).await;
    let timing = match timing {
        Ok(t) => t,
        Err(e) => {
            let _ = op.stop().await;
            return Err(e.context(format!("{} on {n} {}s", flavor.title(), workload.kind())));
        }
    };
    let ticks = procfs::clock_ticks_per_second();
    let at_done = sampler.latest(op.pid);
    let plane_done = procfs::cpu_ticks_of(&plane);
    let audit_done = ctx.audit_log.as_deref().map(audit::mark);
    let steady = match workload {
        Workload::RayClusters => Duration::from_secs(ctx.args.steady_secs),
        Workload::RayJobs => Duration::ZERO,
    };
    // The steady-state window opens a few seconds after the last object reached its goal, so that writes the
    // operator makes just after (e.g. a status it patches once more) count in neither window.
    let (at_steady, audit_steady) = if steady.is_zero() {
        (at_done, audit_done)
    } else {
        tokio::time::sleep(SETTLE).await;
        (sampler.latest(op.pid), ctx.audit_log.as_deref().map(audit::mark))
    };
    tokio::time::sleep(steady).await;
    let at_end = sampler.latest(op.pid);
    let audit_end = ctx.audit_log.as_deref().map(audit::mark);
    let metrics = op.metrics().await.unwrap_or_default();
    // The namespace goes while the operator still runs: KubeRay's RayJobs carry a finalizer only it removes.
    let namespace_delete = workload::delete_namespace(&ctx.admin, ns.name(), delete_timeout).await;
    op.stop().await?;
    drop(sampler);
    let namespace_delete_s = match namespace_delete {
        Ok(took) => took.as_secs_f64(),
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "the namespace is not gone; going on");
            f64::NAN
        }
    };

    let (name, needle) = flavor.reconcile_histogram(workload.kind());
    let buckets = histogram::buckets(&metrics, name, &[&needle]);
    let ms = |q| histogram::quantile(&buckets, q).map(|s| s * 1000.0);
    let counts = |from: Option<u64>, to: Option<u64>| -> Option<audit::RequestCounts> {
        let path = ctx.audit_log.as_deref()?;
        audit::count_between(path, from?, to?, &user).ok()
    };
    let done_s = timing.first_create_to_done.as_secs_f64();
    Ok(RunResult {
        operator: flavor.key().to_string(),
        workload: workload.kind().to_string(),
        n,
        startup_s: startup.as_secs_f64(),
        first_create_to_done_s: done_s,
        per_minute: n as f64 * 60.0 / done_s,
        failed: timing.failed,
        cpu_bringup_s: at_done.cpu_ticks as f64 / ticks,
        control_plane_cpu_bringup_s: plane_done.saturating_sub(plane_start) as f64 / ticks,
        cpu_steady_s: at_end.cpu_ticks.saturating_sub(at_steady.cpu_ticks) as f64 / ticks,
        steady_s: steady.as_secs_f64(),
        peak_rss_mib: at_end.peak_rss_kib as f64 / 1024.0,
        requests_bringup: counts(audit_start, audit_done),
        requests_settle: counts(audit_done, audit_steady),
        requests_steady: counts(audit_steady, audit_end),
        reconciles: histogram::count(&metrics, name, &[&needle]),
        reconcile_p50_ms: ms(0.5),
        reconcile_p90_ms: ms(0.9),
        reconcile_p99_ms: ms(0.99),
        namespace_delete_s,
    })
}
