//! The apiserver's chart installed with its Pod run for real: the simulated kubelet maps the chart's image to
//! the `kuberay-apiserver` binary built here, which serves TLS from the release's Secret with its
//! ServiceAccount's in-cluster configuration and the chart's RBAC. A user holding only a ServiceAccount token
//! and the chart's user role in another namespace creates a compute template and a cluster through it.

use std::{net::SocketAddr, process::Command, sync::Arc, time::Duration};

use k8s_openapi::{
    ByteString,
    api::{
        core::v1::{Pod, Secret},
        rbac::v1::RoleBinding,
    },
};
use kube::{
    Api, Client,
    api::{ListParams, PostParams},
};
use kuberay_deploy_tests::{
    Tools,
    tools::{APISERVER_CHART, stdout_of},
};
use kuberay_testenv::{
    TestEnv, apiserver_binary,
    fixtures::{eventually, is_ready},
    images::{ImageMap, ImageSpec},
};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::{Value, json};

use crate::{incluster::ray_api, tools};

/// A CA (its PEM) and a serving certificate for `host` signed by it (certificate and key PEM).
fn certificates(host: &str) -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(DnType::CommonName, "apiserver-chart-test-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, &ca_key);
    let key = KeyPair::generate().unwrap();
    let serving = CertificateParams::new(vec![host.to_string()]).unwrap();
    let cert = serving.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// An HTTPS client that trusts `ca` and reaches `host` at `address`.
fn client_for(ca: &str, host: &str, address: SocketAddr) -> reqwest::Client {
    let mut roots = rustls::RootCertStore::empty();
    let ca = rustls::pki_types::pem::PemObject::from_pem_slice(ca.as_bytes()).unwrap();
    roots.add(ca).unwrap();
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .resolve(host, address)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client.request(method, url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn helm(tools: &Tools, env: &TestEnv, args: &[&str]) -> Command {
    let mut helm = tools.helm();
    helm.arg("--kubeconfig").arg(env.kubeconfig()).args(args);
    helm
}

/// Creates the kubernetes.io/tls Secret `name` in `namespace`.
async fn tls_secret(client: &Client, namespace: &str, name: &str, cert: &str, key: &str) {
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [("tls.crt", cert), ("tls.key", key)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_chart_runs_the_backend_over_tls_and_a_service_account_creates_a_cluster_through_it() {
    let tools = tools();
    let env: &TestEnv = TestEnv::shared().await.unwrap();
    let admin = env.client().await.unwrap();
    env.install_crds().await.unwrap();
    let release = env.namespace("apiserver-chart").await.unwrap();
    let work = env.namespace("apiserver-chart-work").await.unwrap();
    let ns = release.name();
    let host = format!("kuberay-apiserver-service.{ns}.svc");
    let (ca, cert, key) = certificates(&host);
    tls_secret(&admin, ns, "api-tls", &cert, &key).await;

    // The chart's image runs the binary built here; cluster-scoped names are the release's own.
    let image = format!("kuberay-apiserver:{ns}");
    env.map_images(&ImageMap::one(
        &image,
        ImageSpec::new(apiserver_binary().unwrap()),
    ))
    .unwrap();
    let (name, user_role) = (format!("kas-{ns}"), format!("kas-user-{ns}"));
    let values = format!("image.tag={ns},name={name},userRole.name={user_role},tls.secretName=api-tls");
    let mut install = helm(
        &tools,
        env,
        &["install", "kuberay-apiserver", APISERVER_CHART, "--namespace", ns],
    );
    install.args(["--set", &values]);
    stdout_of(install).unwrap();

    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let selector = "app.kubernetes.io/component=kuberay-apiserver,app.kubernetes.io/name=kuberay-apiserver";
    let pod = eventually(
        "the apiserver Pod to be Ready (HTTPS readiness)",
        Duration::from_secs(120),
        || async {
            let list = pods.list(&ListParams::default().labels(selector)).await.ok()?;
            list.items.into_iter().find(is_ready)
        },
    )
    .await;
    let ip = pod.status.and_then(|s| s.pod_ip).expect("the Pod's address");
    let address: SocketAddr = format!("{ip}:8888").parse().unwrap();
    let client = client_for(&ca, &host, address);
    let base = format!("https://{host}:8888");

    // A user: a ServiceAccount of the work namespace bound to the chart's user role there, nothing else.
    let user_token = env.service_account_token(work.name(), "ray-user").await.unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "ray-user"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user_role},
        "subjects": [{"kind": "ServiceAccount", "name": "ray-user", "namespace": work.name()}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), work.name())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();

    let api = format!("{base}/apis/v1/namespaces/{}", work.name());
    let (status, _) = call(
        &client,
        reqwest::Method::GET,
        &format!("{api}/clusters"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 401, "no token, no call");
    let template = json!({"name": "small", "cpu": 1, "memory": 1});
    // RBAC bindings take a moment to reach the authorizer's cache.
    eventually(
        "the user's template to be created",
        Duration::from_secs(30),
        || async {
            let (status, _) = call(
                &client,
                reqwest::Method::POST,
                &format!("{api}/compute_templates"),
                Some(&user_token),
                Some(template.clone()),
            )
            .await;
            (status == 200 || status == 409).then_some(())
        },
    )
    .await;
    let cluster = json!({
        "name": "through-the-chart", "user": "ray-user", "version": "2.52.0",
        "clusterSpec": {"headGroupSpec": {"computeTemplate": "small", "rayStartParams": {"dashboard-host": "0.0.0.0"}}},
    });
    let (status, created) = call(
        &client,
        reqwest::Method::POST,
        &format!("{api}/clusters"),
        Some(&user_token),
        Some(cluster),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let stored = ray_api(&admin, work.name(), "RayCluster")
        .get("through-the-chart")
        .await
        .unwrap();
    assert_eq!(
        stored
            .metadata
            .labels
            .unwrap_or_default()
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("kuberay-apiserver")
    );
    // The same user may not work in the release's namespace.
    let (status, _) = call(
        &client,
        reqwest::Method::GET,
        &format!("{base}/apis/v1/namespaces/{ns}/clusters"),
        Some(&user_token),
        None,
    )
    .await;
    assert_eq!(status, 403);

    stdout_of(helm(
        &tools,
        env,
        &["uninstall", "kuberay-apiserver", "--namespace", ns],
    ))
    .unwrap();
    let _ = release.delete(&admin).await;
    let _ = work.delete(&admin).await;
}
