//! The `kuberay-apiserver` binary as a process (for what only a process shows: signals, exit status, its
//! log on stderr), with JSON logs read line by line.

use std::{net::SocketAddr, path::Path, process::Stdio, time::Duration};

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
    sync::mpsc,
};

pub struct Process {
    child: Child,
    pub http: SocketAddr,
    pub grpc: SocketAddr,
    /// Log lines not yet looked at, as JSON (a line that is not JSON becomes a string).
    lines: mpsc::UnboundedReceiver<Value>,
}

impl Process {
    /// Starts the binary with `kubeconfig`, free loopback ports, JSON logs and `flags`; returns once it
    /// logged where it serves.
    pub async fn start(kubeconfig: &Path, flags: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kuberay-apiserver"))
            .args([
                "--grpc-bind-address=127.0.0.1:0",
                "--http-bind-address=127.0.0.1:0",
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
            .expect("starting kuberay-apiserver");
        let stderr = child.stderr.take().unwrap();
        let (tx, mut lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let serving = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.recv().await {
                if line["message"] == "serving" {
                    return line;
                }
            }
            panic!("kuberay-apiserver ended before serving");
        })
        .await
        .expect("kuberay-apiserver did not start serving in 30 s");
        let address = |field: &str| -> SocketAddr {
            serving[field]
                .as_str()
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("no {field} address in {serving}"))
        };
        Self {
            http: address("http"),
            grpc: address("grpc"),
            child,
            lines,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.http)
    }

    /// The next log line that `matches`, within `timeout`.
    pub async fn log_line(
        &mut self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let found = tokio::time::timeout(timeout, async {
            while let Some(line) = self.lines.recv().await {
                if matches(&line) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            Ok(None) => panic!("the log ended without {what}"),
            Err(_) => panic!("no log line with {what} within {timeout:?}"),
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("the process is running");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
    }

    /// Waits for the process to exit, at most `timeout`.
    pub async fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("kuberay-apiserver did not exit within {timeout:?}"))
            .unwrap()
    }
}

/// A listener address that is taken stops the server at start, exit status 1, naming the address (no
/// cluster needed: nothing is asked of the API server before the listeners are bound).
#[test]
fn an_address_in_use_is_fatal_and_named() {
    let dir = tempfile_dir();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    \
         insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  \
         context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
    )
    .unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kuberay-apiserver"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--grpc-bind-address",
            &taken_addr,
            "--http-bind-address",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("listening on {taken_addr} (gRPC)")),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "escape codes on a pipe: {stderr:?}");
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kuberay-apiserver-bind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
