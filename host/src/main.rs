//! `kuberay-wasm`: the operator binary.

use std::{path::PathBuf, time::Duration};

use anyhow::Context;
use clap::{Parser, Subcommand};
use kuberay_rayhead::parse_duration;
use kuberay_wasm::{
    ApiRateLimit, DEFAULT_PLUGIN_MEMORY_MIB, DEFAULT_PLUGIN_TIMEOUT, KubeRayArgs, LeaderElectionArgs,
    OperatorArgs, OperatorConfig, ResourceArgs,
    authoring::{self, run::RunOptions},
    kuberay_config::Configuration,
    kuberay_env::KubeRayEnv,
    kuberay_flags::{FeatureGates, UnsupportedFlags, batch_scheduler},
    leadership::{self, LeaderElection},
    metrics::Metrics,
    policy::{Policy, Profile},
    reconcileplugin::{
        ResourceOptions,
        artifact::{self, RegistryOptions},
        signature,
    },
    sandbox::{CallLimits, ChildCompiler, CompileLimits, Sandbox, SandboxConfig},
    telemetry::{self, LogFormat},
};
use oci_client::secrets::RegistryAuth;

/// jemalloc instead of the C library's allocator. With glibc's, memory freed on one tokio worker was not reused
/// by another (per-thread arenas): at 1,000 RayClusters the operator peaked at 116 MiB, 105 with jemalloc at
/// the same CPU (mimalloc: 126 MiB, less CPU; docs/benchmarks.md, scale benchmark). The static musl build of the container
/// image would otherwise get musl's allocator, which serialises allocations behind one lock. Build with
/// `--no-default-features` to profile the heap with tools that follow the C library's allocator.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    version,
    about = "KubeRay-compatible operator whose reconcile logic runs in WebAssembly plugins"
)]
struct Cli {
    /// Log format on stderr: `auto` is JSON unless stderr is a terminal (text, coloured); the level comes
    /// from RUST_LOG (default info).
    #[arg(long, global = true, value_enum, default_value = "auto")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the operator.
    Operator(Box<OperatorArgs>),
    /// Load a plugin and print what it reconciles, owns and asks for, and what it would be granted.
    Inspect {
        plugin: PathBuf,
        /// The policy to grant it under (as for `operator`); the built-in one by default.
        #[arg(long)]
        policy: Option<PathBuf>,
    },
    /// Write, try and publish plugins: `new` (a project to start from), `run` (one reconcile offline), `push`
    /// (to an OCI registry).
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Internal: compile one plugin component from stdin to stdout under these limits (the operator runs
    /// itself so to bound what compiling a hostile component may cost).
    #[command(hide = true)]
    CompilePlugin {
        #[arg(long)]
        memory_bytes: u64,
        #[arg(long)]
        cpu_seconds: u64,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Write a plugin project to start from: a Rust crate that builds outside this repository (the SDK by
    /// git), with a reconcile for KIND, its unit test, its policy entry, a CRD and a README.
    New {
        /// The plugin's name: its policy entry's name and its Cargo package's (lowercase letters, digits, '-').
        name: String,
        /// The kind it reconciles, GROUP/VERSION/KIND (a custom resource, e.g. example.com/v1alpha1/Widget).
        #[arg(long)]
        kind: String,
        /// Where to write it (default ./NAME); must not exist or be empty.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Run one reconcile of a plugin offline, against an in-memory cluster, every host call judged by the
    /// operator's rules; print the calls, what was refused and why, and the writes as a diff. Exits 0 when
    /// the reconcile succeeded with nothing refused, 2 when it failed or a call was refused.
    Run(Box<RunArgs>),
    /// Push a plugin component to a registry as a WebAssembly OCI artifact and print the digest a
    /// ReconcilePlugin pins (`REFERENCE@sha256:...`).
    Push {
        /// The component (`*.wasm`).
        file: PathBuf,
        /// Where to push it: `registry[:port]/repository[:tag]`.
        reference: String,
        /// Also sign it with this key (an unencrypted PKCS#8 PEM ECDSA P-256 private key, as `plugin keygen`
        /// writes): pushes a cosign signature (the `sha256-<digest>.sig` tag) that `cosign verify --key` and a
        /// ReconcilePlugin's `spec.verification.publicKey` accept.
        #[arg(long)]
        sign_key: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Write a key pair for signing plugin artifacts: DIR/plugin.key (PKCS#8 PEM, mode 0600, for `plugin push
    /// --sign-key`) and DIR/plugin.pub (the PEM public key a ReconcilePlugin's spec.verification.publicKey
    /// holds). Existing files are not overwritten.
    Keygen {
        #[arg(long)]
        out: PathBuf,
    },
    /// Check that an artifact carries a cosign signature the public key verifies, as the operator does for a
    /// ReconcilePlugin with spec.verification; prints the digest checked.
    Verify {
        /// `registry[:port]/repository@sha256:...` (or a tag, resolved to its digest first).
        reference: String,
        /// The PEM public key (`plugin keygen`'s plugin.pub, or `cosign generate-key-pair`'s cosign.pub).
        #[arg(long)]
        key: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

/// `plugin run`'s arguments.
#[derive(clap::Args)]
struct RunArgs {
    /// The component (`*.wasm`).
    plugin: PathBuf,
    /// The object to reconcile (YAML or JSON), as the plugin would get it (status included).
    #[arg(long)]
    object: PathBuf,
    /// Objects that exist besides it (YAML documents or a List): what the plugin reads and may own.
    #[arg(long)]
    objects: Option<PathBuf>,
    /// Its grant: a policy entry (policy-entry.yaml), a ReconcilePlugin or its `grant`, or a policy file. Default:
    /// the policy's entry named like the plugin, else what the plugin asks for under the policy's defaults.
    #[arg(long)]
    grant: Option<PathBuf>,
    /// The policy whose entries and defaults apply (as for `operator`); the built-in one by default.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The Pod Security level the object's namespace enforces: privileged, baseline or restricted (default:
    /// a Namespace among --objects says, else the policy's namespaceDefault).
    #[arg(long)]
    namespace_level: Option<Profile>,
    /// Wall-time limit of the call (the operator's --plugin-timeout).
    #[arg(long, default_value = DEFAULT_PLUGIN_TIMEOUT, value_parser = parse_duration)]
    plugin_timeout: Duration,
    /// Linear-memory limit of the call in MiB (the operator's --plugin-memory-mib).
    #[arg(long, default_value_t = DEFAULT_PLUGIN_MEMORY_MIB)]
    plugin_memory_mib: usize,
    /// Keep the compiled component in this directory between runs (must be private to you); by default it
    /// is compiled afresh in a temporary directory.
    #[arg(long)]
    cache_dir: Option<PathBuf>,
}

/// How `plugin push` and `plugin verify` reach a registry.
#[derive(clap::Args)]
struct RegistryArgs {
    /// User name for the registry (none: anonymous).
    #[arg(long, env = "KUBERAY_WASM_REGISTRY_USERNAME")]
    username: Option<String>,
    /// Password for the registry.
    #[arg(long, env = "KUBERAY_WASM_REGISTRY_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// A PEM CA certificate to trust besides the system's (repeatable).
    #[arg(long)]
    ca_file: Vec<PathBuf>,
}

/// How the operator serves ReconcilePlugin resources, if it does: the CA files read, the namespace resolved.
fn resource_options(args: ResourceArgs) -> anyhow::Result<Option<ResourceOptions>> {
    if !args.plugin_resources {
        return Ok(None);
    }
    let mut extra_roots = Vec::new();
    for path in &args.plugin_registry_ca {
        extra_roots.push(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?);
    }
    let file = std::path::Path::new(leadership::SERVICE_ACCOUNT_NAMESPACE_FILE);
    Ok(Some(ResourceOptions {
        namespace: args
            .operator_namespace
            .filter(|ns| !ns.is_empty())
            .or_else(|| leadership::namespace_from_file(file)),
        selector: args.plugin_resource_selector,
        allow_tags: args.allow_plugin_tags,
        registry: RegistryOptions {
            extra_roots,
            timeout: args.plugin_registry_timeout,
        },
    }))
}

/// Refuses the KubeRay flags that cannot be honoured, logs those accepted without effect; the batch scheduler
/// chosen.
fn check_kuberay(
    args: KubeRayArgs,
) -> anyhow::Result<Option<kuberay_rules::batch_scheduler::BatchScheduler>> {
    UnsupportedFlags {
        log_file_path: args.log_file_path,
    }
    .check()?;
    let scheduler = batch_scheduler(args.batch_scheduler.as_deref(), args.enable_batch_scheduler)?;
    if args.forced_cluster_upgrade {
        tracing::warn!("--forced-cluster-upgrade is deprecated and ignored, as by KubeRay");
    }
    if args.enable_metrics {
        tracing::info!(
            "--enable-metrics: KubeRay's kuberay_* metric families are always exported here, flag or not"
        );
    }
    Ok(scheduler)
}

/// The leader election, if enabled: the namespace and identity resolved, the timings checked.
fn election(args: LeaderElectionArgs, instance: Option<&str>) -> anyhow::Result<Option<LeaderElection>> {
    if !args.enable_leader_election {
        return Ok(None);
    }
    let file = std::path::Path::new(leadership::SERVICE_ACCOUNT_NAMESPACE_FILE);
    let namespace = args
        .leader_election_namespace
        .filter(|ns| !ns.is_empty())
        .or_else(|| leadership::namespace_from_file(file))
        .with_context(|| {
            format!(
                "--enable-leader-election needs the Lease's namespace: give --leader-election-namespace, \
                 set POD_NAMESPACE, or run in a Pod ({} is missing)",
                file.display()
            )
        })?;
    let election = LeaderElection {
        namespace,
        lease_name: args.leader_election_id,
        identity: leadership::unique_identity(instance.unwrap_or("kuberay-wasm")),
        lease_duration: args.leader_election_lease_duration,
        renew_deadline: args.leader_election_renew_deadline,
        retry_period: args.leader_election_retry_period,
    };
    election.validate()?;
    Ok(Some(election))
}

fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("kuberay-wasm"))
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // The compile child writes its artifact on stdout and nothing else: no logging, no runtime.
    if let Command::CompilePlugin {
        memory_bytes,
        cpu_seconds,
    } = cli.command
    {
        return compile_plugin(CompileLimits {
            memory_bytes,
            cpu_seconds,
        });
    }
    let log_format = match &cli.command {
        Command::Operator(args) => args.kuberay.log_format(cli.log_format),
        _ => cli.log_format,
    };
    telemetry::init(log_format);
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
        .and_then(|runtime| match cli.command {
            Command::Operator(args) => runtime.block_on(operator(*args)).map(success),
            Command::Inspect { plugin, policy } => runtime.block_on(inspect(plugin, policy)).map(success),
            Command::Plugin(PluginCommand::Push {
                file,
                reference,
                sign_key,
                registry,
            }) => runtime
                .block_on(push(file, reference, sign_key, registry))
                .map(success),
            Command::Plugin(PluginCommand::Keygen { out }) => keygen(&out).map(success),
            Command::Plugin(PluginCommand::Verify {
                reference,
                key,
                registry,
            }) => runtime.block_on(verify(reference, key, registry)).map(success),
            Command::Plugin(PluginCommand::New { name, kind, dir }) => {
                new_plugin(&name, &kind, dir.as_deref()).map(success)
            }
            Command::Plugin(PluginCommand::Run(args)) => runtime.block_on(run_plugin(*args)),
            Command::CompilePlugin { .. } => Ok(std::process::ExitCode::SUCCESS),
        });
    match result {
        Ok(code) => code,
        Err(e) => {
            // In the log's format (a JSON line for collectors), with every cause.
            tracing::error!(error = %format_args!("{e:#}"), "fatal");
            std::process::ExitCode::FAILURE
        }
    }
}

fn success(_: ()) -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}

/// `plugin new`: writes the project and says what to do next.
fn new_plugin(name: &str, kind: &str, dir: Option<&std::path::Path>) -> anyhow::Result<()> {
    let (dir, files) = authoring::new::new_project(name, kind, dir)?;
    println!("created the plugin {name} ({kind}) in {}:", dir.display());
    for file in files {
        println!("  {}", file.display());
    }
    println!(
        "\nnext:\n  cd {}\n  cargo test\n  cargo build-plugin    # target/wasm32-wasip2/release/{}.wasm\n  \
         kuberay-wasm plugin run target/wasm32-wasip2/release/{}.wasm --object example.yaml --grant policy-entry.yaml",
        dir.display(),
        name.replace('-', "_"),
        name.replace('-', "_"),
    );
    Ok(())
}

/// `plugin run`: one offline reconcile, printed; 2 when it failed or a call was refused.
async fn run_plugin(args: RunArgs) -> anyhow::Result<std::process::ExitCode> {
    let options = RunOptions {
        plugin: args.plugin,
        object: args.object,
        objects: args.objects,
        grant: args.grant,
        policy: args.policy,
        namespace_level: args.namespace_level,
        compiler: Some(default_compiler()),
        cache_dir: args.cache_dir,
        timeout: args.plugin_timeout,
        memory_bytes: args.plugin_memory_mib << 20,
    };
    let report = authoring::run::run(&options).await?;
    print!("{report}");
    let clean = matches!(report.outcome, Some(Ok(_)) | None) && report.refusals().is_empty();
    Ok(if clean {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(2)
    })
}

/// `compile-plugin`: the child's side of a bounded compile; an error goes to stderr for the parent.
fn compile_plugin(limits: CompileLimits) -> std::process::ExitCode {
    match kuberay_wasm::sandbox::compile_child(limits) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The compile child with the operator flags' default limits (for `plugin run` and `inspect`).
fn default_compiler() -> ChildCompiler {
    let defaults = OperatorArgs::defaults();
    ChildCompiler {
        executable: own_executable(),
        timeout: defaults.plugin_compile_timeout,
        memory_bytes: defaults.plugin_compile_memory_mib << 20,
    }
}

/// This very executable, even if its file was replaced since it started: the compile child must be the
/// same build as the operator (its engine settings are what the artifact is compiled for).
fn own_executable() -> PathBuf {
    PathBuf::from("/proc/self/exe")
}

async fn operator(mut args: OperatorArgs) -> anyhow::Result<()> {
    let configuration = args.kuberay.config.take().filter(|p| !p.as_os_str().is_empty());
    let pod_defaults = match configuration {
        Some(path) => {
            let settings = Configuration::read(&path)?;
            tracing::info!(config = %path.display(), "KubeRay's Configuration file replaces the flags it has fields for");
            Some(args.take_configuration(settings))
        }
        None => None,
    };
    let batch_scheduler = check_kuberay(args.kuberay)?;
    let gates = FeatureGates::parse(&args.feature_gates)?;
    let kuberay_env = KubeRayEnv::from_process()?;
    for (toggle, value) in kuberay_env.set() {
        tracing::info!(toggle, value, "KubeRay's environment toggle set");
    }
    tracing::info!(
        cluster_domain = %args.routing.cluster_domain,
        "the cluster's DNS domain (--cluster-domain, or KubeRay's CLUSTER_DOMAIN)"
    );
    let mut config = OperatorConfig::new(args.plugins)
        // KubeRay's "" (all namespaces) is an empty list here.
        .with_watch_namespaces(
            args.watch_namespace
                .into_iter()
                .filter(|n| !n.is_empty())
                .collect(),
        )
        .with_concurrency(args.concurrency)
        .with_debounce(args.reconcile_debounce)
        .with_limits(args.plugin_timeout, args.plugin_memory_mib << 20)
        .with_reload_interval((!args.plugin_reload_interval.is_zero()).then_some(args.plugin_reload_interval))
        .with_compiler(
            own_executable(),
            args.plugin_compile_timeout,
            args.plugin_compile_memory_mib << 20,
        )
        .with_addrs(args.metrics_bind_address, args.health_probe_bind_address);
    config.cache_dir = if args.no_cache {
        None
    } else {
        args.cache_dir.or_else(default_cache_dir)
    };
    let policy = load_policy(args.policy.as_deref())?
        .without(&args.disable_plugins)
        .context("--disable-plugins")?;
    let policy = gates.narrow(policy);
    config.policy = Some(std::sync::Arc::new(policy));
    config.reconcile_concurrency = args.reconcile_concurrency;
    config.api_rate_limit = ApiRateLimit::from_flags(args.qps, args.burst);
    config.feature_gates = gates;
    config.batch_scheduler = batch_scheduler;
    config.kuberay_env = kuberay_env;
    config.pod_defaults = pod_defaults;
    config.resources = resource_options(args.resources)?;
    config.kubeconfig = args.kubeconfig;
    config.routing = args.routing;
    config.instance = instance_name();
    config.leader_election = election(args.leader_election, config.instance.as_deref())?;
    kuberay_wasm::run(config, shutdown_signal())
        .await
        .context("operator failed")
}

/// This replica's name: the Pod's (POD_NAME), else the host's.
fn instance_name() -> Option<String> {
    let hostname = || {
        std::env::var("HOSTNAME").ok().or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
    };
    std::env::var("POD_NAME")
        .ok()
        .or_else(hostname)
        .filter(|name| !name.is_empty())
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
}

/// The policy at `path`, or the built-in one; an unreadable or invalid file is fatal.
fn load_policy(path: Option<&std::path::Path>) -> anyhow::Result<Policy> {
    let Some(path) = path else {
        return Ok(Policy::builtin());
    };
    let policy = Policy::read(path).with_context(|| format!("loading the policy {}", path.display()))?;
    tracing::info!(path = %path.display(), plugins = policy.entries().len(), "policy loaded");
    Ok(policy)
}

impl RegistryArgs {
    fn client(&self) -> anyhow::Result<(artifact::Registry, RegistryAuth)> {
        let mut extra_roots = Vec::new();
        for path in &self.ca_file {
            extra_roots.push(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?);
        }
        let registry = artifact::Registry::new(&RegistryOptions {
            extra_roots,
            timeout: Duration::from_secs(60),
        })?;
        let auth = match (&self.username, &self.password) {
            (Some(user), Some(password)) => RegistryAuth::Basic(user.clone(), password.clone()),
            (None, None) => RegistryAuth::Anonymous,
            _ => anyhow::bail!("give both --username and --password, or neither"),
        };
        Ok((registry, auth))
    }
}

async fn push(
    file: PathBuf,
    reference: String,
    sign_key: Option<PathBuf>,
    args: RegistryArgs,
) -> anyhow::Result<()> {
    let wasm = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let parsed = artifact::parse_reference(&reference, true)?;
    // The key is read before anything is pushed, so a bad one pushes nothing.
    let key = match &sign_key {
        Some(path) => {
            let pem = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            Some(signature::SigningKey::from_pem(&pem).with_context(|| path.display().to_string())?)
        }
        None => None,
    };
    let (registry, auth) = args.client()?;
    let digest = registry.push(&parsed, &auth, wasm).await?;
    if let Some(key) = key {
        let signatures = signature::sign(&registry, &parsed, &auth, &digest, &key).await?;
        eprintln!(
            "signed with the key {}: {}",
            key.public_key().fingerprint(),
            signatures.whole()
        );
    }
    let repository = format!("{}/{}", parsed.registry(), parsed.repository());
    println!("{repository}@{digest}");
    Ok(())
}

fn keygen(out: &std::path::Path) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let key = signature::SigningKey::generate()?;
    let public = key.public_key().to_pem()?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let write = |name: &str, mode: u32, text: &str| -> anyhow::Result<PathBuf> {
        let path = out.join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        file.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let private = write("plugin.key", 0o600, &key.to_pem()?)?;
    let public = write("plugin.pub", 0o644, &public)?;
    eprintln!(
        "wrote {} and {} (key {})",
        private.display(),
        public.display(),
        key.public_key().fingerprint()
    );
    Ok(())
}

async fn verify(reference: String, key: PathBuf, args: RegistryArgs) -> anyhow::Result<()> {
    let parsed = artifact::parse_reference(&reference, true)?;
    let pem = std::fs::read_to_string(&key).with_context(|| format!("reading {}", key.display()))?;
    let key = signature::PublicKey::from_pem(&pem).with_context(|| key.display().to_string())?;
    let (registry, auth) = args.client()?;
    // The artifact itself is pulled (and its digests checked), as the operator does before it verifies.
    let pulled = registry.pull(&parsed, &auth).await?;
    signature::verify(&registry, &parsed, &auth, &pulled.manifest_digest, &key).await?;
    let repository = format!("{}/{}", parsed.registry(), parsed.repository());
    println!("{repository}@{}", pulled.manifest_digest);
    eprintln!("verified: signed by the key {}", key.fingerprint());
    Ok(())
}

async fn inspect(plugin: PathBuf, policy: Option<PathBuf>) -> anyhow::Result<()> {
    let sandbox = Sandbox::new(
        SandboxConfig {
            cache_dir: None,
            limits: CallLimits {
                timeout: Duration::from_secs(10),
                memory_bytes: 128 << 20,
                budget: Default::default(),
            },
            policy: std::sync::Arc::new(load_policy(policy.as_deref())?),
            max_concurrent_calls: 4,
            compiler: Some(default_compiler()),
            base_config: kuberay_wasm::sandbox::default_base_config(),
        },
        Metrics::new(),
    )?;
    let loaded = sandbox
        .load_file(&plugin)
        .await
        .with_context(|| format!("loading {}", plugin.display()))?;
    let m = &loaded.metadata;
    println!("plugin:      {} {}", m.name, m.version);
    println!("digest:      sha256:{}", loaded.digest);
    println!("reconciles:  {}", m.reconciles);
    println!(
        "owns:        {}",
        m.owns
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "finalizer:   {}",
        loaded.grant.finalizer.as_deref().unwrap_or("-")
    );
    println!(
        "ray head:    {}",
        if loaded.grant.ray_heads { "yes" } else { "no" }
    );
    println!("policy:      entry {}", loaded.grant.entry);
    println!("granted:");
    for line in loaded.grant.describe() {
        println!("  {line}");
    }
    for what in &loaded.grant.withheld {
        println!("withheld:    {what} (not in the policy entry)");
    }
    let budget = &loaded.grant.budget;
    let rates = &budget.rates;
    println!(
        "budget:      per reconcile {} host calls, {} writes, {} bytes written, {} events, {} list items",
        budget.host_calls, budget.writes, budget.write_bytes, budget.events, budget.list_items
    );
    println!(
        "             across reconciles {} events then {}/s, {} bytes written then {}/s",
        rates.event_burst, rates.events_per_second, rates.write_bytes_burst, rates.write_bytes_per_second
    );
    Ok(())
}
