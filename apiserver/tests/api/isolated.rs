//! The `kuberay-apiserver` binary running where no Pod is reachable: inside the environment's operator
//! network namespace (`EnvInfo::operator_netns`, linked only to a forwarder to the Kubernetes API server),
//! as its own ServiceAccount, with `--use-kubernetes-proxy`. The test reaches it at the namespace's end of
//! that link.

use std::{path::PathBuf, process::Stdio, sync::Arc, time::Duration};

use kuberay_testenv::TestEnv;
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
    sync::Mutex,
};

use crate::{
    flows::write_kubeconfig,
    support::{Rest, service_account_token},
};

/// A server process in the operator network namespace; killed when dropped.
pub struct IsolatedServer {
    /// The REST port, at the namespace's address.
    pub http: std::net::SocketAddr,
    /// The gRPC port, at the namespace's address.
    pub grpc: std::net::SocketAddr,
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    kubeconfig: PathBuf,
}

impl IsolatedServer {
    /// Starts the binary with `flags` added to its listen addresses, kubeconfig and JSON logs.
    pub async fn start(env: &TestEnv, flags: &[&str]) -> Self {
        let netns = env.info().operator_netns.clone();
        let kubeconfig = isolated_kubeconfig(env).await;
        let mut child = Command::new("ip")
            .args(["netns", "exec", &netns, env!("CARGO_BIN_EXE_kuberay-apiserver")])
            .args([
                "--grpc-bind-address=0.0.0.0:0",
                "--http-bind-address=0.0.0.0:0",
                "--log-format=json",
            ])
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .args(flags)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting kuberay-apiserver in the operator network namespace");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut ports = None;
        let started = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = lines.next_line().await {
                log.lock().await.push(line.clone());
                if let Some(bound) = serving_ports(&line) {
                    ports = Some(bound);
                    return;
                }
            }
        })
        .await;
        let Some((grpc_port, http_port)) = ports else {
            let status = child.try_wait().ok().flatten();
            panic!(
                "kuberay-apiserver did not start in {netns} ({}; exit {status:?}):\n{}",
                if started.is_err() {
                    "timed out"
                } else {
                    "its log ended"
                },
                log.lock().await.join("\n")
            );
        };
        // Keep reading its log (a full pipe would block the server), for failure messages.
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().await.push(line);
            }
        });
        let address = netns_address(&netns).await;
        Self {
            http: (address, http_port).into(),
            grpc: (address, grpc_port).into(),
            child,
            log,
            kubeconfig,
        }
    }

    /// A REST client of this server acting with `token`.
    pub fn rest(&self, token: Option<&str>) -> Rest {
        Rest {
            base: format!("http://{}", self.http),
            token: token.map(str::to_string),
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
        }
    }

    /// The server's `/metrics` text.
    pub async fn metrics(&self) -> String {
        let (status, body) = self.rest(None).get("/metrics").await;
        assert_eq!(status, 200, "/metrics: {body}");
        body.as_str().unwrap_or_default().to_string()
    }

    /// What the server logged so far.
    pub async fn log(&self) -> String {
        self.log.lock().await.join("\n")
    }

    /// Stops the server.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

impl Drop for IsolatedServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

/// The ports of the server's "serving" log line (JSON): `(grpc, http)`.
fn serving_ports(line: &str) -> Option<(u16, u16)> {
    let record: Value = serde_json::from_str(line).ok()?;
    // `--log-format json` flattens an event's fields into the record.
    let fields = record.get("fields").unwrap_or(&record);
    if fields.get("message")? != "serving" {
        return None;
    }
    let port = |name: &str| -> Option<u16> {
        let address: std::net::SocketAddr = fields.get(name)?.as_str()?.parse().ok()?;
        Some(address.port())
    };
    Some((port("grpc")?, port("http")?))
}

/// The IPv4 address of `eth0` in `netns`: the namespace's end of its link to the host.
async fn netns_address(netns: &str) -> std::net::Ipv4Addr {
    let output = Command::new("ip")
        .args(["-j", "-4", "-n", netns, "addr", "show", "dev", "eth0"])
        .output()
        .await
        .expect("running ip");
    let links: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "ip -j addr in {netns}: {e}: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    links
        .pointer("/0/addr_info/0/local")
        .and_then(Value::as_str)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no IPv4 address on eth0 of {netns}: {links}"))
}

/// A kubeconfig of the server's ServiceAccount `kuberay-system/kuberay-apiserver` that reaches the API
/// server through the operator namespace's forwarder (the address and TLS name of the environment's
/// `operator_kubeconfig`), in the environment's own directory.
async fn isolated_kubeconfig(env: &TestEnv) -> PathBuf {
    let info = env.info();
    let text = std::fs::read_to_string(&info.operator_kubeconfig).unwrap();
    let operator: Value = serde_yaml::from_str(&text).unwrap();
    let cluster = &operator["clusters"][0]["cluster"];
    let server = cluster["server"].as_str().expect("the forwarder's address");
    let tls_name = cluster["tls-server-name"].as_str();
    let token = service_account_token(env, "kuberay-system", "kuberay-apiserver").await;
    let path = info.state_dir.join(format!(
        "kuberay-apiserver-isolated-{}-{}.kubeconfig",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    write_kubeconfig(&path, server, &info.ca_cert, &token, tls_name);
    path
}
