//! What running reconcile logic as a WebAssembly plugin costs, per reconcile, against the same logic
//! compiled natively: the RayCluster plugin reconciling KubeRay's sample cluster in steady state (head and
//! worker Running and Ready, Service present), with an in-memory host on both sides so that only the
//! plugin call is measured.
//!
//! - native: read the object from JSON text (as the component does) and call
//!   `RayClusterPlugin::reconcile` on the SDK's `FakeHost`;
//! - wasm: a fresh Store and instance, the object passed as JSON text, every host call crossing the
//!   component boundary as JSON text (grant checks included), through the operator's own sandbox.
//!
//! Run with `cargo bench -p kuberay-wasm --bench plugin_call` (or `make bench`). With
//! `KUBERAY_BENCH_BASELINE=path/to/other/raycluster.wasm` another build of the plugin (for example the
//! previous commit's) is measured in the same run, against the same native figures.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly on setup errors"
)]

use std::{
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use kuberay_plugin_raycluster::RayClusterPlugin;
use kuberay_plugin_sdk::{
    Document, Event, Host, HostError, Kind, LogLevel, Plugin, RayRequest, RayResponse, Request,
    testing::FakeHost,
};
use kuberay_wasm::{
    host_api::{HostApi, HostResult},
    metrics::Metrics,
    sandbox::{CallLimits, Export, Sandbox, SandboxConfig},
};
use serde_json::{Value, json};

/// The SDK's in-memory host behind the operator's host interface.
struct SharedFake(Mutex<FakeHost>);

impl SharedFake {
    fn with<T>(&self, f: impl FnOnce(&FakeHost) -> T) -> T {
        f(&self.0.lock().unwrap())
    }
}

fn ready<'a, T: Send + 'a>(value: HostResult<T>) -> BoxFuture<'a, HostResult<T>> {
    Box::pin(async move { value })
}

impl HostApi for SharedFake {
    fn get(&self, kind: Kind, name: String) -> BoxFuture<'_, HostResult<Option<Value>>> {
        ready(self.with(|h| h.get(&kind, &name)))
    }
    fn list(&self, kind: Kind, selector: String) -> BoxFuture<'_, HostResult<Vec<Value>>> {
        ready(self.with(|h| h.list(&kind, &selector)))
    }
    fn create(&self, _: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        ready(self.with(|h| h.create(&object)))
    }
    fn apply(&self, _: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        ready(self.with(|h| h.apply(&object)))
    }
    fn apply_status(&self, status: Value) -> BoxFuture<'_, HostResult<()>> {
        ready(self.with(|h| h.apply_status(&status)))
    }
    fn delete(&self, kind: Kind, name: String, uid: Option<String>) -> BoxFuture<'_, HostResult<()>> {
        ready(self.with(|h| h.delete(&kind, &name, uid.as_deref())))
    }
    fn add_finalizer(&self, f: String) -> BoxFuture<'_, HostResult<()>> {
        ready(self.with(|h| h.add_finalizer(&f)))
    }
    fn remove_finalizer(&self, f: String) -> BoxFuture<'_, HostResult<()>> {
        ready(self.with(|h| h.remove_finalizer(&f)))
    }
    fn record_event(&self, event: Event) -> BoxFuture<'_, HostResult<()>> {
        ready(self.with(|h| h.record_event(&event)))
    }
    fn ray(&self, _: RayRequest) -> BoxFuture<'_, HostResult<RayResponse>> {
        ready(Err(HostError::Unavailable("no Ray head in the benchmark".into())))
    }
    fn log(&self, _: LogLevel, _: &str, _: &[(String, String)]) {}
}

/// KubeRay's sample RayCluster, reconciled to steady state in `host`.
fn steady_sample() -> (Value, FakeHost) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kuberay-samples/ray-cluster.sample.yaml");
    let mut cluster: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    cluster["metadata"]["namespace"] = json!("bench");
    cluster["metadata"]["uid"] = json!("bench-uid");
    cluster["metadata"]["generation"] = json!(1);
    let host = FakeHost::for_plugin::<RayClusterPlugin>(cluster.clone());
    let pods = Kind::new("", "v1", "Pod");
    for round in 0..4 {
        let object = host.primary();
        RayClusterPlugin::reconcile(
            &host,
            Request {
                object: object.into(),
                attempt: 0,
            },
        )
        .unwrap();
        for pod in host.objects(&pods) {
            let name = pod["metadata"]["name"].as_str().unwrap().to_string();
            host.update(&pods, &name, |p| {
                p["status"] = json!({
                    "phase": "Running", "podIP": format!("10.0.0.{}", round + 2),
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [{"name": "ray", "ready": true, "restartCount": 0, "image": "ray", "imageID": "", "state": {"running": {}}}],
                });
            });
        }
    }
    host.clear_writes();
    (host.primary(), host)
}

struct Stats {
    median: Duration,
    p90: Duration,
    p99: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        median: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
    }
}

fn micros(d: Duration) -> String {
    format!("{:8.1} µs", d.as_secs_f64() * 1e6)
}

/// Tells apart the scratch directories of the components measured in one run.
static COUNTER: AtomicUsize = AtomicUsize::new(0);

const ITERATIONS: usize = 2000;
const WARMUP: usize = 200;

fn main() {
    let (object, native_host) = steady_sample();
    let text = object.to_string();

    // Native: the same logic, JSON text in, values through the in-memory host.
    let mut native = Vec::with_capacity(ITERATIONS);
    for i in 0..WARMUP + ITERATIONS {
        let started = Instant::now();
        // Read the way the plugin reads it in a component: straight from the text into its typed form.
        let object = Document::Text(text.clone());
        RayClusterPlugin::reconcile(&native_host, Request { object, attempt: 0 }).unwrap();
        if i >= WARMUP {
            native.push(started.elapsed());
        }
    }
    assert!(
        native_host
            .writes()
            .iter()
            .all(|w| matches!(w, kuberay_plugin_sdk::testing::Write::ApplyStatus))
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let current = runtime.block_on(measure_wasm(
        Path::new(kuberay_plugin_artifacts::RAYCLUSTER),
        &text,
    ));
    // Another build of the plugin to compare with in the same run (for example the previous commit's).
    let baseline = std::env::var_os("KUBERAY_BENCH_BASELINE").map(|path| {
        (
            path.clone(),
            runtime.block_on(measure_wasm(Path::new(&path), &text)),
        )
    });

    let n = stats(native);
    println!(
        "RayCluster plugin, steady-state reconcile of ray-cluster.sample.yaml ({ITERATIONS} iterations after {WARMUP} warm-up)"
    );
    println!("  {:<46} {:>11} {:>11} {:>11}", "", "median", "p90", "p99");
    println!(
        "  {:<46} {} {} {}",
        "native (same Rust logic, in-memory host)",
        micros(n.median),
        micros(n.p90),
        micros(n.p99)
    );
    report("wasm (fresh Store + instantiate + call)", &current, &n);
    if let Some((path, measured)) = baseline {
        println!("  baseline component {}:", path.to_string_lossy());
        report("wasm, baseline component", &measured, &n);
    }
}

/// What one component costs: the calls, compiling it, and loading it from the compiled-plugin cache.
struct WasmRun {
    calls: Vec<Duration>,
    size: u64,
    compile: Duration,
    load_cached: Duration,
}

fn report(label: &str, run: &WasmRun, native: &Stats) {
    let w = stats(run.calls.clone());
    println!(
        "  {:<46} {} {} {}",
        label,
        micros(w.median),
        micros(w.p90),
        micros(w.p99)
    );
    println!(
        "  wasm / native at the median: {:.2}x",
        w.median.as_secs_f64() / native.median.as_secs_f64()
    );
    println!(
        "  component {:.2} MiB; compile it: {:.0} ms; load it from the compiled-plugin cache: {:.1} ms",
        run.size as f64 / f64::from(1 << 20),
        run.compile.as_secs_f64() * 1e3,
        run.load_cached.as_secs_f64() * 1e3
    );
}

/// Loads the component at `component` as `raycluster.wasm` and calls `reconcile` on `text`.
async fn measure_wasm(component: &Path, text: &str) -> WasmRun {
    let unique = format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let cache = std::env::temp_dir().join(format!("kuberay-wasm-bench-{unique}"));
    let config = SandboxConfig {
        cache_dir: Some(cache.clone()),
        limits: CallLimits {
            timeout: Duration::from_secs(10),
            memory_bytes: 128 << 20,
            budget: Default::default(),
        },
        policy: Arc::new(kuberay_wasm::policy::Policy::builtin()),
        max_concurrent_calls: 8,
        // Compiled in process, with the static limits only: the benchmark measures calls.
        compiler: None,
        base_config: Default::default(),
    };
    let sandbox = Sandbox::new(config.clone(), Metrics::new()).unwrap();
    // The built-in policy knows the plugin by the file name it is installed under.
    let plugins = std::env::temp_dir().join(format!("kuberay-wasm-bench-plugins-{unique}"));
    std::fs::create_dir_all(&plugins).unwrap();
    let path = plugins.join("raycluster.wasm");
    let size = std::fs::copy(component, &path).unwrap();
    let path = path.as_path();
    let started = Instant::now();
    let plugin = sandbox.load_file(path).await.unwrap();
    let compile = started.elapsed();
    let fresh = Sandbox::new(config, Metrics::new()).unwrap();
    let started = Instant::now();
    fresh.load_file(path).await.unwrap();
    let load_cached = started.elapsed();
    let _ = std::fs::remove_dir_all(cache);
    let _ = std::fs::remove_dir_all(&plugins);

    let (_, host) = steady_sample();
    let host: Arc<dyn HostApi> = Arc::new(SharedFake(Mutex::new(host)));
    let mut calls = Vec::with_capacity(ITERATIONS);
    for i in 0..WARMUP + ITERATIONS {
        let started = Instant::now();
        let context = sandbox.context(&plugin, "bench/raycluster-kuberay".into(), host.clone());
        sandbox
            .call(&plugin, context, Export::Reconcile, text.to_string(), 0)
            .await
            .unwrap();
        if i >= WARMUP {
            calls.push(started.elapsed());
        }
    }
    WasmRun {
        calls,
        size,
        compile,
        load_cached,
    }
}
