//! A real Ray head (`ray start --head --block`) from the project's virtualenv, inside the pod's network
//! namespace, listening on the pod's address with the pod's ports. Ray's temporary files live in the test
//! environment's directory and go with it.

use std::{net::Ipv4Addr, path::Path, process::Stdio, time::Duration};

use tokio::process::{Child, Command};

use super::fake_ray::RayPorts;
use crate::error::{Error, Result};

/// Ray's GCS port and client-server port, as in KubeRay's defaults.
const GCS_PORT: u16 = 6379;
const CLIENT_PORT: u16 = 10001;
const METRICS_PORT: u16 = 8080;

pub struct RealRayHead {
    child: Child,
    health_url: String,
}

pub struct RealRayConfig<'a> {
    pub ray_cli: &'a Path,
    /// Put on the head's `PYTHONPATH`, which Ray's workers inherit (Serve applications import from it).
    pub python_path: Option<&'a Path>,
    pub netns: &'a str,
    pub ip: Ipv4Addr,
    pub ports: RayPorts,
    pub gcs_port: Option<u16>,
    /// Logical resources the head advertises (`--num-cpus=…`, `--num-gpus=…`, `--resources=…`), as the
    /// Pod's generated `ray start` command has them.
    pub resource_flags: Vec<String>,
    pub temp_dir: &'a Path,
    pub log: &'a Path,
}

impl RealRayHead {
    pub fn start(config: &RealRayConfig<'_>) -> Result<Self> {
        std::fs::create_dir_all(config.temp_dir).map_err(Error::io("creating a Ray temp dir"))?;
        let log = std::fs::File::create(config.log).map_err(Error::io("creating a Ray log file"))?;
        let log_err = log
            .try_clone()
            .map_err(Error::io("duplicating a log file handle"))?;
        let gcs = config.gcs_port.unwrap_or(GCS_PORT);
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", config.netns])
            .arg(config.ray_cli)
            .args([
                "start".to_string(),
                "--head".to_string(),
                "--block".to_string(),
                format!("--node-ip-address={}", config.ip),
                format!("--port={gcs}"),
                "--dashboard-host=0.0.0.0".to_string(),
                format!("--dashboard-port={}", config.ports.dashboard),
                format!("--dashboard-agent-listen-port={}", config.ports.agent),
                format!("--ray-client-server-port={CLIENT_PORT}"),
                format!("--metrics-export-port={METRICS_PORT}"),
                // Ray sizes its object store from the machine's memory; several heads on one test machine
                // must not each reserve a third of it.
                "--object-store-memory=100000000".to_string(),
                format!("--temp-dir={}", config.temp_dir.display()),
                "--disable-usage-stats".to_string(),
            ])
            .args(&config.resource_flags)
            // Entrypoints say `python`, which must be the virtualenv's, as it is Ray's in a Ray image.
            .env("PATH", search_path(config.ray_cli))
            .env("RAY_USAGE_STATS_ENABLED", "0")
            .env("PYTHONUNBUFFERED", "1")
            // Ray turns on token authentication when it finds `~/.ray/auth_token` (which a local `ray.init()`
            // of Ray 2.60 leaves behind) or `RAY_AUTH_*` in its environment; a head Pod's Ray must not
            // depend on what the machine's user did.
            .env("HOME", config.temp_dir)
            .env_remove("RAY_AUTH_MODE")
            .env_remove("RAY_AUTH_TOKEN")
            .env_remove("RAY_AUTH_TOKEN_PATH")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0)
            .kill_on_drop(true);
        match config.python_path {
            Some(dir) => command.env("PYTHONPATH", dir),
            None => command.env_remove("PYTHONPATH"),
        };
        let child = command
            .spawn()
            .map_err(Error::io("starting `ray start --head`"))?;
        let health_url = format!("http://{}:{}/api/gcs_healthz", config.ip, config.ports.dashboard);
        Ok(Self { child, health_url })
    }

    /// The exit code once the head process has ended (137 when it was killed).
    pub fn exited(&mut self) -> Option<i32> {
        super::exit_code(&mut self.child)
    }

    /// Whether the dashboard answers `/api/gcs_healthz` with `success`, as KubeRay's head probe checks.
    pub async fn healthy(&self) -> bool {
        http_get(&self.health_url, Duration::from_secs(2))
            .await
            .is_some_and(|body| body.trim() == "success")
    }
}

/// The logical-resource flags of a generated `ray start` command (KubeRay's `KUBERAY_GEN_RAY_START_CMD`),
/// unquoted as the shell would; one CPU when the command names none.
pub fn resource_flags(command: Option<&str>) -> Vec<String> {
    let mut flags = Vec::new();
    for name in ["--num-cpus=", "--num-gpus=", "--resources="] {
        if let Some(value) = command.and_then(|c| flag_value(c, name)) {
            flags.push(format!("{name}{value}"));
        }
    }
    if !flags.iter().any(|f| f.starts_with("--num-cpus=")) {
        flags.push("--num-cpus=1".into());
    }
    flags
}

/// The value of `--name=` in a shell command line, with one level of single or double quotes removed.
fn flag_value(command: &str, name: &str) -> Option<String> {
    let start = command.find(name)? + name.len();
    let rest = &command[start..];
    let mut chars = rest.chars().peekable();
    let mut value = String::new();
    match chars.peek() {
        Some('\'') => {
            chars.next();
            value.extend(chars.take_while(|c| *c != '\''));
        }
        Some('"') => {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        }
        _ => value.extend(chars.take_while(|c| !c.is_whitespace() && *c != ';')),
    }
    Some(value)
}

/// `PATH` with the virtualenv's `bin` (where `ray` lives) first.
fn search_path(ray_cli: &Path) -> std::ffi::OsString {
    let mut dirs: Vec<std::path::PathBuf> = ray_cli.parent().map(Path::to_path_buf).into_iter().collect();
    dirs.extend(
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default(),
    );
    std::env::join_paths(dirs).unwrap_or_default()
}

/// A minimal HTTP/1.1 GET over a plain TCP connection, enough for health checks of a pod address.
pub async fn http_get(url: &str, timeout: Duration) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(a, p)| (a, format!("/{p}")));
    let fetch = async {
        let mut stream = tokio::net::TcpStream::connect(authority).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.ok()?;
        let response = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = response.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200").then(|| body.to_string())
    };
    tokio::time::timeout(timeout, fetch).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::resource_flags;

    #[test]
    fn resource_flags_come_from_the_generated_command() {
        let command = r#"ray start --head --num-cpus=3 --num-gpus=2 --resources='{"resource1": 2, "resource2": 3}' --block"#;
        assert_eq!(
            resource_flags(Some(command)),
            vec![
                "--num-cpus=3",
                "--num-gpus=2",
                r#"--resources={"resource1": 2, "resource2": 3}"#
            ]
        );
        let quoted = r#"ray start --resources="{\"a\": 1}" --num-cpus=1"#;
        assert_eq!(
            resource_flags(Some(quoted)),
            vec!["--num-cpus=1", r#"--resources={"a": 1}"#]
        );
        assert_eq!(resource_flags(None), vec!["--num-cpus=1"]);
    }
}
