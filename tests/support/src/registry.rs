//! The test environment's OCI registry: the CNCF distribution registry (`.local/bin/registry`, built from
//! `tests/registry/go.mod` by `make registry`), serving HTTPS with a certificate of its own CA and asking for a
//! generated user and password (htpasswd, bcrypt). Tests and the demo push plugin components to it; the
//! operator pulls them, from this machine or from a Pod.
//!
//! The registry process listens on a free loopback port only, like the API server. When the environment has
//! a pod network, a relay on the host's address on that network (the Pods' gateway, where they already reach
//! the `kubernetes` Service) with the same port forwards to it, so Pods reach the registry at
//! [`Registry::pod_host_port`] and nothing outside this machine can. The serving certificate names
//! `127.0.0.1`, `localhost` and that address; TLS ends in the registry, so both addresses verify against
//! [`Registry::ca_path`].
//!
//! Everything (configuration, certificates, htpasswd, blobs) lives in `<state dir>/registry/`, removed with the
//! environment.

use std::{
    net::{Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, pem::PemObject as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use tokio::{process::Command, task::JoinHandle};

use crate::{
    controlplane::{Authority, ports::free_port, process::ManagedProcess, random_token, write_file},
    error::{Error, Result},
    network::api_forward,
    paths::Layout,
};

/// The media type of the config of a WebAssembly component in the OCI artifact layout.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of the one layer of that layout: the component itself.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The media type of the manifests [`Registry::push_wasm`] writes.
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The bcrypt cost of the htpasswd entry (the lowest bcrypt allows).
const BCRYPT_COST: u32 = 4;

/// Where a running registry is and how to log in to it. The environment's description (`env.json`,
/// `.local/cluster.json` for `make cluster`) records it under `registry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    /// `127.0.0.1:<port>`, for clients on this machine.
    pub host_port: String,
    /// `<host address on the pod network>:<port>`, for Pods; `None` for a registry started without a pod
    /// network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_host_port: Option<String>,
    /// The CA certificate (PEM) that signed the registry's serving certificate; trust it, and only it.
    pub ca_path: PathBuf,
    /// A `.dockerconfigjson` document with the credentials for both addresses, for
    /// `kubectl create secret generic --type=kubernetes.io/dockerconfigjson --from-file=.dockerconfigjson=…`.
    pub docker_config_path: PathBuf,
    /// The one user of the registry's htpasswd file (`testenv-<random>`).
    pub username: String,
    /// Its password (32 random hex digits).
    pub password: String,
}

impl Registry {
    /// `https://<host_port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.host_port)
    }

    /// The registry's CA certificate, PEM-encoded.
    pub fn ca_pem(&self) -> Result<String> {
        std::fs::read_to_string(&self.ca_path)
            .map_err(Error::io(format!("reading {}", self.ca_path.display())))
    }

    /// The file of [`Self::ca_pem`], to hand to a client (`curl --cacert`, a ConfigMap, …).
    pub fn ca_path(&self) -> &Path {
        &self.ca_path
    }

    /// The `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson` Secret that logs in to this registry at
    /// `host` (`host_port` or `pod_host_port`, or any name the certificate covers with the port).
    pub fn docker_config_json(&self, host: &str) -> String {
        docker_config(&[host], &self.username, &self.password)
    }

    /// The value of an `Authorization` header with the registry's credentials.
    pub fn basic_authorization(&self) -> String {
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", self.username, self.password));
        format!("Basic {token}")
    }

    /// An HTTPS client that trusts the registry's CA and nothing else (no system roots). It sends no
    /// credentials by itself: add [`Self::basic_authorization`] to the requests that need them.
    pub fn client(&self) -> Result<reqwest::Client> {
        https_client(&[self.ca_pem()?.as_bytes()])
    }

    /// Pushes a WebAssembly component as `<repository>:<tag>` in the OCI artifact layout (config
    /// [`WASM_CONFIG_MEDIA_TYPE`], one layer [`WASM_LAYER_MEDIA_TYPE`]) through the blob upload and manifest
    /// APIs, and returns the manifest's digest (`sha256:…`).
    pub async fn push_wasm(&self, repository: &str, tag: &str, component: &[u8]) -> Result<String> {
        let client = self.client()?;
        let layer = self.push_blob(&client, repository, component).await?;
        let config = serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer],
        });
        let config = serde_json::to_vec(&config).map_err(|e| Error::Other(e.to_string()))?;
        let config_digest = self.push_blob(&client, repository, &config).await?;
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": config_digest, "size": config.len()},
            "layers": [{"mediaType": WASM_LAYER_MEDIA_TYPE, "digest": layer, "size": component.len()}],
        });
        let manifest = serde_json::to_vec(&manifest).map_err(|e| Error::Other(e.to_string()))?;
        let response = client
            .put(format!("{}/v2/{repository}/manifests/{tag}", self.url()))
            .header(reqwest::header::AUTHORIZATION, self.basic_authorization())
            .header(reqwest::header::CONTENT_TYPE, OCI_MANIFEST_MEDIA_TYPE)
            .body(manifest.clone())
            .send()
            .await
            .map_err(registry_error("pushing a manifest"))?;
        expect_status(response, reqwest::StatusCode::CREATED, "pushing a manifest").await?;
        Ok(sha256_digest(&manifest))
    }

    /// Uploads one blob (a monolithic upload: POST, then PUT with the digest) and returns its digest.
    async fn push_blob(&self, client: &reqwest::Client, repository: &str, blob: &[u8]) -> Result<String> {
        let digest = sha256_digest(blob);
        let auth = self.basic_authorization();
        let started = client
            .post(format!("{}/v2/{repository}/blobs/uploads/", self.url()))
            .header(reqwest::header::AUTHORIZATION, &auth)
            .send()
            .await
            .map_err(registry_error("starting a blob upload"))?;
        let location = upload_location(
            &expect_status(started, reqwest::StatusCode::ACCEPTED, "starting a blob upload").await?,
        )?;
        let separator = if location.contains('?') { '&' } else { '?' };
        let url = if location.starts_with('/') {
            format!("{}{location}{separator}digest={digest}", self.url())
        } else {
            format!("{location}{separator}digest={digest}")
        };
        let response = client
            .put(url)
            .header(reqwest::header::AUTHORIZATION, &auth)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(blob.to_vec())
            .send()
            .await
            .map_err(registry_error("uploading a blob"))?;
        expect_status(response, reqwest::StatusCode::CREATED, "uploading a blob").await?;
        Ok(digest)
    }
}

/// `sha256:<hex>` of `bytes`, the form OCI digests take.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// An HTTPS client (rustls with ring) that trusts exactly the given PEM CA certificates.
fn https_client(cas: &[&[u8]]) -> Result<reqwest::Client> {
    let mut roots = rustls::RootCertStore::empty();
    for pem in cas {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| Error::Registry(format!("reading the registry's CA: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| Error::Registry(format!("trusting the registry's CA: {e}")))?;
        }
    }
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Registry(format!("TLS configuration: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(registry_error("building an HTTPS client"))
}

fn registry_error(what: &'static str) -> impl FnOnce(reqwest::Error) -> Error {
    move |e| Error::Registry(format!("{what}: {e}"))
}

/// The response when it has the expected status, otherwise an error with the status and body.
async fn expect_status(
    response: reqwest::Response,
    expected: reqwest::StatusCode,
    what: &str,
) -> Result<reqwest::Response> {
    if response.status() == expected {
        return Ok(response);
    }
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    Err(Error::Registry(format!(
        "{what}: expected {expected}, got {status}: {body}"
    )))
}

fn upload_location(response: &reqwest::Response) -> Result<String> {
    response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(str::to_string)
        .ok_or_else(|| Error::Registry("a blob upload without a Location".into()))
}

/// `{"auths": {<host>: {"username", "password", "auth"}}}` for each host.
fn docker_config(hosts: &[&str], username: &str, password: &str) -> String {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    let auths: serde_json::Map<String, serde_json::Value> = hosts
        .iter()
        .map(|host| {
            (
                (*host).to_string(),
                serde_json::json!({"username": username, "password": password, "auth": auth}),
            )
        })
        .collect();
    serde_json::json!({ "auths": auths }).to_string()
}

/// A registry process started by this process (the supervisor), with the relay that lets Pods reach it.
pub struct RegistryServer {
    registry: Registry,
    process: Option<ManagedProcess>,
    relay: Option<JoinHandle<()>>,
}

impl RegistryServer {
    /// Starts the registry with its state in `<dir>/registry` and its log in `<dir>/logs/registry.log`, and
    /// returns once `/v2/` refuses anonymous requests and accepts the credentials. `pod_host` is the host's
    /// address on the pod network, if there is one: the certificate names it and a relay listens there.
    /// [`Error::MissingBinary`] when `make registry` has not built `.local/bin/registry`.
    pub async fn start(
        layout: &Layout,
        dir: &Path,
        pod_host: Option<Ipv4Addr>,
        timeout: Duration,
    ) -> Result<Self> {
        let binary = layout.binary("registry")?;
        let deadline = Instant::now() + timeout;
        let root = dir.join("registry");
        std::fs::create_dir_all(root.join("storage"))
            .map_err(Error::io(format!("creating {}", root.display())))?;
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).map_err(Error::io(format!("creating {}", logs.display())))?;

        let port = free_port()?;
        let host_port = format!("127.0.0.1:{port}");
        let pod_host_port = pod_host.map(|ip| format!("{ip}:{port}"));

        let ca = Authority::generate("kuberay-testenv-registry-ca")?;
        let mut names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        names.extend(pod_host.map(|ip| ip.to_string()));
        let serving = ca.serving_certificate("kuberay-testenv-registry", names)?;
        let ca_path = root.join("ca.crt");
        let (cert_path, key_path) = (root.join("tls.crt"), root.join("tls.key"));
        write_file(&ca_path, &ca.cert_pem(), 0o644)?;
        write_file(&cert_path, &serving.cert_pem, 0o644)?;
        write_file(&key_path, &serving.key_pem, 0o600)?;

        let username = format!("testenv-{}", &random_token()?[..8]);
        let password = random_token()?;
        // The registry checks the hash on every request: at the default cost (12) that is a quarter of a second
        // each. The lowest cost suffices for a password of 128 random bits that never leaves this machine.
        let hash = bcrypt::hash(&password, BCRYPT_COST)
            .map_err(|e| Error::Registry(format!("hashing the password: {e}")))?;
        let htpasswd = root.join("htpasswd");
        write_file(&htpasswd, &format!("{username}:{hash}\n"), 0o600)?;

        let docker_config_path = root.join("dockerconfig.json");
        let mut hosts = vec![host_port.as_str()];
        hosts.extend(pod_host_port.as_deref());
        write_file(
            &docker_config_path,
            &docker_config(&hosts, &username, &password),
            0o600,
        )?;

        let config_path = root.join("config.yml");
        let config = config_yaml(&host_port, &root, &cert_path, &key_path, &htpasswd)?;
        write_file(&config_path, &config, 0o600)?;

        let mut command = Command::new(binary);
        command
            .arg("serve")
            .arg(&config_path)
            // OpenTelemetry would otherwise export every request's trace to an OTLP collector on localhost.
            .env("OTEL_TRACES_EXPORTER", "none");
        let process = ManagedProcess::spawn("registry", command, &logs.join("registry.log"))?;
        let registry = Registry {
            host_port,
            pod_host_port,
            ca_path,
            docker_config_path,
            username,
            password,
        };
        let mut server = Self {
            registry,
            process: Some(process),
            relay: None,
        };
        if let Err(e) = server.wait_ready(deadline, timeout).await {
            server.stop().await;
            return Err(e);
        }
        if let Some(ip) = pod_host {
            let listen = SocketAddr::from((ip, port));
            match api_forward::relay(listen, SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await {
                Ok(relay) => server.relay = Some(relay),
                Err(e) => {
                    server.stop().await;
                    return Err(e);
                }
            }
        }
        tracing::info!(
            host_port = %server.registry.host_port,
            pod_host_port = ?server.registry.pod_host_port,
            "OCI registry ready"
        );
        Ok(server)
    }

    /// Where it is and how to log in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The registry process, for the supervisor's records of what to kill.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(ManagedProcess::pid)
    }

    /// An error if the registry process has exited.
    pub fn check_running(&mut self) -> Result<()> {
        match self.process.as_mut() {
            Some(process) => process.check_running(),
            None => Ok(()),
        }
    }

    /// Stops the relay and the registry.
    pub async fn stop(mut self) {
        if let Some(relay) = self.relay.take() {
            relay.abort();
        }
        if let Some(process) = self.process.take() {
            process.stop(Duration::from_secs(10)).await;
        }
    }

    /// Waits until `/v2/` answers 401 without credentials and 200 with them.
    async fn wait_ready(&mut self, deadline: Instant, timeout: Duration) -> Result<()> {
        let client = self.registry.client()?;
        let url = format!("{}/v2/", self.registry.url());
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            self.check_running()?;
            let anonymous = client.get(&url).timeout(Duration::from_secs(2)).send().await;
            let authenticated = client
                .get(&url)
                .header(
                    reqwest::header::AUTHORIZATION,
                    self.registry.basic_authorization(),
                )
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            match (anonymous, authenticated) {
                (Ok(a), Ok(b))
                    if a.status() == reqwest::StatusCode::UNAUTHORIZED
                        && b.status() == reqwest::StatusCode::OK =>
                {
                    return Ok(());
                }
                (Ok(a), Ok(b)) => {
                    last = format!(
                        "/v2/ answered {} anonymously, {} with credentials",
                        a.status(),
                        b.status()
                    )
                }
                (Err(e), _) | (_, Err(e)) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(Error::NotReady {
            component: "registry".into(),
            seconds: timeout.as_secs(),
            detail: last,
        })
    }
}

impl Drop for RegistryServer {
    /// A server dropped without [`Self::stop`] (a failed start-up) stops its relay; its process is killed on
    /// drop.
    fn drop(&mut self) {
        if let Some(relay) = self.relay.take() {
            relay.abort();
        }
    }
}

/// The registry's configuration: HTTPS on `addr`, htpasswd authentication, blobs on the filesystem.
fn config_yaml(addr: &str, root: &Path, cert: &Path, key: &Path, htpasswd: &Path) -> Result<String> {
    let config = serde_json::json!({
        "version": "0.1",
        "log": {"level": "info", "formatter": "text"},
        "storage": {
            "filesystem": {"rootdirectory": root.join("storage").display().to_string()},
            "delete": {"enabled": true},
            // No background sweep of abandoned uploads: the storage is thrown away with the environment.
            "maintenance": {"uploadpurging": {"enabled": false}},
        },
        "http": {
            "addr": addr,
            "secret": random_token()?,
            "tls": {"certificate": cert.display().to_string(), "key": key.display().to_string()},
        },
        "auth": {"htpasswd": {"realm": "kuberay-testenv", "path": htpasswd.display().to_string()}},
    });
    serde_yaml::to_string(&config)
        .map_err(|e| Error::Other(format!("rendering the registry's configuration: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_docker_config_logs_in_to_each_host() {
        let text = docker_config(&["127.0.0.1:5000", "10.240.0.1:5000"], "u", "p");
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        for host in ["127.0.0.1:5000", "10.240.0.1:5000"] {
            let entry = &value["auths"][host];
            assert_eq!(entry["username"], "u", "{text}");
            assert_eq!(entry["password"], "p", "{text}");
            assert_eq!(entry["auth"], "dTpw", "base64 of u:p: {text}");
        }
    }

    #[test]
    fn digests_are_sha256_in_hex() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
