//! Readiness and liveness probes of a process-backed container, run from the node as a kubelet runs them:
//! `httpGet` (a status from 200 to 399 passes; `scheme: HTTPS` without checking the certificate, as the
//! kubelet does) and `tcpSocket` against the Pod's address, every
//! `periodSeconds` after `initialDelaySeconds`, with `timeoutSeconds`, `successThreshold` and
//! `failureThreshold`. `exec` probes are not supported and always pass.

use std::{
    net::Ipv4Addr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{Container, Probe},
    apimachinery::pkg::util::intstr::IntOrString,
};
use tokio::{io::AsyncWriteExt, task::JoinHandle};

/// The outcome so far of one container's probes.
#[derive(Default)]
pub struct ProbeState {
    /// Ready: the readiness probe passed (or the container has none).
    pub ready: AtomicBool,
    /// The liveness probe failed `failureThreshold` times in a row: the container must be restarted.
    pub liveness_failed: AtomicBool,
}

/// The probe loops of one container; they stop when this is dropped.
pub struct Probes {
    pub state: Arc<ProbeState>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Probes {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Probes {
    pub fn start(container: &Container, ip: Ipv4Addr) -> Self {
        let state = Arc::new(ProbeState::default());
        let mut tasks = Vec::new();
        match &container.readiness_probe {
            Some(probe) => {
                let target = Target::of(probe, container, ip);
                let state = state.clone();
                tasks.push(tokio::spawn(run(probe.clone(), target, move |ok| {
                    state.ready.store(ok, Ordering::Relaxed);
                })));
            }
            None => state.ready.store(true, Ordering::Relaxed),
        }
        if let Some(probe) = &container.liveness_probe {
            let target = Target::of(probe, container, ip);
            let state = state.clone();
            tasks.push(tokio::spawn(run(probe.clone(), target, move |ok| {
                if !ok {
                    state.liveness_failed.store(true, Ordering::Relaxed);
                }
            })));
        }
        Self { state, tasks }
    }
}

#[derive(Debug, Clone)]
enum Target {
    Http {
        addr: (Ipv4Addr, u16),
        path: String,
        https: bool,
    },
    Tcp((Ipv4Addr, u16)),
    Unsupported,
}

impl Target {
    fn of(probe: &Probe, container: &Container, ip: Ipv4Addr) -> Self {
        let port = |p: &IntOrString| -> Option<u16> {
            match p {
                IntOrString::Int(n) => u16::try_from(*n).ok(),
                IntOrString::String(name) => container
                    .ports
                    .iter()
                    .flatten()
                    .find(|cp| cp.name.as_deref() == Some(name))
                    .and_then(|cp| u16::try_from(cp.container_port).ok()),
            }
        };
        if let Some(get) = &probe.http_get {
            return port(&get.port).map_or(Self::Unsupported, |p| Self::Http {
                addr: (ip, p),
                path: get.path.clone().unwrap_or_else(|| "/".into()),
                https: get.scheme.as_deref() == Some("HTTPS"),
            });
        }
        if let Some(tcp) = &probe.tcp_socket {
            return port(&tcp.port).map_or(Self::Unsupported, |p| Self::Tcp((ip, p)));
        }
        Self::Unsupported
    }

    async fn check(&self, timeout: Duration) -> bool {
        let attempt = async {
            match self {
                Self::Http { addr, path, https } => {
                    let status = if *https {
                        https_status(*addr, path).await
                    } else {
                        http_status(*addr, path).await
                    };
                    status.is_some_and(|s| (200..400).contains(&s))
                }
                Self::Tcp(addr) => tokio::net::TcpStream::connect(*addr).await.is_ok(),
                Self::Unsupported => true,
            }
        };
        tokio::time::timeout(timeout, attempt).await.unwrap_or(false)
    }
}

/// Probes forever, reporting each change of the thresholded result.
async fn run(probe: Probe, target: Target, report: impl Fn(bool)) {
    let seconds =
        |v: Option<i32>, default: i32| Duration::from_secs(u64::try_from(v.unwrap_or(default)).unwrap_or(1));
    let period = seconds(probe.period_seconds, 10).max(Duration::from_millis(200));
    let timeout = seconds(probe.timeout_seconds, 1);
    let successes_needed = probe.success_threshold.unwrap_or(1).max(1);
    let failures_allowed = probe.failure_threshold.unwrap_or(3).max(1);
    tokio::time::sleep(seconds(probe.initial_delay_seconds, 0)).await;
    let (mut successes, mut failures) = (0, 0);
    loop {
        if target.check(timeout).await {
            (successes, failures) = (successes + 1, 0);
            if successes >= successes_needed {
                report(true);
            }
        } else {
            (successes, failures) = (0, failures + 1);
            if failures >= failures_allowed {
                report(false);
            }
        }
        tokio::time::sleep(period).await;
    }
}

/// The status code of `GET path` over plain HTTP/1.1.
async fn http_status(addr: (Ipv4Addr, u16), path: &str) -> Option<u16> {
    use tokio::io::AsyncReadExt;
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: kube-probe/testenv\r\nConnection: close\r\n\r\n",
        addr.0, addr.1
    );
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = vec![0u8; 64];
    let n = stream.read(&mut head).await.ok()?;
    let line = String::from_utf8_lossy(&head[..n]).into_owned();
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The status code of `GET path` over HTTPS, whatever certificate the container presents (the kubelet does
/// not verify it either), following no redirect.
async fn https_status(addr: (Ipv4Addr, u16), path: &str) -> Option<u16> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("kube-probe/testenv")
        .build()
        .ok()?;
    let response = client
        .get(format!("https://{}:{}{path}", addr.0, addr.1))
        .send()
        .await
        .ok()?;
    Some(response.status().as_u16())
}

/// Accepts any server certificate (signatures are still checked), as the kubelet's HTTPS probes do.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
