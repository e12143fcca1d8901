//! The Kubernetes pass-through with kubectl: the server runs with TLS (kubectl sends bearer tokens only over
//! HTTPS) and the control plane's kubectl, pointed at it with a user's token, works with Ray objects in the
//! user's namespace (watches included), is refused in another one, and finds nothing else of the Kubernetes
//! API.

use std::{
    path::Path,
    process::{Output, Stdio},
    time::Duration,
};

use kuberay_testenv::{HeadMode, TestEnv};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::{
    flows::{Tenant, write_kubeconfig},
    support::{Server, env, namespace},
};

/// Writes a CA (`ca.crt`) and a serving certificate for 127.0.0.1 and localhost signed by it (`tls.crt`,
/// `tls.key`) into `dir`.
fn write_certificates(dir: &Path) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(DnType::CommonName, "kuberay-apiserver-test-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, &ca_key);
    let key = KeyPair::generate().unwrap();
    let mut serving = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    serving
        .distinguished_name
        .push(DnType::CommonName, "kuberay-apiserver");
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let cert = serving.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("ca.crt"), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
}

/// The environment's kubectl with `kubeconfig` (and a discovery cache of its own in `dir`).
fn kubectl_command(env: &TestEnv, dir: &Path, kubeconfig: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command: tokio::process::Command = env.kubectl().unwrap().into();
    command
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--cache-dir={}", dir.join("kube-cache").display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs kubectl to its end, with `stdin` as its input.
async fn kubectl(env: &TestEnv, dir: &Path, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = kubectl_command(env, dir, kubeconfig, args);
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().expect("running kubectl");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input.as_bytes()).await.unwrap();
        drop(pipe);
    }
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("kubectl took over a minute")
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn kubectl_works_with_ray_objects_through_the_pass_through_as_the_user() {
    let env = env().await;
    let tenant = Tenant::new(env, "kubectl", HeadMode::Fake).await;
    let other = namespace(env, "kubectl-other", HeadMode::Fake).await;
    let dir = tempfile::tempdir().unwrap();
    write_certificates(dir.path());
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let server = Server::start(
        env,
        &[
            &format!("--tls-cert-file={}", cert.display()),
            &format!("--tls-key-file={}", key.display()),
        ],
    )
    .await;
    let kubeconfig = dir.path().join("user.kubeconfig");
    write_kubeconfig(
        &kubeconfig,
        &format!("https://{}", server.http),
        &dir.path().join("ca.crt"),
        &tenant.user.token,
        None,
    );
    let ns = tenant.name();

    // Create, list and read a RayCluster in the user's namespace (no operator: only the object).
    let manifest = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "from-kubectl", "namespace": ns},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"}]}}}},
    })
    .to_string();
    let created = kubectl(
        env,
        dir.path(),
        &kubeconfig,
        &["create", "--validate=false", "-f", "-"],
        Some(&manifest),
    )
    .await;
    assert!(created.status.success(), "kubectl create: {}", text(&created));
    let listed = kubectl(
        env,
        dir.path(),
        &kubeconfig,
        &["get", "rayclusters", "-n", ns],
        None,
    )
    .await;
    assert!(
        listed.status.success(),
        "kubectl get rayclusters: {}",
        text(&listed)
    );
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("from-kubectl"),
        "{}",
        text(&listed)
    );
    let one = kubectl(
        env,
        dir.path(),
        &kubeconfig,
        &[
            "get",
            "raycluster",
            "from-kubectl",
            "-n",
            ns,
            "-o",
            "jsonpath={.spec.headGroupSpec.template.spec.containers[0].image}",
        ],
        None,
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&one.stdout),
        "rayproject/ray:2.9.0",
        "{}",
        text(&one)
    );

    // A watch streams changes: the list first, then the change made after it (from the list's version on).
    let mut watch = kubectl_command(
        env,
        dir.path(),
        &kubeconfig,
        &["get", "rayclusters", "-n", ns, "--watch", "-o", "name"],
    )
    .spawn()
    .expect("running kubectl get --watch");
    let mut watched = BufReader::new(watch.stdout.take().unwrap()).lines();
    let listed_line = tokio::time::timeout(Duration::from_secs(30), watched.next_line()).await;
    assert_eq!(
        listed_line.ok().and_then(Result::ok).flatten().as_deref(),
        Some("raycluster.ray.io/from-kubectl"),
        "kubectl get --watch lists first"
    );
    let labelled = kubectl(
        env,
        dir.path(),
        &kubeconfig,
        &["label", "raycluster", "from-kubectl", "-n", ns, "watched=yes"],
        None,
    )
    .await;
    assert!(labelled.status.success(), "kubectl label: {}", text(&labelled));
    let event_line = tokio::time::timeout(Duration::from_secs(30), watched.next_line()).await;
    let _ = watch.kill().await;
    assert_eq!(
        event_line.ok().and_then(Result::ok).flatten().as_deref(),
        Some("raycluster.ray.io/from-kubectl"),
        "the watch did not stream the change"
    );

    // Another namespace: the Kubernetes API server refuses the user.
    let refused = kubectl(
        env,
        dir.path(),
        &kubeconfig,
        &["get", "rayclusters", "-n", other.name()],
        None,
    )
    .await;
    assert!(!refused.status.success(), "{}", text(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("Forbidden") || stderr.contains("forbidden"),
        "{}",
        text(&refused)
    );
    assert!(
        stderr.contains(&tenant.user.name),
        "names the user: {}",
        text(&refused)
    );

    // Nothing but ray.io/v1 is served.
    let pods = kubectl(env, dir.path(), &kubeconfig, &["get", "pods", "-n", ns], None).await;
    assert!(!pods.status.success(), "{}", text(&pods));
    assert!(
        String::from_utf8_lossy(&pods.stderr).contains("the server doesn't have a resource type \"pods\""),
        "{}",
        text(&pods)
    );

    let deleted = kubectl(
        env,
        dir.path(),
        &kubeconfig,
        &["delete", "raycluster", "from-kubectl", "-n", ns],
        None,
    )
    .await;
    assert!(deleted.status.success(), "kubectl delete: {}", text(&deleted));

    server.stop().await.unwrap();
    tenant.remove(env).await;
    let _ = other.delete(&env.client().await.unwrap()).await;
}
