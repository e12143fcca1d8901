//! The operator binary run inside the test environment's operator network namespace, which reaches the API
//! server (through a forwarder) and no Pod: what `--use-kubernetes-proxy` is for.

use std::{path::PathBuf, process::Stdio};

use kuberay_testenv::TestEnv;

use crate::support::{plugins_dir_with, test_policy_file};

/// An operator process in the isolated network namespace, killed when dropped.
pub struct IsolatedOperator {
    child: tokio::process::Child,
    netns: String,
    metrics_port: u16,
    plugins: PathBuf,
}

impl IsolatedOperator {
    /// Starts the operator with `plugins` (and the tests' policy) watching `ns`, through the API server's
    /// proxy when `proxy` is set. The namespace is shared by every test, so each caller gives its own
    /// `metrics_port` (health listens on the next port).
    pub fn start(env: &TestEnv, ns: &str, plugins: &[&str], proxy: bool, metrics_port: u16) -> Self {
        let plugins = plugins_dir_with(plugins);
        let netns = env.info().operator_netns.clone();
        let mut command = tokio::process::Command::new("ip");
        command
            .args([
                "netns",
                "exec",
                &netns,
                env!("CARGO_BIN_EXE_kuberay-wasm"),
                "operator",
            ])
            .arg("--plugins")
            .arg(&plugins)
            .arg("--policy")
            .arg(test_policy_file(&plugins))
            .arg("--kubeconfig")
            .arg(&env.info().operator_kubeconfig)
            .args(["--watch-namespace", ns, "--plugin-reload-interval", "0"])
            // The control plane is shared: another test's ReconcilePlugin resources are not this operator's.
            .arg("--plugin-resources=false")
            .arg("--metrics-bind-address")
            .arg(format!("127.0.0.1:{metrics_port}"))
            .arg("--health-probe-bind-address")
            .arg(format!("127.0.0.1:{}", metrics_port + 1))
            .arg("--cache-dir")
            .arg(crate::support::shared_cache_dir())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if proxy {
            command.arg("--use-kubernetes-proxy");
        }
        let child = command.spawn().expect("starting the isolated operator");
        Self {
            child,
            netns,
            metrics_port,
            plugins,
        }
    }

    /// The operator's metrics, fetched from inside its network namespace.
    pub async fn metrics(&self) -> String {
        let out = tokio::process::Command::new("ip")
            .args(["netns", "exec", &self.netns, "curl", "-s"])
            .arg(format!("http://127.0.0.1:{}/metrics", self.metrics_port))
            .output()
            .await
            .expect("running curl in the operator's network namespace");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The lines of `kuberay_wasm_ray_requests_total` (one per route and outcome).
    pub async fn ray_requests(&self) -> Vec<String> {
        self.metrics()
            .await
            .lines()
            .filter(|l| l.starts_with("kuberay_wasm_ray_requests_total"))
            .map(str::to_string)
            .collect()
    }

    /// Kills the operator and removes its plugin directory.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
        let _ = self.child.wait().await;
        let _ = std::fs::remove_dir_all(&self.plugins);
    }
}

/// Whether some line counts successful requests on `route`.
pub fn succeeded_on(lines: &[String], route: &str) -> bool {
    lines
        .iter()
        .any(|l| l.contains(&format!("route=\"{route}\"")) && l.contains("outcome=\"ok\""))
}

/// Whether no line counts a request sent straight to a Pod or Service address (requests the host could not
/// route yet count as `unresolved`).
pub fn never_direct(lines: &[String]) -> bool {
    !lines.iter().any(|l| l.contains("route=\"direct-"))
}
