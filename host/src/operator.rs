//! Wiring: the Kubernetes client, the sandbox with the plugins of a directory, the bridge, one controller per
//! reconciled kind, the HTTP endpoints, plugin reloads, and an orderly shutdown.

use std::{
    collections::BTreeSet,
    net::SocketAddr,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use kube::Client;
use kuberay_plugin_sdk::Kind;
use kuberay_rayhead::RoutingOptions;
use tokio::{
    sync::{oneshot, watch},
    task::JoinSet,
};

use crate::{
    controller::{self, Failures, Permits, Shared},
    kubernetes::{KubeBridge, WatchScope},
    metrics::Metrics,
    plugin_watch::DirWatch,
    policy::Policy,
    raybridge::RayBridge,
    sandbox::{CallBudget, CallLimits, Sandbox, SandboxConfig},
    server::{self, Health},
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
    /// How long a queued reconcile waits for more changes of the same object before it runs (trailing
    /// edge: every change within the window restarts it).
    pub debounce: Duration,
    /// Wall time of one plugin call, host calls included.
    pub plugin_timeout: Duration,
    /// Linear memory one plugin call may grow to.
    pub plugin_memory_bytes: usize,
    /// Host calls, writes, events and list sizes one plugin call may use.
    pub plugin_budget: CallBudget,
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
}

impl OperatorConfig {
    /// The defaults, loading plugins from `plugins_dir`.
    pub fn new(plugins_dir: impl Into<PathBuf>) -> Self {
        Self {
            plugins_dir: plugins_dir.into(),
            watch_namespaces: Vec::new(),
            concurrency: 8,
            debounce: Duration::from_millis(100),
            plugin_timeout: Duration::from_secs(30),
            plugin_memory_bytes: 128 << 20,
            plugin_budget: CallBudget::default(),
            reload_interval: Some(Duration::from_secs(5)),
            cache_dir: None,
            policy: None,
            metrics_addr: SocketAddr::from(([0, 0, 0, 0], 8080)),
            health_addr: SocketAddr::from(([0, 0, 0, 0], 8082)),
            kubeconfig: None,
            instance: None,
            routing: RoutingOptions::default(),
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
}

/// Why the operator could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The Kubernetes client could not be configured.
    #[error("Kubernetes client configuration: {0}")]
    Client(String),
    /// The sandbox could not be set up.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::registry::SandboxError),
    /// The metrics or health server could not listen.
    #[error("serving {addr}: {source}")]
    Serve {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

async fn kube_config(config: &OperatorConfig) -> Result<kube::Config, OperatorError> {
    let kube_config = match &config.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| OperatorError::Client(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| OperatorError::Client(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| OperatorError::Client(e.to_string()))?,
    };
    Ok(kube_config)
}

/// Runs the operator until `shutdown` resolves, then stops controllers (letting running reconciles finish)
/// and returns.
pub async fn run(
    config: OperatorConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), OperatorError> {
    run_with_metrics(config, Metrics::new(), shutdown).await
}

/// [`run`], recording into `metrics` (which the caller can read, as tests and embedders do).
pub async fn run_with_metrics(
    config: OperatorConfig,
    metrics: Metrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), OperatorError> {
    let kube_config = kube_config(&config).await?;
    let client = Client::try_from(kube_config.clone()).map_err(|e| OperatorError::Client(e.to_string()))?;
    // Requests to Ray heads through the proxy must not be retried by the client: a 503 from the proxy is
    // the answer ("no endpoints"), and retrying it would stall the reconcile for minutes.
    let ray_client = {
        let mut ray_config = kube_config;
        ray_config.default_retry = false;
        Client::try_from(ray_config).map_err(|e| OperatorError::Client(e.to_string()))?
    };
    let routing = config.routing.mode();
    let ray = config.routing.heads();
    let sandbox = Sandbox::new(
        SandboxConfig {
            cache_dir: config.cache_dir.clone(),
            limits: CallLimits {
                timeout: config.plugin_timeout,
                memory_bytes: config.plugin_memory_bytes,
                budget: config.plugin_budget,
            },
            policy: config
                .policy
                .clone()
                .unwrap_or_else(|| Arc::new(Policy::builtin())),
            // Reconciles are bounded by the concurrency; plugin loads during a rescan need a few more.
            max_concurrent_calls: u32::from(config.concurrency) * 2 + 8,
        },
        metrics.clone(),
    )?;
    let scope = if config.watch_namespaces.is_empty() {
        WatchScope::All
    } else {
        WatchScope::Namespaces(config.watch_namespaces.clone())
    };
    let bridge = KubeBridge::new(client, scope.clone(), config.instance.clone(), metrics.clone());
    let ray = RayBridge::new(ray, ray_client);
    let shared = Arc::new(Shared {
        sandbox: sandbox.clone(),
        bridge: bridge.clone(),
        ray,
        permits: Permits::new(usize::from(config.concurrency)),
        failures: Failures::default(),
        metrics: metrics.clone(),
    });

    let (stop_tx, stop_rx) = watch::channel(false);
    let ready = Arc::new(AtomicBool::new(false));
    let health = Health {
        metrics: metrics.clone(),
        ready: ready.clone(),
    };
    let mut tasks = JoinSet::new();
    let mut addrs = vec![config.metrics_addr];
    if config.health_addr != config.metrics_addr {
        addrs.push(config.health_addr);
    }
    for addr in addrs {
        let listener_health = health.clone();
        let stopped = stopped(stop_rx.clone());
        let server = server::serve(addr, listener_health, stopped);
        tasks.spawn(async move {
            if let Err(source) = server.await {
                tracing::error!(%addr, error = %source, "HTTP endpoint failed");
            }
        });
    }
    tracing::info!(
        plugins = %config.plugins_dir.display(), ?scope, concurrency = config.concurrency, ?routing,
        "operator starting"
    );

    let mut running: BTreeSet<Kind> = BTreeSet::new();
    let mut registrations = Vec::new();
    // Each controller says when it has registered its caches (or failed its first start), so that
    // readiness waits for exactly the caches of the plugins loaded at start-up.
    let start = |kind: Kind, tasks: &mut JoinSet<()>| {
        let (shared, stop) = (shared.clone(), stop_rx.clone());
        let queue = controller::Queue {
            concurrency: config.concurrency,
            debounce: config.debounce,
        };
        let (registered_tx, registered_rx) = oneshot::channel();
        tasks.spawn(async move {
            // A kind whose CRD is not installed yet (or not yet in discovery, right after it was applied)
            // is retried rather than given up: the operator must not need a restart once the CRD is there.
            let mut attempt: u32 = 0;
            let mut registered = Some(registered_tx);
            loop {
                let run = controller::run(
                    kind.clone(),
                    shared.clone(),
                    queue,
                    stopped(stop.clone()),
                    &mut registered,
                );
                let Err(e) = run.await else {
                    break;
                };
                registered = None;
                attempt = attempt.saturating_add(1);
                let retry_in = CONTROLLER_START_RETRY.saturating_mul(attempt.min(6));
                tracing::warn!(
                    %kind, error = %e, ?retry_in,
                    "controller could not start; is the kind's CRD installed?"
                );
                tokio::select! {
                    () = tokio::time::sleep(retry_in) => {}
                    () = stopped(stop.clone()) => return,
                }
            }
        });
        registered_rx
    };
    // Watching starts before the first scan, so a plugin that lands in between is not missed.
    let mut watch = config
        .reload_interval
        .map(|interval| (interval, DirWatch::new(&config.plugins_dir)));
    match sandbox.scan(&config.plugins_dir).await {
        Ok(report) => {
            if report.loaded.is_empty() {
                tracing::warn!(dir = %config.plugins_dir.display(), "no plugin loaded; nothing will be reconciled until one is");
            }
            for kind in report.new_kinds {
                running.insert(kind.clone());
                registrations.push(start(kind, &mut tasks));
            }
        }
        Err(e) => tracing::error!(error = %e, "could not read the plugin directory"),
    }

    {
        let (bridge, ready) = (bridge.clone(), ready.clone());
        tasks.spawn(async move {
            for registered in registrations {
                let _ = registered.await;
            }
            bridge.caches.wait_ready().await;
            ready.store(true, Ordering::Relaxed);
            tracing::info!("caches synced; ready");
        });
    }

    let reload = async {
        let Some((interval, watch)) = watch.as_mut() else {
            return std::future::pending().await;
        };
        loop {
            watch.changed(*interval).await;
            match sandbox.scan(&config.plugins_dir).await {
                Ok(report) => {
                    for kind in report.new_kinds {
                        if running.insert(kind.clone()) {
                            drop(start(kind, &mut tasks));
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not rescan the plugin directory"),
            }
        }
    };
    tokio::select! {
        () = shutdown => {}
        () = reload => {}
    }
    tracing::info!("shutting down: letting running reconciles finish");
    ready.store(false, Ordering::Relaxed);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(Duration::from_secs(30), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("some tasks did not stop within 30s");
    }
    bridge.events.flush(Duration::from_secs(5)).await;
    bridge.caches.shutdown();
    tracing::info!("operator stopped");
    Ok(())
}

/// The first wait before retrying a controller whose kind the API server does not serve; later waits grow
/// linearly to six times this.
const CONTROLLER_START_RETRY: Duration = Duration::from_secs(5);

/// Resolves once `stop` turns true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
