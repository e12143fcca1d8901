//! Wiring: the HTTP endpoints (bound first: an address that cannot be bound is fatal), the Kubernetes
//! client, the sandbox with the plugins of a directory (loaded by every replica), the leader election when
//! enabled, and the controllers of each term (`term`), with an orderly shutdown.
//!
//! With leader election a replica is a standby until it holds the Lease: it serves its endpoints and keeps
//! its plugins loaded, but watches and writes nothing. It then runs a term; when the Lease is lost it stops
//! the term's controllers (their writes already fail at the fence) and becomes a candidate again. On
//! shutdown it stops the controllers, lets running reconciles finish, and releases the Lease.

mod args;
mod config;
mod integrations;
mod plugins;
mod term;

use std::{collections::BTreeSet, net::SocketAddr, sync::Arc};

use kube::{Client, client::ClientBuilder};
use kuberay_plugin_sdk::Kind;
use tokio::{sync::watch, task::JoinSet};
use tower::{buffer::BufferLayer, util::BoxService};

use self::term::TermContext;
pub use self::{
    args::{
        DEFAULT_COMPILE_MEMORY_MIB, DEFAULT_PLUGIN_MEMORY_MIB, DEFAULT_PLUGIN_TIMEOUT, KubeRayArgs,
        LeaderElectionArgs, OperatorArgs, ResourceArgs,
    },
    config::OperatorConfig,
};
use crate::{
    controller,
    kubernetes::{WatchScope, rate_limit::RateLimitLayer},
    leadership::{self, Elector, Fence},
    metrics::Metrics,
    plugin_watch::DirWatch,
    policy::Policy,
    raybridge::RayBridge,
    sandbox::{CallLimits, ChildCompiler, Sandbox, SandboxConfig},
    server::{self, Health, Readiness},
};

/// Why the operator could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The Kubernetes client could not be configured.
    #[error("Kubernetes client configuration: {0}")]
    Client(String),
    /// The sandbox could not be set up.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::registry::SandboxError),
    /// The metrics or health endpoint could not listen on its address.
    #[error("cannot listen on {addr} ({what}): {source}")]
    Serve {
        addr: SocketAddr,
        what: &'static str,
        source: std::io::Error,
    },
    /// The leader election's settings do not work together.
    #[error(transparent)]
    LeaderElection(#[from] leadership::ConfigError),
    /// What the operator was started with cannot work with this API server.
    #[error("{0}")]
    Start(String),
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
        // KUBECONFIG or ~/.kube/config, else in-cluster: KUBERNETES_SERVICE_HOST/PORT, the ServiceAccount's
        // CA, and its token file, which kube re-reads (at least every minute) so a rotated token is used.
        None => kube::Config::infer()
            .await
            .map_err(|e| OperatorError::Client(e.to_string()))?,
    };
    Ok(kube_config)
}

/// How many requests may wait for the client's retry layer at once (kube's own client buffer's bound).
const RETRY_BUFFER: usize = 1024;

/// A client of `config`, its requests counted and timed into `metrics` and rate-limited by `rate_limit`
/// (shared by every client given it; the time a request waits for the limit is not its latency). A request
/// the API server answers 429, 503 or 504 is retried as kube retries it, but from outside the metrics and
/// the rate limit, so that each attempt is counted and throttled as client-go does it, and each retry counted.
fn api_client(
    mut config: kube::Config,
    metrics: &Metrics,
    rate_limit: Option<&RateLimitLayer>,
) -> Result<Client, OperatorError> {
    let host = config
        .cluster_url
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    config.default_retry = false;
    let builder = ClientBuilder::try_from(config)
        .map_err(|e| OperatorError::Client(e.to_string()))?
        .with_layer(&metrics.rest_client.layer(host.clone()));
    let builder = match rate_limit {
        Some(layer) => builder.with_layer(layer).with_layer(&BoxService::layer()),
        None => builder.with_layer(&BoxService::layer()),
    };
    Ok(builder
        // The retry layer sends a request again through what it wraps, which must be `Clone`.
        .with_layer(&BufferLayer::new(RETRY_BUFFER))
        .with_layer(&metrics.rest_client.retry_layer(host))
        .build())
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
    if let Some(election) = &config.leader_election {
        election.validate()?;
    }
    let readiness = Arc::new(Readiness::new(config.leader_election.is_some()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut servers = serve_endpoints(&config, &metrics, &readiness, &stop_rx).await?;
    let result = operate(config, metrics, readiness.clone(), shutdown).await;
    readiness.set_loaded(false);
    let _ = stop_tx.send(true);
    while servers.join_next().await.is_some() {}
    tracing::info!("operator stopped");
    result
}

/// Binds the metrics and health addresses (failing on either) and serves them until `stop`.
async fn serve_endpoints(
    config: &OperatorConfig,
    metrics: &Metrics,
    readiness: &Arc<Readiness>,
    stop: &watch::Receiver<bool>,
) -> Result<JoinSet<()>, OperatorError> {
    let health = Health {
        metrics: metrics.clone(),
        readiness: readiness.clone(),
    };
    let mut endpoints = vec![(config.metrics_addr, "--metrics-bind-address")];
    if config.health_addr != config.metrics_addr {
        endpoints.push((config.health_addr, "--health-probe-bind-address"));
    }
    let mut listeners = Vec::new();
    for (addr, what) in endpoints {
        let listener =
            server::bind(addr)
                .await
                .map_err(|source| OperatorError::Serve { addr, what, source })?;
        listeners.push((addr, listener));
    }
    let mut servers = JoinSet::new();
    for (addr, listener) in listeners {
        let served = server::serve(listener, health.clone(), stopped(stop.clone()));
        servers.spawn(async move {
            if let Err(source) = served.await {
                tracing::error!(%addr, error = %source, "HTTP endpoint failed");
            }
        });
    }
    Ok(servers)
}

/// Everything but the endpoints: client, sandbox, plugins, and the terms.
async fn operate(
    config: OperatorConfig,
    metrics: Metrics,
    readiness: Arc<Readiness>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), OperatorError> {
    let kube_config = kube_config(&config).await?;
    let rate_limit = config.api_rate_limit.and_then(RateLimitLayer::new);
    let client = api_client(kube_config.clone(), &metrics, rate_limit.as_ref())?;
    // Requests to Ray heads through the proxy must not be retried by the client: a 503 from the proxy is
    // the answer ("no endpoints"), and retrying it would stall the reconcile for minutes.
    let ray_client = {
        let mut ray_config = kube_config;
        ray_config.default_retry = false;
        api_client(ray_config, &metrics, rate_limit.as_ref())?
    };
    if let Some(scheduler) = config.batch_scheduler {
        integrations::batch_scheduler_served(&client, scheduler).await?;
    }
    let sandbox = sandbox(&config, &metrics)?;
    let scope = if config.watch_namespaces.is_empty() {
        WatchScope::All
    } else {
        WatchScope::Namespaces(config.watch_namespaces.clone())
    };
    tracing::info!(
        plugins = %config.plugins_dir.display(), ?scope, concurrency = config.concurrency,
        routing = ?config.routing.mode(), leader_election = config.leader_election.is_some(),
        "operator starting"
    );
    let context = TermContext {
        sandbox: sandbox.clone(),
        ray: RayBridge::new(config.routing.heads(), ray_client),
        client: client.clone(),
        scope,
        instance: config.instance.clone(),
        metrics: metrics.clone(),
        queue: controller::QueueConfig {
            concurrency: config.reconcile_concurrency.unwrap_or(config.concurrency).max(1),
            debounce: config.debounce,
        },
        readiness: readiness.clone(),
    };

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = shutdown_tx.send(true);
    });
    // Watching starts before the first scan, so a plugin that lands in between is not missed.
    let watch = config
        .reload_interval
        .map(|interval| (interval, DirWatch::new(&config.plugins_dir)));
    let (kinds_tx, kinds_rx) = watch::channel(BTreeSet::new());
    plugins::load(&sandbox, &config.plugins_dir, &kinds_tx).await;
    readiness.set_loaded(true);
    let resource_client = client.clone();
    let resources = async {
        let Some(options) = config.resources.clone() else {
            return std::future::pending().await;
        };
        crate::reconcileplugin::run(crate::reconcileplugin::Context {
            client: resource_client,
            sandbox: sandbox.clone(),
            kinds: kinds_tx.clone(),
            readiness: readiness.clone(),
            metrics: metrics.clone(),
            instance: config.instance.clone(),
            operator: installation(&config),
            options,
        })
        .await;
    };
    let reload = plugins::reload(sandbox.clone(), &config.plugins_dir, watch, &kinds_tx);
    let terms = async {
        match &config.leader_election {
            None => {
                let stop = stopped(shutdown_rx.clone());
                readiness.set_leading(true);
                term::run(&context, Fence::open(), kinds_rx, stop).await;
            }
            Some(election) => {
                let elector = Elector::new(client, election.clone(), metrics.leadership.clone());
                lead(&context, elector, kinds_rx, shutdown_rx.clone()).await;
            }
        }
    };
    tokio::select! {
        () = terms => {}
        () = reload => {}
        () = resources => {}
    }
    Ok(())
}

/// The name replicas of one installation share: their Lease, or without an election the instance.
fn installation(config: &OperatorConfig) -> String {
    match (&config.leader_election, &config.instance) {
        (Some(election), _) => format!("{}/{}", election.namespace, election.lease_name),
        (None, Some(instance)) => instance.clone(),
        (None, None) => "kuberay-wasm".into(),
    }
}

fn sandbox(config: &OperatorConfig, metrics: &Metrics) -> Result<Arc<Sandbox>, OperatorError> {
    Ok(Sandbox::new(
        SandboxConfig {
            cache_dir: config.cache_dir.clone(),
            limits: CallLimits {
                timeout: config.plugin_timeout,
                memory_bytes: config.plugin_memory_bytes,
                budget: config.plugin_budget,
            },
            policy: {
                let policy = config.policy.as_deref().cloned().unwrap_or_else(Policy::builtin);
                Arc::new(policy.without_kinds(&integrations::unused_kinds(config)))
            },
            // Reconciles are bounded by the concurrency; plugin loads during a rescan need a few more.
            max_concurrent_calls: u32::from(config.concurrency) * 2 + 8,
            compiler: config.compiler.clone().map(|executable| ChildCompiler {
                executable,
                timeout: config.compile_timeout,
                memory_bytes: config.compile_memory_bytes,
            }),
            base_config: crate::sandbox::base_config(
                &config.routing.cluster_domain,
                &config.feature_gates,
                &config.kuberay_env,
                config.batch_scheduler,
                config.pod_defaults.as_ref(),
            ),
        },
        metrics.clone(),
    )?)
}

/// Stands by until this replica holds the Lease, runs a term while it does, and again after a loss; on
/// shutdown, stops the term (renewing meanwhile) and releases the Lease.
async fn lead(
    context: &TermContext,
    mut elector: Elector,
    kinds: watch::Receiver<BTreeSet<Kind>>,
    shutdown: watch::Receiver<bool>,
) {
    loop {
        context.readiness.set_leading(false);
        let fence = tokio::select! {
            fence = elector.acquire() => fence,
            () = stopped(shutdown.clone()) => return,
        };
        context.readiness.set_leading(true);
        let (end_tx, end_rx) = watch::channel(false);
        let running = term::run(context, fence.clone(), kinds.clone(), stopped(end_rx));
        tokio::pin!(running);
        let lost = tokio::select! {
            () = &mut running => None,
            lost = elector.hold(&fence) => Some(lost),
            () = stopped(shutdown.clone()) => {
                let _ = end_tx.send(true);
                // Renewing while the reconciles finish keeps their writes inside the fence.
                tokio::select! {
                    () = &mut running => elector.release(&fence).await,
                    lost = elector.hold(&fence) => {
                        tracing::warn!(%lost, "lost the leadership while shutting down");
                        context.readiness.set_leading(false);
                        running.await;
                    }
                }
                return;
            }
        };
        context.readiness.set_leading(false);
        if let Some(lost) = lost {
            tracing::warn!(%lost, "stepping down: stopping the controllers; standing by again");
        }
        let _ = end_tx.send(true);
        running.await;
    }
}

/// Resolves once `stop` turns true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use axum::{Router, http::StatusCode, response::IntoResponse, routing::get};
    use k8s_openapi::api::core::v1::Pod;
    use kube::Api;

    use super::*;

    /// An API server that answers the first GET of Pod `p` with 429 and the next with the Pod.
    async fn throttling_api_server() -> (String, Arc<AtomicUsize>) {
        let answered = Arc::new(AtomicUsize::new(0));
        let count = answered.clone();
        let app = Router::new().route(
            "/api/v1/namespaces/default/pods/p",
            get(move || {
                let first = count.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    if first {
                        return (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
                    }
                    let pod =
                        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"}}"#;
                    ([("content-type", "application/json")], pod).into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (address.to_string(), answered)
    }

    /// The client's stack as the operator builds it: a 429 is retried (once, not also by kube inside), and
    /// both attempts and the retry are in client-go's families.
    #[tokio::test]
    async fn a_throttled_request_is_retried_and_each_attempt_and_retry_counted() {
        let (address, answered) = throttling_api_server().await;
        let config = kube::Config::new(format!("http://{address}").parse().unwrap());
        let metrics = Metrics::new();
        let client = api_client(config, &metrics, None).unwrap();
        let pod = Api::<Pod>::namespaced(client, "default").get("p").await.unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
        assert_eq!(answered.load(Ordering::SeqCst), 2);
        let text = metrics.encode();
        for series in [
            format!(r#"rest_client_request_retries_total{{code="429",verb="GET",host="{address}"}} 1"#),
            format!(r#"rest_client_requests_total{{code="429",method="GET",host="{address}"}} 1"#),
            format!(r#"rest_client_requests_total{{code="200",method="GET",host="{address}"}} 1"#),
        ] {
            assert!(text.contains(&series), "{series} missing in {text}");
        }
    }
}
