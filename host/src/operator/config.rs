//! What the operator can be told ([`OperatorConfig`]); its defaults are the flags' ([`OperatorArgs`]).

use kuberay_rules::batch_scheduler::BatchScheduler;
use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use kuberay_rayhead::RoutingOptions;

use super::args::OperatorArgs;
use crate::{
    ApiRateLimit, kuberay_env::KubeRayEnv, kuberay_flags::FeatureGates, leadership::LeaderElection,
    policy::Policy, reconcileplugin::ResourceOptions, sandbox::CallBudget,
};

/// Everything the operator can be told. Build it with [`OperatorConfig::new`] and the `with_*` methods.
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// The directory plugin components (`*.wasm`) are loaded from.
    pub plugins_dir: PathBuf,
    /// Empty: all namespaces.
    pub watch_namespaces: Vec<String>,
    /// Reconciles that may run at once, across all kinds.
    pub concurrency: u16,
    /// Reconciles of one kind that may run at once (KubeRay's `--reconcile-concurrency`, per controller);
    /// `None`: as many as `concurrency`.
    pub reconcile_concurrency: Option<u16>,
    /// The client-side rate limit of the host's API requests (`--qps`, `--burst`); `None`: no limit.
    pub api_rate_limit: Option<ApiRateLimit>,
    /// KubeRay's feature gates (`--feature-gates`), handed to every plugin in its configuration.
    pub feature_gates: FeatureGates,
    /// KubeRay's batch scheduler (`--batch-scheduler`), handed to the plugins (`batchScheduler`); its PodGroup
    /// kind, if it has one, must be served at start. The policy's other PodGroup kinds are taken out (neither
    /// watched nor written).
    pub batch_scheduler: Option<BatchScheduler>,
    /// KubeRay's environment toggles, handed to the plugins.
    pub kuberay_env: KubeRayEnv,
    /// What KubeRay's Configuration file adds to Ray Pods, handed to the plugins (`kuberayConfiguration`).
    pub pod_defaults: Option<serde_json::Value>,
    /// How long a queued reconcile waits for more changes of the same object before it runs (trailing
    /// edge: every change within the window restarts it).
    pub debounce: Duration,
    /// Wall time of one plugin call, host calls included.
    pub plugin_timeout: Duration,
    /// Linear memory one plugin call may grow to.
    pub plugin_memory_bytes: usize,
    /// What a plugin may ask of the host, per call and across calls, where its policy entry's `budget`
    /// says nothing.
    pub plugin_budget: CallBudget,
    /// The executable that compiles plugin components in a child process (`compile-plugin`, with the limits
    /// below): the operator binary's own (`/proc/self/exe`). `None` compiles in this process, bounded by the
    /// static limits only (benchmarks, embedders).
    pub compiler: Option<PathBuf>,
    /// Wall time one compile in a child may take.
    pub compile_timeout: Duration,
    /// Address space one compile in a child may use.
    pub compile_memory_bytes: u64,
    /// The plugin directory is rescanned when it changes and at least this often; `None` loads it once.
    pub reload_interval: Option<Duration>,
    /// Where compiled plugins are cached; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// The administrator's policy; `None` is the built-in one (`host/deploy/policy.yaml`).
    pub policy: Option<Arc<Policy>>,
    /// Where `/metrics` is served.
    pub metrics_addr: SocketAddr,
    /// Where `/healthz` and `/readyz` are served.
    pub health_addr: SocketAddr,
    /// A kubeconfig file; `None` infers the configuration (in-cluster or the default kubeconfig).
    pub kubeconfig: Option<PathBuf>,
    /// Identifies this replica in events (the Pod name in a cluster).
    pub instance: Option<String>,
    /// How Ray heads are reached (directly or through the API server's proxy).
    pub routing: RoutingOptions,
    /// Leader election among replicas; `None` reconciles at once, alone.
    pub leader_election: Option<LeaderElection>,
    /// Plugins named by `ReconcilePlugin` resources; `None` serves only the plugin directory's.
    pub resources: Option<ResourceOptions>,
}

impl OperatorConfig {
    /// The flags' defaults ([`OperatorArgs::defaults`]), loading plugins from `plugins_dir`. Left out, as
    /// they need the process: the compile child, the compiled-plugin cache, the policy file, the kubeconfig,
    /// the instance name, leader election and ReconcilePlugin resources.
    pub fn new(plugins_dir: impl Into<PathBuf>) -> Self {
        let args = OperatorArgs::defaults();
        Self {
            plugins_dir: plugins_dir.into(),
            watch_namespaces: Vec::new(),
            concurrency: args.concurrency,
            reconcile_concurrency: args.reconcile_concurrency,
            api_rate_limit: ApiRateLimit::from_flags(args.qps, args.burst),
            feature_gates: FeatureGates::default(),
            batch_scheduler: None,
            kuberay_env: KubeRayEnv::default(),
            pod_defaults: None,
            debounce: args.reconcile_debounce,
            plugin_timeout: args.plugin_timeout,
            plugin_memory_bytes: args.plugin_memory_mib << 20,
            plugin_budget: CallBudget::default(),
            compiler: None,
            compile_timeout: args.plugin_compile_timeout,
            compile_memory_bytes: args.plugin_compile_memory_mib << 20,
            reload_interval: (!args.plugin_reload_interval.is_zero()).then_some(args.plugin_reload_interval),
            cache_dir: None,
            policy: None,
            metrics_addr: args.metrics_bind_address,
            health_addr: args.health_probe_bind_address,
            kubeconfig: None,
            instance: None,
            routing: args.routing,
            leader_election: None,
            resources: None,
        }
    }

    /// Connects with the kubeconfig at `path`.
    #[must_use]
    pub fn with_kubeconfig(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubeconfig = Some(path.into());
        self
    }

    /// Serves metrics and health on these addresses.
    #[must_use]
    pub fn with_addrs(mut self, metrics: SocketAddr, health: SocketAddr) -> Self {
        self.metrics_addr = metrics;
        self.health_addr = health;
        self
    }

    /// Caches compiled plugins in `dir`.
    #[must_use]
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Limits each plugin call to `timeout` and `memory_bytes` of linear memory.
    #[must_use]
    pub fn with_limits(mut self, timeout: Duration, memory_bytes: usize) -> Self {
        self.plugin_timeout = timeout;
        self.plugin_memory_bytes = memory_bytes;
        self
    }

    /// Compiles plugin components by running `executable compile-plugin` in a child process, killed after
    /// `timeout`, with `memory_bytes` of address space.
    #[must_use]
    pub fn with_compiler(
        mut self,
        executable: impl Into<PathBuf>,
        timeout: Duration,
        memory_bytes: u64,
    ) -> Self {
        self.compiler = Some(executable.into());
        self.compile_timeout = timeout;
        self.compile_memory_bytes = memory_bytes;
        self
    }

    /// Watches only these namespaces (empty: all).
    #[must_use]
    pub fn with_watch_namespaces(mut self, namespaces: Vec<String>) -> Self {
        self.watch_namespaces = namespaces;
        self
    }

    /// Runs at most `concurrency` reconciles at once (at least one).
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Lets a queued reconcile wait `debounce` for more changes of the same object.
    #[must_use]
    pub fn with_debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// Reaches Ray heads through the API server's proxy instead of directly.
    #[must_use]
    pub fn with_kubernetes_proxy(mut self, enabled: bool) -> Self {
        self.routing.use_kubernetes_proxy = enabled;
        self
    }

    /// Uses this policy instead of the built-in one.
    #[must_use]
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Rescans the plugin directory this often (`None`: load it once).
    #[must_use]
    pub fn with_reload_interval(mut self, interval: Option<Duration>) -> Self {
        self.reload_interval = interval;
        self
    }

    /// Takes part in a leader election: reconciles only while holding its Lease.
    #[must_use]
    pub fn with_leader_election(mut self, election: LeaderElection) -> Self {
        self.leader_election = Some(election);
        self
    }
}
