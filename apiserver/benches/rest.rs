//! Throughput and latency of the REST path with the Kubernetes API server in the loop: `GET` of one cluster
//! and `GET` of a namespace's clusters (a list of `CLUSTERS`), through `kuberay-apiserver`, against the
//! same reads made directly on the Kubernetes API server with the same user's token (the floor: what any
//! client pays without this server in between).
//!
//! Three ways, one after the other in the same run on the same control plane and data:
//! - `kubernetes`: the user's own client (kube-rs) straight to kube-apiserver;
//! - `apiserver (auth none)`: through this server acting as itself (KubeRay's behaviour);
//! - `apiserver (auth kubernetes)`: through this server with the user's bearer token (a TokenReview,
//!   remembered for `--token-cache-ttl`) and impersonation, the default.
//!
//! Each runs `CONCURRENCY` clients for `DURATION` after a warm-up; the machine is shared and noisy, so the
//! figures to compare are the ratios within one run. Run with `make bench-apiserver` (or `cargo bench -p
//! kuberay-apiserver --bench rest`); it starts a private control plane unless `make cluster` is running.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly on setup errors"
)]

use std::time::{Duration, Instant};

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::{Api, api::ListParams};
use kuberay_apiserver::{config::Config, server};
use kuberay_crds::RayCluster;
use kuberay_testenv::{TestEnv, identities::apply_manifest};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const CLUSTERS: usize = 20;
const CONCURRENCY: usize = 8;
const WARM_UP: Duration = Duration::from_secs(3);
const DURATION: Duration = Duration::from_secs(10);

/// What one way of reading does once.
#[derive(Clone)]
enum Reader {
    Kube(Box<Api<RayCluster>>),
    Rest {
        client: reqwest::Client,
        url: String,
        token: Option<String>,
    },
}

impl Reader {
    async fn read(&self, list: bool) {
        match self {
            Self::Kube(api) => {
                if list {
                    let clusters = api.list(&ListParams::default()).await.unwrap();
                    assert_eq!(clusters.items.len(), CLUSTERS);
                } else {
                    api.get("bench-0").await.unwrap();
                }
            }
            Self::Rest { client, url, token } => {
                let path = if list {
                    format!("{url}/clusters")
                } else {
                    format!("{url}/clusters/bench-0")
                };
                let mut request = client.get(path);
                if let Some(token) = token {
                    request = request.bearer_auth(token);
                }
                let response = request.send().await.unwrap();
                assert_eq!(
                    response.status(),
                    200,
                    "{}",
                    response.text().await.unwrap_or_default()
                );
                response.bytes().await.unwrap();
            }
        }
    }
}

struct Figures {
    requests: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Figures {
    fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let index = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[index]
    }
}

/// Runs `reader` from `CONCURRENCY` tasks for `duration`.
async fn load(reader: &Reader, list: bool, duration: Duration) -> Figures {
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let reader = reader.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let start = Instant::now();
                    reader.read(list).await;
                    latencies.push(start.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    latencies.sort();
    Figures {
        requests: latencies.len(),
        elapsed: started.elapsed(),
        latencies,
    }
}

/// Starts the server in this runtime with `flags`; returns its REST address and a stop handle.
async fn start_server(kubeconfig: &std::path::Path, flags: &[&str]) -> (String, oneshot::Sender<()>) {
    let mut args = vec![
        "kuberay-apiserver".to_string(),
        "--grpc-bind-address=127.0.0.1:0".into(),
        "--http-bind-address=127.0.0.1:0".into(),
        format!("--kubeconfig={}", kubeconfig.display()),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    let config = <Config as clap::Parser>::try_parse_from(args).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let (bound_tx, bound_rx) = oneshot::channel();
    tokio::spawn(server::run(
        config,
        async {
            let _ = stopped.await;
        },
        move |bound| {
            let _ = bound_tx.send(bound);
        },
    ));
    (format!("http://{}", bound_rx.await.unwrap().http), stop)
}

/// A RayCluster as the API creates it (the `managed-by` label makes it visible to the v1 API).
fn cluster(index: usize) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": format!("bench-{index}"),
            "labels": {"app.kubernetes.io/managed-by": "kuberay-apiserver", "ray.io/user": "bench"}},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"}]}}}},
    })
}

#[tokio::main]
async fn main() {
    let env = TestEnv::shared().await.unwrap();
    env.install_crds().await.unwrap();
    let admin = env.client().await.unwrap();
    let ns = env.namespace("bench-rest").await.unwrap();
    let clusters: Api<RayCluster> = Api::namespaced(admin.clone(), ns.name());
    for index in 0..CLUSTERS {
        let object: RayCluster = serde_json::from_value(cluster(index)).unwrap();
        clusters.create(&Default::default(), &object).await.unwrap();
    }
    let setup = Setup::new(env, ns.name()).await;

    let url = |base: &str| format!("{base}/apis/v1/namespaces/{}", ns.name());
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(CONCURRENCY)
        .build()
        .unwrap();
    // With --auth none the server acts as itself, so its own identity needs the user's rights (as
    // KubeRay's ServiceAccount has them): it runs with the user's credentials.
    let (none_base, stop_none) = start_server(&setup.user_kubeconfig, &["--auth=none"]).await;
    let (auth_base, stop_auth) = start_server(&setup.server_kubeconfig, &[]).await;
    let user_kube = Api::<RayCluster>::namespaced(setup.user_client.clone(), ns.name());
    let readers = [
        (
            "kubernetes (the user's kube-rs client, no apiserver)",
            Reader::Kube(Box::new(user_kube)),
        ),
        (
            "apiserver --auth none",
            Reader::Rest {
                client: http.clone(),
                url: url(&none_base),
                token: None,
            },
        ),
        (
            "apiserver --auth kubernetes (token review cached, impersonation)",
            Reader::Rest {
                client: http.clone(),
                url: url(&auth_base),
                token: Some(setup.user_token.clone()),
            },
        ),
    ];
    println!(
        "REST read path: {CLUSTERS} clusters in the namespace, {CONCURRENCY} concurrent clients, {}s per figure",
        DURATION.as_secs()
    );
    for (list, what) in [
        (false, "GET one cluster"),
        (true, "GET the namespace's clusters (list)"),
    ] {
        println!("\n{what}");
        println!("| way | requests/s | p50 | p90 | p99 | rps / kubernetes |");
        println!("|---|---|---|---|---|---|");
        let mut floor = None;
        for (name, reader) in &readers {
            load(reader, list, WARM_UP).await;
            let figures = load(reader, list, DURATION).await;
            let rps = figures.rps();
            let floor = *floor.get_or_insert(rps);
            println!(
                "| {name} | {rps:.0} | {:.1} ms | {:.1} ms | {:.1} ms | {:.2} |",
                ms(figures.percentile(0.5)),
                ms(figures.percentile(0.9)),
                ms(figures.percentile(0.99)),
                rps / floor,
            );
        }
    }
    let _ = stop_none.send(());
    let _ = stop_auth.send(());
    let _ = ns.delete(&admin).await;
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The server's ServiceAccount (with the shipped RBAC) and a user with the shipped user role in the
/// namespace.
struct Setup {
    server_kubeconfig: std::path::PathBuf,
    user_kubeconfig: std::path::PathBuf,
    user_token: String,
    user_client: kube::Client,
}

impl Setup {
    async fn new(env: &TestEnv, namespace: &str) -> Self {
        let admin = env.client().await.unwrap();
        let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
        apply_manifest(&admin, &deploy.join("rbac.yaml")).await.unwrap();
        apply_manifest(&admin, &deploy.join("user-role.yaml"))
            .await
            .unwrap();
        let server_token = env
            .service_account_token("kuberay-system", "kuberay-apiserver")
            .await
            .unwrap();
        let user_token = env.service_account_token(namespace, "bench-user").await.unwrap();
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "bench-user"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kuberay-apiserver-user"},
            "subjects": [{"kind": "ServiceAccount", "name": "bench-user", "namespace": namespace}],
        }))
        .unwrap();
        Api::<RoleBinding>::namespaced(admin, namespace)
            .create(&Default::default(), &binding)
            .await
            .unwrap();
        let server_kubeconfig = env
            .kubeconfig_with_token("bench-server", &server_token, None)
            .unwrap();
        let user_kubeconfig = env
            .kubeconfig_with_token("bench-user", &user_token, None)
            .unwrap();
        let kubeconfig = kube::config::Kubeconfig::read_from(&user_kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        Self {
            server_kubeconfig,
            user_kubeconfig,
            user_token,
            user_client: kube::Client::try_from(config).unwrap(),
        }
    }
}
