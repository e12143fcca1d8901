//! Running the operator in-process against the test environment, one operator per test, each watching
//! only its test's namespace.

use std::{
    path::{Path, PathBuf},
    sync::{Mutex, OnceLock},
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams},
    discovery::ApiResource,
};
pub use kuberay_testenv::fixtures::eventually;
use kuberay_testenv::{HeadMode, TestEnv, TestNamespace};
use kuberay_wasm::{OperatorConfig, leadership::LeaderElection, metrics::Metrics, policy::Policy};
use serde_json::Value;
use tokio::{sync::oneshot, task::JoinHandle};

/// Every line the operators in this test process logged (at `info` and above), for tests to find a
/// refusal in the log as an administrator would.
static CAPTURED: Mutex<String> = Mutex::new(String::new());
static CAPTURING: OnceLock<bool> = OnceLock::new();

/// Appends formatted log lines to [`CAPTURED`].
struct Capture;

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CAPTURED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The test process's subscriber, installed once: stderr as `TEST_LOG` says (default `warn`), and every
/// line at `info` and above into [`CAPTURED`]. The operators run in-process never install their own
/// (only the binary's `main` calls `telemetry::init`, and that uses `try_init`).
fn install_logging() -> bool {
    use tracing_subscriber::{EnvFilter, Layer, fmt, layer::SubscriberExt, util::SubscriberInitExt};
    let filter =
        EnvFilter::try_from_env("TEST_LOG").unwrap_or_else(|_| EnvFilter::new("warn,kube_runtime=error"));
    let stderr = fmt::layer().with_test_writer().with_filter(filter);
    let capture = fmt::layer()
        .with_ansi(false)
        .with_writer(|| Capture)
        .with_filter(EnvFilter::new("info,kube_runtime=error,kube_client=warn"));
    tracing_subscriber::registry()
        .with(stderr)
        .with(capture)
        .try_init()
        .is_ok()
}

/// The first line the operators logged that contains every `needle`.
pub fn log_line(needles: &[&str]) -> Option<String> {
    assert!(
        CAPTURING.get().copied().unwrap_or(false),
        "log capture is not installed (call env() first)"
    );
    let captured = CAPTURED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    captured
        .lines()
        .find(|line| needles.iter().all(|n| line.contains(n)))
        .map(str::to_string)
}

/// Every line the operators logged that contains every `needle`.
pub fn log_lines(needles: &[&str]) -> Vec<String> {
    assert!(
        CAPTURING.get().copied().unwrap_or(false),
        "log capture is not installed (call env() first)"
    );
    let captured = CAPTURED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    captured
        .lines()
        .filter(|line| needles.iter().all(|n| line.contains(n)))
        .map(str::to_string)
        .collect()
}

/// Waits until the operators logged a line containing every `needle`, and returns it.
pub async fn logged(needles: &[&str]) -> String {
    eventually(
        &format!("a log line with {needles:?}"),
        Duration::from_secs(30),
        || async { log_line(needles) },
    )
    .await
}

pub async fn env() -> &'static TestEnv {
    CAPTURING.get_or_init(install_logging);
    let env = match TestEnv::shared().await {
        Ok(env) => env,
        Err(e) => panic!("test environment unavailable: {e}"),
    };
    env.install_crds().await.expect("installing the ray.io CRDs");
    env
}

/// A namespace whose Ray head Pods run the fake head.
pub async fn namespace(env: &TestEnv, prefix: &str) -> TestNamespace {
    env.namespace_with(prefix, Some(HeadMode::Fake))
        .await
        .expect("creating a test namespace")
}

/// A namespace whose Ray head Pods run real Ray, and this test's turn at real Ray: hold the turn to the end of
/// the test. A real head is a GCS, a raylet, a dashboard and their agents, and every job adds a driver and
/// workers; two tests starting several heads each at once starved each other past their deadlines on 2 cores, so
/// the tests with real heads run one at a time while the other test threads go on with the rest.
pub async fn real_ray_namespace(
    env: &TestEnv,
    prefix: &str,
) -> (TestNamespace, tokio::sync::SemaphorePermit<'static>) {
    static TURN: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);
    // Never closed; a test that panicked released its permit as it unwound.
    let turn = TURN.acquire().await.expect("the real-Ray turn is never closed");
    let ns = env
        .namespace_with(prefix, Some(HeadMode::Real))
        .await
        .expect("creating a test namespace");
    (ns, turn)
}

/// An operator running in this test's runtime.
pub struct Operator {
    pub metrics: Metrics,
    pub metrics_addr: std::net::SocketAddr,
    pub health_addr: std::net::SocketAddr,
    pub plugins_dir: PathBuf,
    pub cache_dir: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

pub struct OperatorOptions {
    pub plugins: Vec<&'static str>,
    pub timeout: Duration,
    pub memory_mib: usize,
    pub reload: Option<Duration>,
    pub cache_dir: Option<PathBuf>,
    /// Credentials other than the admin's.
    pub kubeconfig: Option<PathBuf>,
    /// Reach Ray heads through the API server's proxy subresources.
    pub use_kubernetes_proxy: bool,
    /// The policy; by default the built-in one plus an entry for the chaos plugin ([`test_policy`]).
    pub policy: Option<Policy>,
    /// `--concurrency`, if not the default.
    pub concurrency: Option<u16>,
    /// Leader election (`--enable-leader-election` and its settings).
    pub leader_election: Option<LeaderElection>,
    /// The replica's name in events (`test-<namespace>` by default).
    pub instance: Option<String>,
    /// `--plugin-compile-timeout` and `--plugin-compile-memory-mib` of the compile child (the operator
    /// binary built with these tests).
    pub compile_timeout: Duration,
    pub compile_memory_mib: u64,
    /// `--cluster-domain`, if not the default.
    pub cluster_domain: Option<String>,
    /// KubeRay's environment toggles, as the binary reads them from its environment.
    pub kuberay_env: Option<kuberay_wasm::kuberay_env::KubeRayEnv>,
    /// What KubeRay's Configuration file adds to Ray Pods (`--config`).
    pub pod_defaults: Option<Value>,
    /// `--feature-gates`, if not KubeRay's defaults.
    pub feature_gates: Option<kuberay_wasm::kuberay_flags::FeatureGates>,
    /// `--batch-scheduler`.
    pub batch_scheduler: Option<kuberay_rules::batch_scheduler::BatchScheduler>,
    /// Serve `ReconcilePlugin` resources (`--plugin-resources`) with these options.
    pub resources: Option<kuberay_wasm::reconcileplugin::ResourceOptions>,
    /// `--qps`/`--burst` (none by default here; the binary's default is KubeRay's, 100 and 200).
    pub api_rate_limit: Option<kuberay_wasm::ApiRateLimit>,
}

/// The chaos plugin's entry in the tests' default policy: what it needs for its behaviours, no Secrets.
pub const CHAOS_ENTRY: &str = "
- name: chaos
  file: chaos.wasm
  reconciles: testing.kuberay-wasm.io/v1/Chaos
  owns: [v1/ConfigMap]
  verbs:
    testing.kuberay-wasm.io/v1/Chaos: [get, apply-status, record-event, finalize]
    v1/ConfigMap: [get, list, create, apply, delete]
    ray.io/v1/RayCluster: [get, apply]
  rayHeads: true
";

/// The built-in policy with `extra` (YAML list items) appended to its plugins.
pub fn policy_with(extra: &str) -> Policy {
    let builtin = include_str!("../../deploy/policy.yaml");
    Policy::parse(&format!("{builtin}{extra}")).expect("the test policy parses")
}

/// The built-in policy plus the chaos plugin's entry.
pub fn test_policy() -> Policy {
    policy_with(CHAOS_ENTRY)
}

/// [`test_policy`] as a file in `dir`, for an operator started as a process (`--policy`).
pub fn test_policy_file(dir: &Path) -> PathBuf {
    let path = dir.join("policy.yaml");
    let builtin = include_str!("../../deploy/policy.yaml");
    std::fs::write(&path, format!("{builtin}{CHAOS_ENTRY}")).expect("writing the test policy");
    path
}

impl Default for OperatorOptions {
    fn default() -> Self {
        Self {
            plugins: vec![kuberay_plugin_artifacts::RAYCLUSTER],
            timeout: Duration::from_secs(10),
            memory_mib: 128,
            reload: None,
            cache_dir: None,
            kubeconfig: None,
            use_kubernetes_proxy: false,
            policy: None,
            concurrency: None,
            leader_election: None,
            instance: None,
            // Debug builds compile slowly, and tests compile plugins concurrently on a loaded machine: the
            // bound here is for the tests that set one.
            compile_timeout: Duration::from_secs(600),
            compile_memory_mib: kuberay_wasm::DEFAULT_COMPILE_MEMORY_MIB,
            resources: None,
            cluster_domain: None,
            kuberay_env: None,
            pod_defaults: None,
            feature_gates: None,
            batch_scheduler: None,
            api_rate_limit: None,
        }
    }
}

/// The compiled-plugin cache the tests' operators share unless a test asks for its own: under the target
/// directory (`CARGO_TARGET_TMPDIR`), so that each plugin build is compiled once per build rather than once
/// per test. Entries are keyed by the component's digest and the engine, written by rename, and checksummed,
/// so operators running at once can share it.
pub fn shared_cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compiled-plugins")
}

/// A new empty directory under the system's temporary directory.
pub fn scratch_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kuberay-wasm-test-{what}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).expect("creating a scratch directory");
    dir
}

/// A fresh scratch directory with the given plugin components in it.
pub fn plugins_dir_with(plugins: &[&str]) -> PathBuf {
    let dir = scratch_dir("plugins");
    for plugin in plugins {
        install_plugin(&dir, plugin);
    }
    dir
}

/// Copies a plugin component into `dir` under the file name the policy knows it by (`raycluster.wasm`,
/// `rayjob.wasm`, `chaos.wasm`, as `make plugins` installs them).
pub fn install_plugin(dir: &Path, plugin: &str) -> PathBuf {
    let source = Path::new(plugin);
    let file = source
        .file_name()
        .expect("plugin path has a file name")
        .to_string_lossy();
    let file = file
        .trim_start_matches("kuberay_plugin_")
        .trim_start_matches("kuberay_test_plugin_");
    install_plugin_as(dir, plugin, file)
}

/// Copies a plugin component into `dir` as `file`.
pub fn install_plugin_as(dir: &Path, plugin: &str, file: &str) -> PathBuf {
    let target = dir.join(file);
    // Written aside and renamed, so that a reloading operator never reads a half-copied file.
    let partial = dir.join(format!(".{file}.partial"));
    std::fs::copy(plugin, &partial).expect("copying a plugin component");
    std::fs::rename(&partial, &target).expect("installing a plugin component");
    target
}

/// A loopback address with a port nobody listens on now.
pub fn free_addr() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    listener.local_addr().expect("local address")
}

pub async fn start_operator(env: &TestEnv, ns: &TestNamespace, options: OperatorOptions) -> Operator {
    start_operator_watching(env, vec![ns.name().to_string()], options).await
}

/// An operator watching several namespaces (`--watch-namespace a,b,...`); its instance name is the first's
/// unless `options` names one.
pub async fn start_operator_watching(
    env: &TestEnv,
    namespaces: Vec<String>,
    options: OperatorOptions,
) -> Operator {
    let first = namespaces.first().cloned().unwrap_or_default();
    let plugins_dir = scratch_dir("plugins");
    for plugin in &options.plugins {
        install_plugin(&plugins_dir, plugin);
    }
    let cache_dir = options.cache_dir.clone().unwrap_or_else(shared_cache_dir);
    let (metrics_addr, health_addr) = (free_addr(), free_addr());
    let mut config = OperatorConfig::new(&plugins_dir)
        .with_kubeconfig(
            options
                .kubeconfig
                .clone()
                .unwrap_or_else(|| env.kubeconfig().to_path_buf()),
        )
        .with_watch_namespaces(namespaces)
        .with_limits(options.timeout, options.memory_mib << 20)
        .with_reload_interval(options.reload)
        .with_cache_dir(&cache_dir)
        .with_addrs(metrics_addr, health_addr)
        .with_kubernetes_proxy(options.use_kubernetes_proxy)
        .with_compiler(
            env!("CARGO_BIN_EXE_kuberay-wasm"),
            options.compile_timeout,
            options.compile_memory_mib << 20,
        )
        .with_policy(options.policy.unwrap_or_else(test_policy));
    config.instance = Some(options.instance.unwrap_or_else(|| format!("test-{first}")));
    if let Some(election) = options.leader_election {
        config = config.with_leader_election(election);
    }
    config.resources = options.resources;
    if let Some(domain) = options.cluster_domain {
        config.routing.cluster_domain = domain;
    }
    if let Some(kuberay_env) = options.kuberay_env {
        config.kuberay_env = kuberay_env;
    }
    config.pod_defaults = options.pod_defaults;
    if let Some(gates) = options.feature_gates {
        config.feature_gates = gates;
    }
    config.batch_scheduler = options.batch_scheduler;
    config.api_rate_limit = options.api_rate_limit;
    if let Some(concurrency) = options.concurrency {
        config = config.with_concurrency(concurrency);
    }
    let metrics = Metrics::new();
    let (stop, stopped) = oneshot::channel::<()>();
    let run_metrics = metrics.clone();
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        if let Err(e) = kuberay_wasm::run_with_metrics(config, run_metrics, shutdown).await {
            panic!("operator failed: {e}");
        }
    });
    Operator {
        metrics,
        metrics_addr,
        health_addr,
        plugins_dir,
        cache_dir,
        stop: Some(stop),
        task: Some(task),
    }
}

impl Operator {
    /// The value of a metric line (`name{labels}`), summed over lines that contain every `needle`.
    pub fn metric(&self, name: &str, needles: &[&str]) -> f64 {
        self.metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with(name) && needles.iter().all(|n| l.contains(n)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let _ = std::fs::remove_dir_all(&self.plugins_dir);
    }
}

pub fn ray_api(client: &Client, ns: &TestNamespace, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ray.io", "v1", kind);
    Api::namespaced_with(
        client.clone(),
        ns.name(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

pub fn rayclusters(client: &Client, ns: &TestNamespace) -> Api<DynamicObject> {
    ray_api(client, ns, "RayCluster", "rayclusters")
}

/// Server-side applies every namespaced document of a YAML manifest (as `kubectl apply --server-side`).
pub async fn apply_manifest(client: &Client, ns: &TestNamespace, path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("reading a manifest");
    let mut applied = Vec::new();
    let discovery = kube::Discovery::new(client.clone())
        .run()
        .await
        .expect("API discovery");
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(doc).expect("a YAML document");
        if value.is_null() {
            continue;
        }
        let object: DynamicObject = serde_json::from_value(value.clone()).expect("a Kubernetes object");
        let types = object.types.clone().expect("apiVersion and kind");
        let gvk = GroupVersionKind::try_from(&types).expect("a group/version/kind");
        let (resource, _) = discovery.resolve_gvk(&gvk).expect("a served kind");
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &resource);
        let name = object.metadata.name.clone().expect("a named object");
        api.patch(
            &name,
            &PatchParams::apply("kuberay-wasm-tests").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {} {name}: {e}", types.kind));
        applied.push(value);
    }
    applied
}

pub fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kuberay-samples")
        .join(name)
}

/// Waits until the RayCluster reports `state: ready` and returns it.
pub async fn ready_cluster(client: &Client, ns: &TestNamespace, name: &str) -> Value {
    let api = rayclusters(client, ns);
    eventually(
        &format!("RayCluster {name} to be ready"),
        Duration::from_secs(90),
        || async {
            let cluster = api.get(name).await.ok()?;
            let value = serde_json::to_value(&cluster).ok()?;
            (value.pointer("/status/state").and_then(Value::as_str) == Some("ready")).then_some(value)
        },
    )
    .await
}

pub async fn pods(client: &Client, ns: &TestNamespace, selector: &str) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let mut pods = api
        .list(&ListParams::default().labels(selector))
        .await
        .expect("listing pods")
        .items;
    pods.retain(|p| p.metadata.deletion_timestamp.is_none());
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pods
}

/// Server-side applies `object` as the tests' field manager (forced), as `kubectl apply --server-side` would.
pub async fn apply(api: &Api<DynamicObject>, object: &Value) {
    let name = object["metadata"]["name"].as_str().unwrap();
    api.patch(
        name,
        &PatchParams::apply("kuberay-wasm-tests").force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap();
}

/// The `status` of an object, or `None` while it cannot be read.
pub async fn status_of(api: &Api<DynamicObject>, name: &str) -> Option<Value> {
    Some(serde_json::to_value(api.get(name).await.ok()?).ok()?["status"].clone())
}
