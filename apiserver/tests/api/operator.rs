//! The operator in the loop: `kuberay-wasm` with the RayCluster and RayJob plugins, running in the calling
//! test's runtime and watching only that test's namespace (as `host/tests/all/support.rs` runs it), so
//! that what users create through the API server becomes Pods, Services and Ray jobs.

use std::{path::PathBuf, time::Duration};

use kuberay_testenv::{TestEnv, TestNamespace};
use kuberay_wasm::{OperatorConfig, metrics::Metrics};
use tokio::{
    sync::{Mutex, oneshot},
    task::JoinHandle,
};

/// The plugin components and the file names the operator's built-in policy knows them by.
const PLUGINS: [(&str, &str); 2] = [
    (kuberay_plugin_artifacts::RAYCLUSTER, "raycluster.wasm"),
    (kuberay_plugin_artifacts::RAYJOB, "rayjob.wasm"),
];

/// Whether the shared compiled-plugin cache holds the plugins yet. The first operator compiles them while
/// holding this lock (the cache's temporary file names are per process, so two operators of this process
/// must not write the same entry at once); every later one loads them from the cache.
static CACHE_WARM: Mutex<bool> = Mutex::const_new(false);

/// An operator running in this test's runtime; dropping it aborts it.
pub struct Operator {
    metrics: Metrics,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    _plugins: tempfile::TempDir,
}

impl Operator {
    /// Starts an operator (with the environment's admin credentials) for `ns`.
    pub async fn start(env: &TestEnv, ns: &TestNamespace) -> Self {
        let mut warm = CACHE_WARM.lock().await;
        let operator = Self::spawn(env, ns);
        if !*warm {
            operator.wait_loaded().await;
            *warm = true;
        }
        operator
    }

    fn spawn(env: &TestEnv, ns: &TestNamespace) -> Self {
        let plugins = tempfile::Builder::new()
            .prefix("kuberay-apiserver-test-plugins-")
            .tempdir()
            .expect("a plugin directory");
        for (plugin, file) in PLUGINS {
            std::fs::copy(plugin, plugins.path().join(file)).expect("copying a plugin component");
        }
        let any_port = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let mut config = OperatorConfig::new(plugins.path())
            .with_kubeconfig(env.kubeconfig())
            .with_watch_namespaces(vec![ns.name().to_string()])
            .with_reload_interval(None)
            .with_cache_dir(cache_dir(env))
            .with_addrs(any_port, any_port);
        config.instance = Some(format!("apiserver-test-{}", ns.name()));
        let metrics = Metrics::new();
        let run_metrics = metrics.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(e) = kuberay_wasm::run_with_metrics(config, run_metrics, shutdown).await {
                panic!("the operator failed: {e}");
            }
        });
        Self {
            metrics,
            stop: Some(stop),
            task: Some(task),
            _plugins: plugins,
        }
    }

    /// Waits until both plugins are loaded (compiled or read from the cache).
    async fn wait_loaded(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
        while self.metrics.plugins_loaded.get() < PLUGINS.len() as i64 {
            if self.task.as_ref().is_some_and(JoinHandle::is_finished) {
                panic!("the operator stopped before loading its plugins");
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the operator did not load its plugins within 180 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the operator, letting running reconciles finish.
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
    }
}

/// Compiled plugins shared by every operator of this test binary, in the environment's own directory (so
/// they go with it).
fn cache_dir(env: &TestEnv) -> PathBuf {
    env.info()
        .state_dir
        .join(format!("apiserver-tests-plugin-cache-{}", std::process::id()))
}
