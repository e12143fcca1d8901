//! The environment's OCI registry is a real one: HTTPS that only its own CA verifies, htpasswd credentials,
//! the blob and manifest APIs, and reachable from a Pod at the host's address on the pod network.

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use kuberay_testenv::{
    annotations,
    registry::{
        OCI_MANIFEST_MEDIA_TYPE, Registry, RegistryServer, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
        sha256_digest,
    },
};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::util::{create, env, ready_pod};

/// The environment's registry, or a failure that says how to get one.
async fn registry() -> &'static Registry {
    match env().await.registry() {
        Ok(registry) => registry,
        Err(e) => panic!("{e}"),
    }
}

async fn get_v2(client: &reqwest::Client, url: &str, authorization: Option<&str>) -> reqwest::Response {
    let mut request = client.get(format!("{url}/v2/"));
    if let Some(authorization) = authorization {
        request = request.header(header::AUTHORIZATION, authorization);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn anonymous_and_wrong_credentials_are_refused_and_the_right_ones_accepted() {
    let registry = registry().await;
    let client = registry.client().unwrap();

    let anonymous = get_v2(&client, &registry.url(), None).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let challenge = anonymous
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(challenge.starts_with("Basic realm="), "{challenge:?}");

    let wrong = Registry {
        password: format!("{}x", registry.password),
        ..registry.clone()
    };
    let refused = get_v2(&client, &registry.url(), Some(&wrong.basic_authorization())).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    let accepted = get_v2(&client, &registry.url(), Some(&registry.basic_authorization())).await;
    assert_eq!(accepted.status(), StatusCode::OK);
    assert_eq!(
        accepted
            .headers()
            .get("docker-distribution-api-version")
            .and_then(|v| v.to_str().ok()),
        Some("registry/2.0")
    );
}

#[tokio::test]
async fn tls_verifies_with_the_registry_ca_at_every_address_and_not_with_the_system_roots() {
    let registry = registry().await;
    let client = registry.client().unwrap();
    let port = registry.host_port.rsplit(':').next().unwrap();
    let pod_host_port = registry
        .pod_host_port
        .as_deref()
        .expect("a registry with a pod network address");
    for host_port in [
        registry.host_port.clone(),
        format!("localhost:{port}"),
        pod_host_port.to_string(),
    ] {
        let response = get_v2(
            &client,
            &format!("https://{host_port}"),
            Some(&registry.basic_authorization()),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK, "{host_port}");
    }

    // The platform's verifier with the system's roots does not know the registry's CA.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let system = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let error = system
        .get(format!("{}/v2/", registry.url()))
        .send()
        .await
        .unwrap_err();
    let chain = format!("{error:?}");
    assert!(
        error.is_connect() && chain.to_lowercase().contains("certificate"),
        "expected a certificate error, got {chain}"
    );

    // Nor does a client that trusts another CA (the Kubernetes API server's).
    let other_ca = std::fs::read(&env().await.info().ca_cert).unwrap();
    let other = reqwest::Client::builder()
        .tls_backend_preconfigured(rustls_config(&[cert_der(&other_ca)]))
        .build()
        .unwrap();
    let error = other
        .get(format!("{}/v2/", registry.url()))
        .send()
        .await
        .unwrap_err();
    assert!(format!("{error:?}").contains("UnknownIssuer"), "{error:?}");
}

/// A client configuration that trusts exactly these certificates.
fn rustls_config(roots: &[rustls::pki_types::CertificateDer<'static>]) -> rustls::ClientConfig {
    let mut store = rustls::RootCertStore::empty();
    for root in roots {
        store.add(root.clone()).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth()
}

fn cert_der(pem: &[u8]) -> rustls::pki_types::CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject as _;
    rustls::pki_types::CertificateDer::from_pem_slice(pem).unwrap()
}

/// A unique repository name per test run, so reruns against `make cluster` start empty.
fn repository(name: &str) -> String {
    format!("testenv/{name}-{}", std::process::id())
}

/// POST an upload, PUT the bytes with their digest; the registry's answers as the OCI distribution spec says.
async fn push_blob(client: &reqwest::Client, registry: &Registry, repository: &str, blob: &[u8]) -> String {
    let digest = sha256_digest(blob);
    let started = client
        .post(format!("{}/v2/{repository}/blobs/uploads/", registry.url()))
        .header(header::AUTHORIZATION, registry.basic_authorization())
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let location = started
        .headers()
        .get(header::LOCATION)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let location = if location.starts_with('/') {
        format!("{}{location}", registry.url())
    } else {
        location
    };
    let separator = if location.contains('?') { '&' } else { '?' };
    let put = client
        .put(format!("{location}{separator}digest={digest}"))
        .header(header::AUTHORIZATION, registry.basic_authorization())
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(blob.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED, "{}", put.text().await.unwrap());
    digest
}

async fn pull(
    client: &reqwest::Client,
    registry: &Registry,
    path: &str,
    accept: Option<&str>,
) -> reqwest::Response {
    let mut request = client
        .get(format!("{}/v2/{path}", registry.url()))
        .header(header::AUTHORIZATION, registry.basic_authorization());
    if let Some(accept) = accept {
        request = request.header(header::ACCEPT, accept);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn a_blob_and_a_manifest_pushed_are_pulled_back_by_digest_and_tag() {
    let registry = registry().await;
    let client = registry.client().unwrap();
    let repository = repository("round-trip");
    let layer: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#.to_vec();
    let layer_digest = push_blob(&client, registry, &repository, &layer).await;
    let config_digest = push_blob(&client, registry, &repository, &config).await;

    // Anonymous pulls are refused as well.
    let anonymous = client
        .get(format!("{}/v2/{repository}/blobs/{layer_digest}", registry.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": WASM_LAYER_MEDIA_TYPE, "digest": layer_digest, "size": layer.len()}],
    }))
    .unwrap();
    let manifest_digest = sha256_digest(&manifest);
    let put = client
        .put(format!("{}/v2/{repository}/manifests/v1", registry.url()))
        .header(header::AUTHORIZATION, registry.basic_authorization())
        .header(header::CONTENT_TYPE, OCI_MANIFEST_MEDIA_TYPE)
        .body(manifest.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED, "{}", put.text().await.unwrap());
    assert_eq!(
        put.headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok()),
        Some(manifest_digest.as_str())
    );

    for reference in [manifest_digest.as_str(), "v1"] {
        let got = pull(
            &client,
            registry,
            &format!("{repository}/manifests/{reference}"),
            Some(OCI_MANIFEST_MEDIA_TYPE),
        )
        .await;
        assert_eq!(got.status(), StatusCode::OK, "{reference}");
        assert_eq!(
            got.headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some(OCI_MANIFEST_MEDIA_TYPE)
        );
        assert_eq!(
            got.bytes().await.unwrap().as_ref(),
            manifest.as_slice(),
            "{reference}"
        );
    }
    let blob = pull(
        &client,
        registry,
        &format!("{repository}/blobs/{layer_digest}"),
        None,
    )
    .await;
    assert_eq!(blob.status(), StatusCode::OK);
    assert_eq!(blob.bytes().await.unwrap().as_ref(), layer.as_slice());
    let tags: Value = pull(&client, registry, &format!("{repository}/tags/list"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(tags["tags"], json!(["v1"]), "{tags}");
    let missing = pull(
        &client,
        registry,
        &format!("{repository}/manifests/v2"),
        Some(OCI_MANIFEST_MEDIA_TYPE),
    )
    .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn push_wasm_writes_the_webassembly_artifact_layout() {
    let registry = registry().await;
    let client = registry.client().unwrap();
    let repository = repository("plugin");
    let component = b"\0asm\x0d\0\x01\0 not really a component".to_vec();
    let digest = registry
        .push_wasm(&repository, "0.1.0", &component)
        .await
        .unwrap();

    let manifest = pull(
        &client,
        registry,
        &format!("{repository}/manifests/0.1.0"),
        Some(OCI_MANIFEST_MEDIA_TYPE),
    )
    .await;
    assert_eq!(manifest.status(), StatusCode::OK);
    let bytes = manifest.bytes().await.unwrap();
    assert_eq!(sha256_digest(&bytes), digest);
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        manifest["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE,
        "{manifest}"
    );
    assert_eq!(manifest["layers"].as_array().map(Vec::len), Some(1), "{manifest}");
    assert_eq!(
        manifest["layers"][0]["mediaType"], WASM_LAYER_MEDIA_TYPE,
        "{manifest}"
    );
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    assert_eq!(layer, sha256_digest(&component));
    let pulled = pull(&client, registry, &format!("{repository}/blobs/{layer}"), None).await;
    assert_eq!(pulled.bytes().await.unwrap().as_ref(), component.as_slice());
    let config = manifest["config"]["digest"].as_str().unwrap();
    let config: Value = pull(&client, registry, &format!("{repository}/blobs/{config}"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(config["layerDigests"], json!([layer]), "{config}");
}

#[tokio::test]
async fn the_docker_config_json_logs_in_to_the_host_it_names() {
    let registry = registry().await;
    let pod_host_port = registry.pod_host_port.as_deref().unwrap();
    let config: Value = serde_json::from_str(&registry.docker_config_json(pod_host_port)).unwrap();
    let entry = &config["auths"][pod_host_port];
    assert_eq!(entry["username"], registry.username.as_str());
    assert_eq!(entry["password"], registry.password.as_str());
    let expected = registry.basic_authorization();
    assert_eq!(
        Some(entry["auth"].as_str().unwrap()),
        expected.strip_prefix("Basic ")
    );
    // The file written for scripts covers both addresses.
    let file: Value = serde_json::from_slice(&std::fs::read(&registry.docker_config_path).unwrap()).unwrap();
    for host in [registry.host_port.as_str(), pod_host_port] {
        assert_eq!(file["auths"][host], *entry, "{file}");
    }
}

/// The network namespace of a Pod, found by its address.
async fn netns_of(instance: &str, ip: Ipv4Addr) -> String {
    let list = tokio::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .await
        .unwrap();
    let prefix = format!("kwt-{instance}-");
    for name in String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
    {
        if !name.starts_with(&prefix) {
            continue;
        }
        let addrs = tokio::process::Command::new("ip")
            .args(["-n", name, "-4", "-o", "addr", "show", "dev", "eth0"])
            .output()
            .await
            .unwrap();
        if String::from_utf8_lossy(&addrs.stdout).contains(&format!(" {ip}/")) {
            return name.to_string();
        }
    }
    panic!("no network namespace has {ip}");
}

/// Connects to `addr` from inside the network namespace `netns` (the socket stays in it).
async fn connect_in(netns: &str, addr: SocketAddr) -> tokio::net::TcpStream {
    let path = format!("/run/netns/{netns}");
    let stream = tokio::task::spawn_blocking(move || {
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).unwrap();
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            let stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
            stream.set_nonblocking(true).unwrap();
            stream
        })
        .join()
        .unwrap()
    })
    .await
    .unwrap();
    tokio::net::TcpStream::from_std(stream).unwrap()
}

/// `GET /v2/` over TLS from inside `netns`, verified against the registry's CA for the address itself;
/// returns the status line.
async fn get_v2_from_pod(netns: &str, registry: &Registry, authorization: Option<&str>) -> String {
    let addr: SocketAddr = registry.pod_host_port.as_deref().unwrap().parse().unwrap();
    let tcp = connect_in(netns, addr).await;
    let config = rustls_config(&[cert_der(registry.ca_pem().unwrap().as_bytes())]);
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let request = format!("GET /v2/ HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    // The registry closes the connection after answering (`Connection: close`); a peer that skips the TLS
    // close_notify is fine as long as the status line arrived.
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut response)).await;
    String::from_utf8_lossy(&response)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_pod_reaches_the_registry_at_the_host_address_over_verified_tls() {
    let env = env().await;
    let registry = registry().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("registry").await.unwrap();
    let _: Pod = create(
        &client,
        &ns,
        json!({
            "metadata": {"name": "puller", "annotations": {annotations::HTTP_ECHO: "true"}},
            "spec": {"containers": [{"name": "c", "image": "echo", "ports": [{"containerPort": 8080}]}]},
        }),
    )
    .await;
    let pod = ready_pod(&client, &ns, "puller").await;
    let ip: Ipv4Addr = pod.status.and_then(|s| s.pod_ip).unwrap().parse().unwrap();
    let netns = netns_of(&env.info().instance, ip).await;

    let anonymous = get_v2_from_pod(&netns, registry, None).await;
    assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous:?}");
    let authorized = get_v2_from_pod(&netns, registry, Some(&registry.basic_authorization())).await;
    assert!(authorized.starts_with("HTTP/1.1 200"), "{authorized:?}");
}

#[tokio::test]
async fn a_registry_started_without_a_pod_network_serves_loopback_and_stops() {
    let layout = kuberay_testenv::paths::Layout::discover();
    let dir = std::env::temp_dir().join(format!("kwt-registry-standalone-{}", std::process::id()));
    let server = RegistryServer::start(&layout, &dir, None, Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let registry = server.registry().clone();
    assert_eq!(registry.pod_host_port, None);
    assert!(registry.host_port.starts_with("127.0.0.1:"), "{registry:?}");
    let client = registry.client().unwrap();
    let accepted = get_v2(&client, &registry.url(), Some(&registry.basic_authorization())).await;
    assert_eq!(accepted.status(), StatusCode::OK);
    let pid = server.pid().unwrap();
    server.stop().await;
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the registry ({pid}) still runs"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
