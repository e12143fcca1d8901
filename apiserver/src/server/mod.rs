//! Wiring: the server's own Kubernetes client, authentication, the services, both ports, readiness and
//! a graceful stop (on shutdown `/readyz` turns 503 and the gRPC health service NOT_SERVING, the
//! listeners close, running calls get `--shutdown-timeout` to finish).

mod deadline;
mod grpc;
mod health;
mod http;
mod listener;
mod observe;
mod tls;

use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;

pub use self::{listener::PeerAddr, observe::RouteLabel};
use crate::{
    api::ray_job_submission_service_server::RayJobSubmissionServiceServer,
    auth::{AuthLayer, AuthMode, Authenticator, access::AccessReviewer},
    config::Config,
    metrics::Metrics,
    openapi, passthrough,
    rest::Gateway,
    services::Services,
    submissions::{Heads, JobSubmissions},
};

/// Addresses the server listens on, once bound (port 0 in the configuration picks a free port).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub grpc: std::net::SocketAddr,
    pub http: std::net::SocketAddr,
}

/// The server's own client, from `--kubeconfig` or the usual places.
pub async fn kube_client(config: &Config) -> anyhow::Result<kube::Client> {
    let kube_config = kube_config(config).await?;
    kube::Client::try_from(kube_config).context("building the Kubernetes client")
}

/// The server's own client for watches: the same, without a read timeout, since the API server keeps a
/// watch open (and silent while nothing changes) until the watch's own timeout.
pub async fn streaming_kube_client(config: &Config) -> anyhow::Result<kube::Client> {
    let mut kube_config = kube_config(config).await?;
    kube_config.read_timeout = None;
    kube::Client::try_from(kube_config).context("building the Kubernetes client for watches")
}

async fn kube_config(config: &Config) -> anyhow::Result<kube::Config> {
    let mut kube_config = match &config.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("finding the Kubernetes API server")?,
    };
    // A slow API server must fail a call with UNAVAILABLE before the call's own deadline runs out, and an
    // error is the caller's to retry: kube's automatic retries would hold a call (and a proxied Ray request)
    // for minutes.
    kube_config.default_retry = false;
    let budget = config.request_timeout.mul_f64(0.8);
    kube_config.read_timeout = Some(budget);
    kube_config.write_timeout = Some(budget);
    kube_config.connect_timeout = Some(budget.min(std::time::Duration::from_secs(10)));
    Ok(kube_config)
}

/// The API's gRPC services, each accepting messages up to `--max-request-bytes`.
fn routes(config: &Config, server: &kube::Client, metrics: &Metrics) -> tonic::service::RoutesBuilder {
    let heads = Heads::new(
        config.routing.heads(),
        AccessReviewer::new(server.clone()),
        metrics.clone(),
    );
    let submissions = RayJobSubmissionServiceServer::new(JobSubmissions::new(Arc::new(heads)))
        .max_decoding_message_size(config.max_request_bytes);
    let mut routes = tonic::service::RoutesBuilder::default();
    Services::system()
        .with_max_message_size(config.max_request_bytes)
        .add_to(&mut routes);
    routes.add_service(submissions);
    routes
}

/// Serves until `shutdown` resolves; `on_bound` learns the addresses once both ports listen.
pub async fn run(
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_bound: impl FnOnce(Bound) + Send,
) -> anyhow::Result<()> {
    let server = kube_client(&config).await?;
    let metrics = Metrics::new();
    if config.auth == AuthMode::None {
        tracing::warn!(
            "--auth none: calls are NOT authenticated and every call acts with this server's own \
             Kubernetes rights, whoever makes it"
        );
    }
    let auth = Arc::new(
        Authenticator::new(
            server.clone(),
            config.auth,
            config.token_audiences.clone(),
            config.token_cache_ttl,
            metrics.clone(),
        )
        .with_streaming_client(streaming_kube_client(&config).await?),
    );
    let routes = routes(&config, &server, &metrics);
    let (core, health) = grpc::core(
        routes,
        AuthLayer::new(auth.clone()),
        deadline::DeadlineLayer::new(config.request_timeout),
    )
    .await?;
    let readiness = health::Readiness::new();
    let v2_paths = if config.enable_api_server_v2 {
        passthrough::openapi_paths()
    } else {
        serde_json::Map::new()
    };
    let document = openapi::document(v2_paths).context("generating the OpenAPI document")?;
    let rest = http::RestState {
        gateway: Arc::new(
            Gateway::new()
                .context("building the REST routes from the API definition")?
                .with_body_limit(config.max_request_bytes),
        ),
        core: core.clone(),
        auth,
        readiness: readiness.clone(),
        metrics: metrics.clone(),
        openapi: Arc::new(document.to_string()),
        swagger: Arc::new(
            openapi::swagger2::documents(&document)
                .context("generating the Swagger documents")?
                .into_iter()
                .map(|(name, document)| (name, document.to_string()))
                .collect(),
        ),
        max_body: config.max_request_bytes,
        v2: config.enable_api_server_v2,
    };
    let tls = match (&config.tls_cert_file, &config.tls_key_file) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key, config.client_ca_file.as_deref())?),
        _ => None,
    };
    let grpc_listener = TcpListener::bind(config.grpc_bind_address)
        .await
        .with_context(|| format!("listening on {} (gRPC)", config.grpc_bind_address))?;
    let http_listener = TcpListener::bind(config.http_bind_address)
        .await
        .with_context(|| format!("listening on {} (REST)", config.http_bind_address))?;
    let bound = Bound {
        grpc: grpc_listener.local_addr()?,
        http: http_listener.local_addr()?,
    };
    tracing::info!(grpc = %bound.grpc, http = %bound.http, tls = tls.is_some(), auth = ?config.auth, "serving");
    on_bound(bound);

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let probe = tokio::spawn(readiness.clone().probe(server));
    let grpc_task = tokio::spawn(listener::serve(
        "grpc",
        grpc_listener,
        tls.clone(),
        tower::ServiceBuilder::new()
            .layer(observe::ObserveLayer::new("grpc", metrics.clone()))
            .service(grpc::port_service(core)),
        stopped(stop_rx.clone()),
        config.shutdown_timeout,
    ));
    let http_task = tokio::spawn(listener::serve(
        "http",
        http_listener,
        tls,
        tower::ServiceBuilder::new()
            .layer(observe::ObserveLayer::new("rest", metrics))
            .service(http::service(rest, config.cors_allow_origin.as_deref())?),
        stopped(stop_rx),
        config.shutdown_timeout,
    ));
    shutdown.await;
    tracing::info!("shutting down");
    readiness.stopping();
    health.stopping().await;
    let _ = stop_tx.send(true);
    let _ = tokio::join!(grpc_task, http_task);
    probe.abort();
    tracing::info!("stopped");
    Ok(())
}
