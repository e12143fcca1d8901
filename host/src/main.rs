//! `kuberay-wasm`: the operator binary.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use anyhow::Context;
use clap::{Parser, Subcommand};
use kuberay_rayhead::{RoutingOptions, parse_duration, parse_go_bool};
use kuberay_wasm::{
    ApiRateLimit, DEFAULT_COMPILE_MEMORY_MIB, DEFAULT_COMPILE_TIMEOUT, OperatorConfig,
    authoring::{self, run::RunOptions},
    kuberay_config::Configuration,
    kuberay_env::KubeRayEnv,
    kuberay_flags::{FeatureGates, UnsupportedFlags, batch_scheduler, parse_bind_address},
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
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    plugin_timeout: Duration,
    /// Linear-memory limit of the call in MiB (the operator's --plugin-memory-mib).
    #[arg(long, default_value_t = 128)]
    plugin_memory_mib: usize,
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

/// How the operator serves the plugins of `ReconcilePlugin` resources.
#[derive(clap::Args)]
struct ResourceArgs {
    /// Serve the plugins named by ReconcilePlugin resources (plugins.kuberay-wasm.io/v1alpha1); needs their
    /// CRD and the RBAC to list and watch them.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    plugin_resources: bool,
    /// Serve only the ReconcilePlugin resources whose labels match this selector (several operators in one
    /// cluster); all by default.
    #[arg(long)]
    plugin_resource_selector: Option<String>,
    /// Accept ReconcilePlugin artifacts named by tag rather than digest. For development only: a tag can
    /// move, so what serves is no longer what the resource says.
    #[arg(long)]
    allow_plugin_tags: bool,
    /// A PEM CA certificate trusted for plugin registries besides the system's (repeatable).
    #[arg(long)]
    plugin_registry_ca: Vec<PathBuf>,
    /// Timeout of each request to a plugin registry.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    plugin_registry_timeout: Duration,
    /// The operator's namespace, where ReconcilePlugin pull Secrets are read; default POD_NAMESPACE, else
    /// the ServiceAccount's namespace file.
    #[arg(long, env = "POD_NAMESPACE")]
    operator_namespace: Option<String>,
}

impl ResourceArgs {
    fn options(self) -> anyhow::Result<Option<ResourceOptions>> {
        if !self.plugin_resources {
            return Ok(None);
        }
        let mut extra_roots = Vec::new();
        for path in &self.plugin_registry_ca {
            extra_roots.push(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?);
        }
        let file = std::path::Path::new(leadership::SERVICE_ACCOUNT_NAMESPACE_FILE);
        Ok(Some(ResourceOptions {
            namespace: self
                .operator_namespace
                .filter(|ns| !ns.is_empty())
                .or_else(|| leadership::namespace_from_file(file)),
            selector: self.plugin_resource_selector,
            allow_tags: self.allow_plugin_tags,
            registry: RegistryOptions {
                extra_roots,
                timeout: self.plugin_registry_timeout,
            },
        }))
    }
}

#[derive(clap::Args)]
struct OperatorArgs {
    /// Directory of plugin components (`*.wasm`); one plugin per reconciled kind.
    #[arg(long)]
    plugins: PathBuf,
    /// Namespaces to watch (comma-separated); all namespaces when empty.
    #[arg(long, value_delimiter = ',')]
    watch_namespace: Vec<String>,
    /// Reconciles running at once across all kinds (never two for the same object).
    #[arg(long, default_value_t = 8)]
    concurrency: u16,
    /// Reconciles of one kind running at once (KubeRay's flag, per controller); default: --concurrency.
    #[arg(long)]
    reconcile_concurrency: Option<u16>,
    /// Requests per second the operator sends to the Kubernetes API on average (client-side rate limit,
    /// shared by all its requests); 0 is client-go's default of 5, a negative value disables the limit.
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    qps: f64,
    /// Requests the operator may send at once after a quiet period; 0 is client-go's default of 10.
    #[arg(long, default_value_t = 200)]
    burst: u32,
    /// KubeRay's feature gates, `Name=true,Other=false` (see docs/operator.md for the gates and what is
    /// supported); an unknown gate or an unsupported state is a start-up error.
    #[arg(long, default_value = "")]
    feature_gates: String,
    #[command(flatten)]
    kuberay: KubeRayArgs,
    /// A queued reconcile waits this long for more changes of the same object before it runs, each change
    /// restarting the wait (so a cluster's Pods coming up cost one reconcile, not one per Pod event); 0
    /// runs it at once.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    reconcile_debounce: Duration,
    /// Wall-time limit of one plugin call, host calls included (e.g. 30s, 500ms).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    plugin_timeout: Duration,
    /// Linear-memory limit of one plugin call, in MiB.
    #[arg(long, default_value_t = 128)]
    plugin_memory_mib: usize,
    /// Wall time compiling one plugin component may take (in a child process, killed after it).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    plugin_compile_timeout: Duration,
    /// Address space compiling one plugin component may use, in MiB (the child process's RLIMIT_AS).
    #[arg(long, default_value_t = DEFAULT_COMPILE_MEMORY_MIB)]
    plugin_compile_memory_mib: u64,
    /// The plugin directory is rescanned for new, changed or removed plugins when the filesystem reports a
    /// change and at least this often (for filesystems without notifications); 0 disables reloads.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    plugin_reload_interval: Duration,
    /// Where compiled plugins are kept across restarts (must be private to the operator).
    #[arg(long, env = "KUBERAY_WASM_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Disable the compiled-plugin cache.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
    /// The administrator's policy file: which plugin files may run and what each is granted (see
    /// host/deploy/policy.yaml, built in and used when this is not given).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Entries of the policy not to serve (comma-separated names, e.g. `raycluster`), so that a
    /// ReconcilePlugin resource may serve their kinds.
    #[arg(long, value_delimiter = ',')]
    disable_plugins: Vec<String>,
    #[command(flatten)]
    resources: ResourceArgs,
    /// Where /metrics is served (`HOST:PORT` or Go's `:PORT`; KubeRay's name `--metrics-addr` too).
    #[arg(long, alias = "metrics-addr", default_value = "0.0.0.0:8080", value_parser = parse_bind_address)]
    metrics_bind_address: SocketAddr,
    /// Where /healthz and /readyz are served (may equal --metrics-bind-address).
    #[arg(long, default_value = "0.0.0.0:8082", value_parser = parse_bind_address)]
    health_probe_bind_address: SocketAddr,
    #[command(flatten)]
    routing: RoutingOptions,
    /// Kubeconfig to use; otherwise KUBECONFIG, ~/.kube/config or the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    leader_election: LeaderElectionArgs,
}

/// KubeRay's operator flags that have no counterpart here, taken so that its Deployment's arguments start
/// this operator: the deprecated and informational ones are accepted (and logged), the ones whose behaviour
/// is missing refuse to start with the reason (`kuberay_flags::UnsupportedFlags`).
#[derive(clap::Args)]
struct KubeRayArgs {
    /// KubeRay's switch for its `kuberay_*` metric families, which this operator always exports (with
    /// controller-runtime's, client-go's and its own), so it is accepted without effect.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    enable_metrics: bool,
    /// Deprecated in KubeRay, which ignores it; so does this operator.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    forced_cluster_upgrade: bool,
    /// KubeRay's log encoders: `json` (JSON lines) or `console` (text); the same as --log-format.
    #[arg(long, value_parser = ["json", "console"])]
    log_stdout_encoder: Option<String>,
    /// KubeRay's log file's encoder; used like --log-stdout-encoder when that is not given (no log file is
    /// written).
    #[arg(long, value_parser = ["json", "console"])]
    log_file_encoder: Option<String>,
    /// Not supported: logs go to stderr only (a start-up error when set).
    #[arg(long)]
    log_file_path: Option<String>,
    /// KubeRay's Configuration file (`config.ray.io/v1alpha1`): as with KubeRay, it replaces the flags it
    /// has fields for (metrics and probe addresses, leader election, reconcile concurrency, watched
    /// namespaces, --qps/--burst, --use-kubernetes-proxy), and what it adds to Ray Pods reaches the plugins.
    #[arg(long)]
    config: Option<PathBuf>,
    /// KubeRay's batch scheduler integration: volcano, yunikorn, kai-scheduler or scheduler-plugins (gang
    /// scheduling with the scheduler's PodGroups, names and labels on Ray Pods, as KubeRay writes them).
    #[arg(long)]
    batch_scheduler: Option<String>,
    /// KubeRay's deprecated form of --batch-scheduler=volcano (not with --batch-scheduler).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    enable_batch_scheduler: bool,
}

impl KubeRayArgs {
    /// `--log-format`, unless left at `auto` while a KubeRay encoder is given (`json`, or `console`: text).
    fn log_format(&self, format: LogFormat) -> LogFormat {
        let encoder = self
            .log_stdout_encoder
            .as_deref()
            .or(self.log_file_encoder.as_deref());
        match (format, encoder) {
            (LogFormat::Auto, Some("json")) => LogFormat::Json,
            (LogFormat::Auto, Some("console")) => LogFormat::Text,
            (format, _) => format,
        }
    }

    /// Refuses what cannot be honoured, logs what is accepted without effect; the batch scheduler chosen.
    fn check(self) -> anyhow::Result<Option<kuberay_rules::batch_scheduler::BatchScheduler>> {
        UnsupportedFlags {
            log_file_path: self.log_file_path,
        }
        .check()?;
        let scheduler = batch_scheduler(self.batch_scheduler.as_deref(), self.enable_batch_scheduler)?;
        if self.forced_cluster_upgrade {
            tracing::warn!("--forced-cluster-upgrade is deprecated and ignored, as by KubeRay");
        }
        if self.enable_metrics {
            tracing::info!(
                "--enable-metrics: KubeRay's kuberay_* metric families are always exported here, flag or not"
            );
        }
        Ok(scheduler)
    }
}

/// Leader election among replicas (KubeRay's flag names), on a coordination.k8s.io/v1 Lease.
#[derive(clap::Args)]
struct LeaderElectionArgs {
    /// Reconcile only while holding the leader election's Lease; other replicas stand by (loaded, ready,
    /// writing nothing) and take over when the leader stops or loses it (`--enable-leader-election=false`
    /// as KubeRay's chart writes it too).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    enable_leader_election: bool,
    /// Namespace of the Lease; default: POD_NAMESPACE, else the ServiceAccount's namespace file.
    #[arg(long, env = "POD_NAMESPACE")]
    leader_election_namespace: Option<String>,
    /// Name of the Lease: KubeRay's, so that KubeRay's operator and this one, in the same namespace, never
    /// lead at once (client-go's Lease semantics on both sides).
    #[arg(long, default_value = leadership::KUBERAY_LEASE_NAME)]
    leader_election_id: String,
    /// How long a standby waits after the Lease's last change before taking it over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    leader_election_lease_duration: Duration,
    /// How long the leader keeps reconciling without renewing the Lease (shorter than the lease duration).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    leader_election_renew_deadline: Duration,
    /// How often the leader renews and a standby tries to acquire the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    leader_election_retry_period: Duration,
}

impl LeaderElectionArgs {
    /// The election, if enabled: the namespace and identity resolved, the timings checked.
    fn election(self, instance: Option<&str>) -> anyhow::Result<Option<LeaderElection>> {
        if !self.enable_leader_election {
            return Ok(None);
        }
        let file = std::path::Path::new(leadership::SERVICE_ACCOUNT_NAMESPACE_FILE);
        let namespace = self
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
            lease_name: self.leader_election_id,
            identity: leadership::unique_identity(instance.unwrap_or("kuberay-wasm")),
            lease_duration: self.leader_election_lease_duration,
            renew_deadline: self.leader_election_renew_deadline,
            retry_period: self.leader_election_retry_period,
        };
        election.validate()?;
        Ok(Some(election))
    }
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
        compiler: Some(ChildCompiler {
            executable: own_executable(),
            timeout: DEFAULT_COMPILE_TIMEOUT,
            memory_bytes: DEFAULT_COMPILE_MEMORY_MIB << 20,
        }),
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

/// This very executable, even if its file was replaced since it started: the compile child must be the
/// same build as the operator (its engine settings are what the artifact is compiled for).
fn own_executable() -> PathBuf {
    PathBuf::from("/proc/self/exe")
}

impl OperatorArgs {
    /// Replaces the flags KubeRay's Configuration has fields for with its settings, as KubeRay does; returns
    /// what it adds to Ray Pods.
    fn take_configuration(&mut self, settings: kuberay_wasm::kuberay_config::Settings) -> serde_json::Value {
        self.metrics_bind_address = settings.metrics_addr;
        self.health_probe_bind_address = settings.probe_addr;
        self.leader_election.enable_leader_election = settings.leader_election;
        if settings.leader_election_namespace.is_some() {
            self.leader_election.leader_election_namespace = settings.leader_election_namespace;
        }
        self.reconcile_concurrency = Some(settings.reconcile_concurrency);
        self.watch_namespace = settings.watch_namespaces;
        self.qps = settings.qps;
        self.burst = settings.burst;
        self.routing.use_kubernetes_proxy = settings.use_kubernetes_proxy;
        self.kuberay.batch_scheduler = settings.batch_scheduler;
        self.kuberay.enable_batch_scheduler = settings.enable_batch_scheduler;
        settings.pod_defaults
    }
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
    let batch_scheduler = args.kuberay.check()?;
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
    config.api_rate_limit = api_rate_limit(args.qps, args.burst);
    config.feature_gates = gates;
    config.batch_scheduler = batch_scheduler;
    config.kuberay_env = kuberay_env;
    config.pod_defaults = pod_defaults;
    config.resources = args.resources.options()?;
    config.kubeconfig = args.kubeconfig;
    config.routing = args.routing;
    config.instance = instance_name();
    config.leader_election = args.leader_election.election(config.instance.as_deref())?;
    kuberay_wasm::run(config, shutdown_signal())
        .await
        .context("operator failed")
}

/// `--qps` and `--burst` as client-go reads them: 0 is its default (5 per second, a burst of 10), a negative
/// rate no limit.
fn api_rate_limit(qps: f64, burst: u32) -> Option<ApiRateLimit> {
    if qps < 0.0 {
        return None;
    }
    Some(ApiRateLimit {
        qps: if qps == 0.0 { 5.0 } else { qps },
        burst: if burst == 0 { 10 } else { burst },
    })
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
            compiler: Some(ChildCompiler {
                executable: own_executable(),
                timeout: DEFAULT_COMPILE_TIMEOUT,
                memory_bytes: DEFAULT_COMPILE_MEMORY_MIB << 20,
            }),
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
