//! The operator's flags (`kuberay-wasm operator ...`): KubeRay's operator flags with their names, forms and
//! meaning, and ours. Their declared defaults are the operator's only defaults: the binary parses them, and
//! [`OperatorConfig::new`](super::OperatorConfig::new) takes the library's from [`OperatorArgs::defaults`].
//! What needs the process (files read, the environment, the Lease's namespace) is resolved by the binary.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::{Args, FromArgMatches};
use kuberay_rayhead::{RoutingOptions, parse_duration, parse_go_bool};

use crate::{kuberay_config::Settings, kuberay_flags::parse_bind_address, leadership, telemetry::LogFormat};

/// `--plugin-compile-memory-mib`'s default.
pub const DEFAULT_COMPILE_MEMORY_MIB: u64 = 2048;

/// `--plugin-timeout`'s default (also `plugin run`'s).
pub const DEFAULT_PLUGIN_TIMEOUT: &str = "30s";

/// `--plugin-memory-mib`'s default (also `plugin run`'s).
pub const DEFAULT_PLUGIN_MEMORY_MIB: usize = 128;

/// How the operator serves the plugins of `ReconcilePlugin` resources.
#[derive(clap::Args)]
pub struct ResourceArgs {
    /// Serve the plugins named by ReconcilePlugin resources (plugins.kuberay-wasm.io/v1alpha1); needs their
    /// CRD and the RBAC to list and watch them.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub plugin_resources: bool,
    /// Serve only the ReconcilePlugin resources whose labels match this selector (several operators in one
    /// cluster); all by default.
    #[arg(long)]
    pub plugin_resource_selector: Option<String>,
    /// Accept ReconcilePlugin artifacts named by tag rather than digest. For development only: a tag can
    /// move, so what serves is no longer what the resource says.
    #[arg(long)]
    pub allow_plugin_tags: bool,
    /// A PEM CA certificate trusted for plugin registries besides the system's (repeatable).
    #[arg(long)]
    pub plugin_registry_ca: Vec<PathBuf>,
    /// Timeout of each request to a plugin registry.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub plugin_registry_timeout: Duration,
    /// The operator's namespace, where ReconcilePlugin pull Secrets are read; default POD_NAMESPACE, else
    /// the ServiceAccount's namespace file.
    #[arg(long, env = "POD_NAMESPACE")]
    pub operator_namespace: Option<String>,
}

/// `kuberay-wasm operator`'s flags: KubeRay's operator flags with their names and forms, and ours.
#[derive(clap::Args)]
pub struct OperatorArgs {
    /// Directory of plugin components (`*.wasm`); one plugin per reconciled kind.
    #[arg(long)]
    pub plugins: PathBuf,
    /// Namespaces to watch (comma-separated); all namespaces when empty.
    #[arg(long, value_delimiter = ',')]
    pub watch_namespace: Vec<String>,
    /// Reconciles running at once across all kinds (never two for the same object).
    #[arg(long, default_value_t = 8)]
    pub concurrency: u16,
    /// Reconciles of one kind running at once (KubeRay's flag, per controller); default: --concurrency.
    #[arg(long)]
    pub reconcile_concurrency: Option<u16>,
    /// Requests per second the operator sends to the Kubernetes API on average (client-side rate limit,
    /// shared by all its requests); 0 is client-go's default of 5, a negative value disables the limit.
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub qps: f64,
    /// Requests the operator may send at once after a quiet period; 0 is client-go's default of 10.
    #[arg(long, default_value_t = 200)]
    pub burst: u32,
    /// KubeRay's feature gates, `Name=true,Other=false` (see docs/operator.md for the gates and what is
    /// supported); an unknown gate or an unsupported state is a start-up error.
    #[arg(long, default_value = "")]
    pub feature_gates: String,
    #[command(flatten)]
    pub kuberay: KubeRayArgs,
    /// A queued reconcile waits this long for more changes of the same object before it runs, each change
    /// restarting the wait (so a cluster's Pods coming up cost one reconcile, not one per Pod event); 0
    /// runs it at once.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub reconcile_debounce: Duration,
    /// Wall-time limit of one plugin call, host calls included (e.g. 30s, 500ms).
    #[arg(long, default_value = DEFAULT_PLUGIN_TIMEOUT, value_parser = parse_duration)]
    pub plugin_timeout: Duration,
    /// Linear-memory limit of one plugin call, in MiB.
    #[arg(long, default_value_t = DEFAULT_PLUGIN_MEMORY_MIB)]
    pub plugin_memory_mib: usize,
    /// Wall time compiling one plugin component may take (in a child process, killed after it).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub plugin_compile_timeout: Duration,
    /// Address space compiling one plugin component may use, in MiB (the child process's RLIMIT_AS).
    #[arg(long, default_value_t = DEFAULT_COMPILE_MEMORY_MIB)]
    pub plugin_compile_memory_mib: u64,
    /// The plugin directory is rescanned for new, changed or removed plugins when the filesystem reports a
    /// change and at least this often (for filesystems without notifications); 0 disables reloads.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub plugin_reload_interval: Duration,
    /// Where compiled plugins are kept across restarts (must be private to the operator).
    #[arg(long, env = "KUBERAY_WASM_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Disable the compiled-plugin cache.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// The administrator's policy file: which plugin files may run and what each is granted (see
    /// host/deploy/policy.yaml, built in and used when this is not given).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Entries of the policy not to serve (comma-separated names, e.g. `raycluster`), so that a
    /// ReconcilePlugin resource may serve their kinds.
    #[arg(long, value_delimiter = ',')]
    pub disable_plugins: Vec<String>,
    #[command(flatten)]
    pub resources: ResourceArgs,
    /// Where /metrics is served (`HOST:PORT` or Go's `:PORT`; KubeRay's name `--metrics-addr` too).
    #[arg(long, alias = "metrics-addr", default_value = "0.0.0.0:8080", value_parser = parse_bind_address)]
    pub metrics_bind_address: SocketAddr,
    /// Where /healthz and /readyz are served (may equal --metrics-bind-address).
    #[arg(long, default_value = "0.0.0.0:8082", value_parser = parse_bind_address)]
    pub health_probe_bind_address: SocketAddr,
    #[command(flatten)]
    pub routing: RoutingOptions,
    /// Kubeconfig to use; otherwise KUBECONFIG, ~/.kube/config or the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
}

/// KubeRay's operator flags that have no counterpart here, taken so that its Deployment's arguments start
/// this operator: the deprecated and informational ones are accepted (and logged), the ones whose behaviour
/// is missing refuse to start with the reason (`kuberay_flags::UnsupportedFlags`).
#[derive(clap::Args)]
pub struct KubeRayArgs {
    /// KubeRay's switch for its `kuberay_*` metric families, which this operator always exports (with
    /// controller-runtime's, client-go's and its own), so it is accepted without effect.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    pub enable_metrics: bool,
    /// Deprecated in KubeRay, which ignores it; so does this operator.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    pub forced_cluster_upgrade: bool,
    /// KubeRay's log encoders: `json` (JSON lines) or `console` (text); the same as --log-format.
    #[arg(long, value_parser = ["json", "console"])]
    pub log_stdout_encoder: Option<String>,
    /// KubeRay's log file's encoder; used like --log-stdout-encoder when that is not given (no log file is
    /// written).
    #[arg(long, value_parser = ["json", "console"])]
    pub log_file_encoder: Option<String>,
    /// Not supported: logs go to stderr only (a start-up error when set).
    #[arg(long)]
    pub log_file_path: Option<String>,
    /// KubeRay's Configuration file (`config.ray.io/v1alpha1`): as with KubeRay, it replaces the flags it
    /// has fields for (metrics and probe addresses, leader election, reconcile concurrency, watched
    /// namespaces, --qps/--burst, --use-kubernetes-proxy), and what it adds to Ray Pods reaches the plugins.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// KubeRay's batch scheduler integration: volcano, yunikorn, kai-scheduler or scheduler-plugins (gang
    /// scheduling with the scheduler's PodGroups, names and labels on Ray Pods, as KubeRay writes them).
    #[arg(long)]
    pub batch_scheduler: Option<String>,
    /// KubeRay's deprecated form of --batch-scheduler=volcano (not with --batch-scheduler).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    pub enable_batch_scheduler: bool,
}

impl KubeRayArgs {
    /// `--log-format`, unless left at `auto` while a KubeRay encoder is given (`json`, or `console`: text).
    pub fn log_format(&self, format: LogFormat) -> LogFormat {
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
}

/// Leader election among replicas (KubeRay's flag names), on a coordination.k8s.io/v1 Lease.
#[derive(clap::Args)]
pub struct LeaderElectionArgs {
    /// Reconcile only while holding the leader election's Lease; other replicas stand by (loaded, ready,
    /// writing nothing) and take over when the leader stops or loses it (`--enable-leader-election=false`
    /// as KubeRay's chart writes it too).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)]
    pub enable_leader_election: bool,
    /// Namespace of the Lease; default: POD_NAMESPACE, else the ServiceAccount's namespace file.
    #[arg(long, env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease: KubeRay's, so that KubeRay's operator and this one, in the same namespace, never
    /// lead at once (client-go's Lease semantics on both sides).
    #[arg(long, default_value = leadership::KUBERAY_LEASE_NAME)]
    pub leader_election_id: String,
    /// How long a standby waits after the Lease's last change before taking it over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_election_lease_duration: Duration,
    /// How long the leader keeps reconciling without renewing the Lease (shorter than the lease duration).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_election_renew_deadline: Duration,
    /// How often the leader renews and a standby tries to acquire the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_election_retry_period: Duration,
}

impl OperatorArgs {
    /// Every flag at its declared default, the environment left out (`POD_NAMESPACE`, `KUBECONFIG` and the
    /// like are the binary's to read, not an embedder's).
    ///
    /// # Panics
    ///
    /// Never, unless a declared default does not parse (a test parses them all).
    pub fn defaults() -> Self {
        let command = Self::augment_args(clap::Command::new("operator")).mut_args(|arg| arg.env(None));
        command
            .try_get_matches_from(["operator", "--plugins", "."])
            .and_then(|matches| Self::from_arg_matches(&matches))
            .unwrap_or_else(|e| panic!("the operator flags' defaults do not parse: {e}"))
    }

    /// Replaces the flags KubeRay's Configuration has fields for with its settings, as KubeRay does; returns
    /// what it adds to Ray Pods.
    pub fn take_configuration(&mut self, settings: Settings) -> serde_json::Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_default_parses_and_no_environment_reaches_them() {
        let args = OperatorArgs::defaults();
        assert_eq!(
            args.leader_election.leader_election_id,
            leadership::KUBERAY_LEASE_NAME
        );
        assert!(args.kubeconfig.is_none());
        assert!(args.leader_election.leader_election_namespace.is_none());
    }
}
