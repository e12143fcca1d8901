//! Who a caller is: a client certificate signed by `--client-ca-file` names its user (CN) and groups (O),
//! as kube-apiserver reads them, and that user's RBAC applies; a certificate of another CA does not get
//! through the handshake. A ServiceAccount token stops working once its account is deleted, at most
//! `--token-cache-ttl` later.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use k8s_openapi::api::{authentication::v1::TokenReview, core::v1::ServiceAccount};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use kuberay_testenv::HeadMode;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::support::{Server, User, env, eventually, expect, namespace, template};

/// A certificate authority of its own.
struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key.
struct Leaf {
    certificate: rcgen::Certificate,
    key: KeyPair,
}

impl Leaf {
    fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivatePkcs8KeyDer::from(self.key.serialize_der()).into()
    }
}

impl Authority {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Self { issuer }
    }

    fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A server certificate for localhost and 127.0.0.1.
    fn server(&self) -> Leaf {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "kuberay-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate of user `cn` in group `o`.
    fn client(&self, cn: &str, o: &str) -> Leaf {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.distinguished_name.push(DnType::OrganizationName, o);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let certificate = params.signed_by(&key, &self.issuer).unwrap();
        Leaf { certificate, key }
    }
}

/// An HTTPS client trusting `ca`, presenting `certificate` if given.
fn https_client(ca: &Authority, certificate: Option<&Leaf>) -> reqwest::Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match certificate {
        Some(leaf) => builder
            .with_client_auth_cert(vec![leaf.certificate.der().clone()], leaf.key_der())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn get(client: &reqwest::Client, url: &str, token: Option<&str>) -> reqwest::Result<(u16, String)> {
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await?))
}

#[tokio::test]
async fn client_certificates_authenticate_as_their_subject() {
    let env = env().await;
    let a = namespace(env, "mtls-a", HeadMode::None).await;
    let b = namespace(env, "mtls-b", HeadMode::None).await;
    // carol exists only in her certificate and in a RoleBinding naming the User.
    let carol = User {
        name: "carol".into(),
        token: String::new(),
    };
    carol.grant(env, a.name()).await;
    let token_user = User::service_account(env, a.name(), "ray-user").await;
    token_user.grant(env, a.name()).await;

    let ca = Authority::new("kuberay-apiserver test CA");
    let dir = tempfile::tempdir().unwrap();
    let server_leaf = ca.server();
    let files = [
        ("server.pem", server_leaf.certificate.pem()),
        ("server-key.pem", server_leaf.key.serialize_pem()),
        ("ca.pem", ca.issuer.pem()),
    ];
    for (name, text) in &files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let flag = |name: &str, file: &str| format!("--{name}={}", dir.path().join(file).display());
    let flags = [
        flag("tls-cert-file", "server.pem"),
        flag("tls-key-file", "server-key.pem"),
        flag("client-ca-file", "ca.pem"),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = Server::start(env, &flags).await;
    let base = format!("https://localhost:{}", server.http.port());
    let clusters = |ns: &str| format!("{base}/apis/v1/namespaces/{ns}/clusters");

    let as_carol = https_client(&ca, Some(&ca.client("carol", "ray-users")));
    let (status, body) = get(&as_carol, &clusters(a.name()), None).await.unwrap();
    assert_eq!(status, 200, "carol lists in her namespace: {body}");
    let (status, body) = get(&as_carol, &clusters(b.name()), None).await.unwrap();
    assert!(
        status == 403 && body.contains("User \\\"carol\\\""),
        "carol elsewhere: {status} {body}"
    );
    let created = as_carol
        .post(format!(
            "{base}/apis/v1/namespaces/{}/compute_templates",
            a.name()
        ))
        .json(&template("carols", 1))
        .send()
        .await
        .unwrap();
    assert_eq!(
        created.status().as_u16(),
        200,
        "{}",
        created.text().await.unwrap()
    );

    // Without a certificate a bearer token still authenticates; with neither, nothing does.
    let anonymous = https_client(&ca, None);
    let (status, body) = get(&anonymous, &clusters(a.name()), Some(&token_user.token))
        .await
        .unwrap();
    assert_eq!(status, 200, "a token over TLS: {body}");
    let (status, body) = get(&anonymous, &clusters(a.name()), None).await.unwrap();
    assert_eq!(status, 401, "no certificate, no token: {body}");

    // A certificate of another CA, even naming carol, ends the handshake: no answer at all.
    let other = Authority::new("another CA");
    let impostor = https_client(&ca, Some(&other.client("carol", "ray-users")));
    let answer = get(&impostor, &clusters(a.name()), None).await;
    assert!(
        answer.is_err(),
        "a certificate of another CA was let in: {answer:?}"
    );

    // The gRPC port is served over TLS too: plain text gets no gRPC answer there.
    let plain = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{}/", server.grpc.port()))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP on the TLS gRPC port: {plain:?}");

    let (status, metrics) = get(&as_carol, &format!("{base}/metrics"), None).await.unwrap();
    assert_eq!(status, 200);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("kuberay_apiserver_authentications_total{outcome=\"certificate\"}")),
        "{metrics}"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_deleted_service_accounts_token_stops_working_within_the_cache_ttl() {
    let env = env().await;
    let ns = namespace(env, "token-ttl", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "short-lived").await;
    user.grant(env, ns.name()).await;
    let ttl = Duration::from_secs(1);
    let short = Server::start(env, &["--token-cache-ttl=1s"]).await;
    // A server that remembers identities for long shows the cache is what the TTL bounds.
    let long = Server::start(env, &["--token-cache-ttl=5m"]).await;
    let path = format!("/apis/v1/namespaces/{}/clusters", ns.name());
    expect(short.rest(Some(&user.token)).get(&path).await, 200);
    expect(long.rest(Some(&user.token)).get(&path).await, 200);

    let admin = env.client().await.unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), ns.name());
    accounts
        .delete("short-lived", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = Instant::now();
    // The API server itself keeps accepting a token for a while after its account is gone (its token
    // authenticator caches successes for 10 s): from the moment it stops, this server's own cache may
    // add at most its TTL. Meanwhile the token is used all along, so this server's cache stays warm.
    let reviews: Api<TokenReview> = Api::all(admin);
    let review: TokenReview =
        serde_json::from_value(serde_json::json!({"spec": {"token": user.token}})).unwrap();
    let rest = short.rest(Some(&user.token));
    eventually(
        "the API server to refuse the deleted account's token",
        Duration::from_secs(30),
        || {
            let (reviews, review, rest, path) = (reviews.clone(), review.clone(), rest.clone(), path.clone());
            async move {
                rest.get(&path).await;
                let answer = reviews.create(&PostParams::default(), &review).await.unwrap();
                let authenticated = answer.status.and_then(|s| s.authenticated) == Some(true);
                (!authenticated).then_some(())
            }
        },
    )
    .await;
    let refused_by_kubernetes = Instant::now();
    let body = eventually(
        "this server to refuse the deleted account's token",
        Duration::from_secs(20),
        || {
            let rest = rest.clone();
            let path = path.clone();
            async move {
                let (status, body) = rest.get(&path).await;
                (status == 401).then_some(body)
            }
        },
    )
    .await;
    let took = refused_by_kubernetes.elapsed();
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not accept the bearer token")),
        "{body}"
    );
    // The polling itself takes a quarter of a second per round.
    assert!(
        took <= ttl + Duration::from_millis(500),
        "the token kept working for {took:?} after the API server refused it (TTL {ttl:?})"
    );
    expect(long.rest(Some(&user.token)).get(&path).await, 200);
    eprintln!(
        "the deleted account's token: refused by Kubernetes after {:?}, by this server {took:?} later (TTL {ttl:?})",
        refused_by_kubernetes - deleted
    );
    short.stop().await.unwrap();
    long.stop().await.unwrap();
}
