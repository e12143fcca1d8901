//! How long the operator takes to start serving, and to serve a new version of a plugin, measured on the
//! release operator binary against a private control plane (`kuberay-testenv`).
//!
//! - start-up: from spawning `kuberay-wasm operator` with the four plugins to `/readyz` answering `ok`, with
//!   the compiled-plugin cache already holding them (the common restart) and with an empty cache;
//! - swap: with the operator running, a new version of `raycluster.wasm` is written aside and renamed into
//!   the plugin directory (as an administrator would), and the time from the rename to the operator's
//!   `plugin loaded` log line with the new digest is measured. That line is written when the new version
//!   replaces the old one in the table every reconcile looks its plugin up in, so from then on reconciles
//!   run the new version. A version is the RayCluster component with a custom section naming it appended:
//!   the same code (the same compile work), a new digest. A cache miss is a version never seen before; a
//!   hit alternates between two versions compiled earlier.
//!
//! - rollout from a registry: a `ReconcilePlugin` resource names the RayCluster component in the test
//!   environment's registry (TLS, a password from a pull Secret); the time from the edit of `spec.artifact`
//!   to the operator's `plugin version verified; serving it` line with that digest, which carries the pull
//!   and the load (compile and checks) times measured inside the operator. A new version is pulled and
//!   compiled; a rollback points back at a version seen before (in memory, in the compiled-plugin cache).
//!
//! Run with `cargo bench -p kuberay-wasm --bench lifecycle` (or `make bench-lifecycle`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly on setup errors"
)]

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use kuberay_testenv::{HeadMode, TestEnv, paths::Layout, workloads::real_ray::http_get};
use sha2::{Digest, Sha256};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
    sync::mpsc,
};

const STARTS_CACHED: usize = 5;
const STARTS_COLD: usize = 3;
const SWAPS: usize = 8;
const PLUGINS: [(&str, &str); 4] = [
    (kuberay_plugin_artifacts::RAYCLUSTER, "raycluster.wasm"),
    (kuberay_plugin_artifacts::RAYJOB, "rayjob.wasm"),
    (kuberay_plugin_artifacts::RAYCRONJOB, "raycronjob.wasm"),
    (kuberay_plugin_artifacts::RAYSERVICE, "rayservice.wasm"),
];

/// A running operator process and its log lines, each with the time it was read.
struct Operator {
    child: Child,
    health: SocketAddr,
    lines: mpsc::UnboundedReceiver<(Instant, String)>,
}

fn free_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

fn scratch(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kuberay-wasm-lifecycle-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Operator {
    fn spawn(env: &TestEnv, ns: &str, plugins: &Path, cache: &Path) -> Self {
        Self::spawn_with(env, ns, plugins, cache, &[])
    }

    fn spawn_with(env: &TestEnv, ns: &str, plugins: &Path, cache: &Path, extra: &[String]) -> Self {
        let (metrics, health) = (free_addr(), free_addr());
        let mut child = Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
            .args(["--log-format", "json", "operator", "--watch-namespace", ns])
            .args(extra)
            .arg("--plugins")
            .arg(plugins)
            .arg("--cache-dir")
            .arg(cache)
            .arg("--kubeconfig")
            .arg(env.kubeconfig())
            .arg("--metrics-bind-address")
            .arg(metrics.to_string())
            .arg("--health-probe-bind-address")
            .arg(health.to_string())
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the operator");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        Self { child, health, lines }
    }

    /// Polls `/readyz` every 5 ms until it answers `ok`.
    async fn ready(&self) {
        let url = format!("http://{}/readyz", self.health);
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if http_get(&url, Duration::from_secs(1)).await.as_deref() == Some("ok") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the operator did not become ready in 120 s");
    }

    /// When the operator logged that it loaded a plugin with `digest`.
    async fn loaded(&mut self, digest: &str) -> Instant {
        let short = &digest[..12];
        let wait = async {
            while let Some((at, line)) = self.lines.recv().await {
                if line.contains("plugin loaded") && line.contains(short) {
                    return at;
                }
                if line.contains("failed to load") {
                    panic!("a plugin version failed to load: {line}");
                }
            }
            panic!("the operator exited");
        };
        tokio::time::timeout(Duration::from_secs(120), wait)
            .await
            .expect("the new version was not loaded within 120 s")
    }

    /// When the operator logged that it serves the resource's version `digest`, and its pull and load
    /// times as it measured them.
    async fn serving(&mut self, digest: &str) -> (Instant, Duration, Duration) {
        let wait = async {
            while let Some((at, line)) = self.lines.recv().await {
                if line.contains("plugin version verified") && line.contains(digest) {
                    let fields: serde_json::Value = serde_json::from_str(&line).unwrap();
                    let ms = |key: &str| Duration::from_millis(fields[key].as_u64().unwrap_or_default());
                    return (at, ms("pull_ms"), ms("load_ms"));
                }
                if line.contains("plugin version refused") {
                    panic!("a plugin version was refused: {line}");
                }
            }
            panic!("the operator exited");
        };
        tokio::time::timeout(Duration::from_secs(180), wait)
            .await
            .expect("the version did not serve within 180 s")
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
        let _ = self.child.wait().await;
    }
}

/// The RayCluster component with a custom section `kuberay-bench-version` holding `version` appended: a
/// valid component with the same code and a digest of its own.
fn version(component: &[u8], version: &str) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"kuberay-bench-version";
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name);
    payload.extend_from_slice(version.as_bytes());
    let mut out = component.to_vec();
    out.push(0);
    leb(payload.len(), &mut out);
    out.extend_from_slice(&payload);
    out
}

fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `bytes` aside and renames it to `raycluster.wasm`; returns the time of the rename.
fn install(dir: &Path, bytes: &[u8]) -> Instant {
    let partial = dir.join(".raycluster.wasm.partial");
    std::fs::write(&partial, bytes).unwrap();
    let at = Instant::now();
    std::fs::rename(&partial, dir.join("raycluster.wasm")).unwrap();
    at
}

fn install_plugins(dir: &Path) {
    for (source, file) in PLUGINS {
        std::fs::copy(source, dir.join(file)).unwrap();
    }
}

struct Summary {
    median: Duration,
    max: Duration,
}

fn summary(mut samples: Vec<Duration>) -> Summary {
    samples.sort();
    Summary {
        median: samples[samples.len() / 2],
        max: samples[samples.len() - 1],
    }
}

fn print(what: &str, samples: Vec<Duration>) {
    let runs = samples.len();
    let s = summary(samples);
    println!(
        "  {what:<52} median {:7.1} ms   max {:7.1} ms   ({runs} runs)",
        s.median.as_secs_f64() * 1e3,
        s.max.as_secs_f64() * 1e3
    );
}

/// Spawn to `/readyz`, `runs` times; each run gets a fresh cache when `cold`.
async fn starts(
    env: &TestEnv,
    ns: &str,
    plugins: &Path,
    cache: &Path,
    runs: usize,
    cold: bool,
) -> Vec<Duration> {
    let mut samples = Vec::new();
    for _ in 0..runs {
        if cold {
            let _ = std::fs::remove_dir_all(cache);
        }
        let started = Instant::now();
        let operator = Operator::spawn(env, ns, plugins, cache);
        operator.ready().await;
        samples.push(started.elapsed());
        operator.stop().await;
    }
    samples
}

/// Installs each of `versions` in turn and measures the rename to the `plugin loaded` line.
async fn swaps(operator: &mut Operator, plugins: &Path, versions: &[Vec<u8>]) -> Vec<Duration> {
    let mut samples = Vec::new();
    for bytes in versions {
        let renamed = install(plugins, bytes);
        let loaded = operator.loaded(&digest(bytes)).await;
        samples.push(loaded.saturating_duration_since(renamed));
        // Let the rescan settle before the next version, as separate deployments would.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    samples
}

/// The edit-to-serving latency of new versions and of rollbacks through a `ReconcilePlugin` resource.
async fn rollouts(env: &TestEnv, ns: &str, component: &[u8]) {
    use kube::{
        Api,
        api::{DeleteParams, Patch, PatchParams, PostParams},
    };
    use kuberay_wasm::reconcileplugin::{
        artifact::{Registry, RegistryOptions},
        resource::ReconcilePlugin,
    };
    let registry = env
        .registry()
        .expect("the test environment's registry (make registry)");
    let client = env.client().await.unwrap();
    kuberay_testenv::crds::install(
        &client,
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds"),
    )
    .await
    .unwrap();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), ns);
    let secret = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": registry.docker_config_json(&registry.host_port)},
    });
    secrets
        .create(&PostParams::default(), &serde_json::from_value(secret).unwrap())
        .await
        .unwrap();
    let oci = Registry::new(&RegistryOptions {
        extra_roots: vec![std::fs::read(registry.ca_path()).unwrap()],
        timeout: Duration::from_secs(30),
    })
    .unwrap();
    let auth = oci_client::secrets::RegistryAuth::Basic(registry.username.clone(), registry.password.clone());
    let repository = format!("{}/bench/raycluster", registry.host_port);
    let mut references = Vec::new();
    for i in 0..=SWAPS {
        let bytes = version(component, &format!("registry-{i}-{}", std::process::id()));
        let digest = oci
            .push(&format!("{repository}:v{i}").parse().unwrap(), &auth, bytes)
            .await
            .unwrap();
        references.push((format!("{repository}@{digest}"), digest));
    }

    let empty = scratch("registry-plugins");
    let cache = scratch("registry-cache");
    let selector = format!("kuberay-wasm-bench={}", std::process::id());
    let ca = registry.ca_path().display().to_string();
    let extra: Vec<String> = [
        "--disable-plugins",
        "raycluster",
        "--plugin-registry-ca",
        &ca,
        "--operator-namespace",
        ns,
        "--plugin-resource-selector",
        &selector,
    ]
    .map(String::from)
    .to_vec();
    let mut operator = Operator::spawn_with(env, ns, &empty, &cache, &extra);
    operator.ready().await;
    let api: Api<ReconcilePlugin> = Api::all(client.clone());
    let _ = api.delete("raycluster", &DeleteParams::default()).await;
    let policy: serde_yaml::Value = serde_yaml::from_str(include_str!("../deploy/policy.yaml")).unwrap();
    let mut grant = policy["plugins"][0].clone();
    for key in ["name", "file", "reconciles"] {
        grant.as_mapping_mut().unwrap().remove(key);
    }
    let resource = serde_json::json!({
        "apiVersion": "plugins.kuberay-wasm.io/v1alpha1", "kind": "ReconcilePlugin",
        "metadata": {"name": "raycluster", "labels": {"kuberay-wasm-bench": std::process::id().to_string()}},
        "spec": {"artifact": references[0].0, "reconciles": "ray.io/v1/RayCluster", "pullSecret": "regcred",
                 "grant": grant},
    });
    for _ in 0..30 {
        match api
            .create(
                &PostParams::default(),
                &serde_json::from_value(resource.clone()).unwrap(),
            )
            .await
        {
            Ok(_) => break,
            // The previous run's resource may still be going.
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    operator.serving(&references[0].1).await;
    let mut edit = async |reference: &str, digest: &str| {
        let patch = serde_json::json!({"spec": {"artifact": reference}});
        let edited = Instant::now();
        api.patch("raycluster", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        let (at, pull, load) = operator.serving(digest).await;
        (at.saturating_duration_since(edited), pull, load)
    };
    let (mut total, mut pulls, mut loads) = (Vec::new(), Vec::new(), Vec::new());
    for (reference, digest) in &references[1..] {
        let (t, p, l) = edit(reference, digest).await;
        total.push(t);
        pulls.push(p);
        loads.push(l);
    }
    let mut rollbacks = Vec::new();
    for i in 0..SWAPS {
        let (reference, digest) = &references[SWAPS - 1 + (i % 2)];
        rollbacks.push(edit(reference, digest).await.0);
    }
    let _ = api.delete("raycluster", &DeleteParams::default()).await;
    operator.stop().await;
    print("edit ReconcilePlugin to serving, new version", total);
    print("  of which the pull (in the operator)", pulls);
    print("  of which compile and checks (in the operator)", loads);
    print("edit ReconcilePlugin to serving, rollback", rollbacks);
    let _ = std::fs::remove_dir_all(&empty);
    let _ = std::fs::remove_dir_all(&cache);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let layout = Layout::discover();
    let env = tokio::task::spawn_blocking(move || TestEnv::start_private(&layout, HeadMode::Fake))
        .await
        .unwrap()
        .expect("starting a private control plane");
    env.install_crds().await.expect("installing the CRDs");
    let ns = env
        .namespace_with("lifecycle", Some(HeadMode::Fake))
        .await
        .expect("a namespace");
    let ns = ns.name().to_string();
    let (plugins, cache) = (scratch("plugins"), scratch("cache"));
    install_plugins(&plugins);

    println!("Operator start-up and plugin swap latency (release binary, private control plane)");
    let cold = starts(&env, &ns, &plugins, &cache, STARTS_COLD, true).await;
    let cached = starts(&env, &ns, &plugins, &cache, STARTS_CACHED, false).await;
    print("start to /readyz, 4 plugins, empty cache", cold);
    print("start to /readyz, 4 plugins, all in the cache", cached);

    let component = std::fs::read(kuberay_plugin_artifacts::RAYCLUSTER).unwrap();
    let mut operator = Operator::spawn(&env, &ns, &plugins, &cache);
    operator.ready().await;
    let fresh: Vec<Vec<u8>> = (0..SWAPS)
        .map(|i| version(&component, &format!("miss-{i}-{}", std::process::id())))
        .collect();
    let missed = swaps(&mut operator, &plugins, &fresh).await;
    // Two versions seen before (the first two just swapped in), alternated: each swap is a cache hit.
    let known: Vec<Vec<u8>> = (0..SWAPS).map(|i| fresh[i % 2].clone()).collect();
    let hit = swaps(&mut operator, &plugins, &known[1..]).await;
    operator.stop().await;
    print("swap raycluster.wasm to serving, compiled (cache miss)", missed);
    print("swap raycluster.wasm to serving, from the cache (hit)", hit);
    rollouts(&env, &ns, &component).await;

    let _ = std::fs::remove_dir_all(&plugins);
    let _ = std::fs::remove_dir_all(&cache);
    let _ = tokio::task::spawn_blocking(move || env.shutdown()).await;
}
