//! KubeRay's operator and ours on one Lease: both elect their leader on `ray-operator-leader` (KubeRay's
//! name, our default), so in one namespace only one of them reconciles. KubeRay's real operator
//! (`make kuberay-operator`) leads first and ours stands by, writing nothing; when KubeRay's dies without
//! releasing the Lease, ours takes it over once it expires and reconciles.

use std::{path::PathBuf, process::Stdio, time::Duration};

use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kube::Api;
use kuberay_testenv::{TestNamespace, workloads::real_ray::http_get};

use crate::{
    leadership::{create_cluster, holder_of},
    support::{
        env, eventually, free_addr, namespace, plugins_dir_with, pods, scratch_dir, shared_cache_dir,
        test_policy_file,
    },
};

const LEASE: &str = "ray-operator-leader";

fn kuberay_binary() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.local/bin/kuberay-operator");
    assert!(
        path.is_file(),
        "{} is missing: `make kuberay-operator` builds KubeRay's operator (`make test` does)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    free_addr().port()
}

/// KubeRay's operator with leader election in `ns`, its log in `log`.
fn start_kuberay(kubeconfig: &std::path::Path, ns: &str, log: &std::path::Path) -> tokio::process::Child {
    let out = std::fs::File::create(log).expect("KubeRay's log file");
    let err = out.try_clone().expect("KubeRay's log file");
    tokio::process::Command::new(kuberay_binary())
        .args([
            "--enable-leader-election=true",
            &format!("--leader-election-namespace={ns}"),
            &format!("--watch-namespace={ns}"),
            &format!("--metrics-addr=127.0.0.1:{}", free_port()),
            &format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        ])
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .expect("starting KubeRay's operator")
}

/// Our operator binary, started with KubeRay's flags as its chart writes them and the default Lease.
fn start_ours(kubeconfig: &std::path::Path, ns: &str, metrics_port: u16) -> tokio::process::Child {
    let plugins = plugins_dir_with(&[kuberay_plugin_artifacts::RAYCLUSTER]);
    tokio::process::Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
        .arg("operator")
        .arg("--plugins")
        .arg(&plugins)
        .arg("--policy")
        .arg(test_policy_file(&plugins))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(shared_cache_dir())
        .args([
            "--enable-leader-election=true",
            &format!("--leader-election-namespace={ns}"),
            &format!("--watch-namespace={ns}"),
            &format!("--metrics-addr=127.0.0.1:{metrics_port}"),
            &format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
            "--plugin-resources=false",
            "--plugin-reload-interval=0",
        ])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("starting our operator")
}

/// A metric of ours (`name` followed by a space: no labels), once the endpoint answers.
async fn our_metric(port: u16, name: &str) -> Option<f64> {
    let text = http_get(
        &format!("http://127.0.0.1:{port}/metrics"),
        Duration::from_secs(2),
    )
    .await?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} "))?.trim().parse().ok())
}

/// The field managers of the head Pod of `cluster`, once it exists.
async fn head_managers(client: &kube::Client, ns: &TestNamespace, cluster: &str) -> Vec<String> {
    let selector = format!("ray.io/cluster={cluster},ray.io/node-type=head");
    let head: Pod = eventually(
        &format!("the head Pod of {cluster}"),
        Duration::from_secs(90),
        || async { pods(client, ns, &selector).await.into_iter().next() },
    )
    .await;
    head.metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect()
}

fn ours(managers: &[String]) -> bool {
    managers.iter().any(|m| m.starts_with("kuberay-wasm"))
}

#[tokio::test]
async fn kuberays_operator_and_ours_never_lead_at_once_on_kuberays_lease() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "kuberay-lease").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    let log = scratch_dir("kuberay-lease").join("kuberay-operator.log");
    let kubeconfig = env.kubeconfig().to_path_buf();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();

    let mut kuberay = start_kuberay(&kubeconfig, ns.name(), &log);
    let kuberays = eventually(
        "KubeRay's operator to hold the Lease",
        Duration::from_secs(60),
        || holder_of(&leases, LEASE),
    )
    .await;
    let port = free_port();
    let _ours = start_ours(&kubeconfig, ns.name(), port);
    let standby = eventually("our operator to stand by", Duration::from_secs(120), || async {
        our_metric(port, "kuberay_wasm_leader")
            .await
            .filter(|l| *l == 0.0)
    })
    .await;
    assert_eq!(standby, 0.0);

    create_cluster(&client, &ns, "under-kuberay").await;
    let managers = head_managers(&client, &ns, "under-kuberay").await;
    assert!(!ours(&managers), "ours wrote while KubeRay led: {managers:?}");
    assert_eq!(
        holder_of(&leases, LEASE).await.as_deref(),
        Some(kuberays.as_str()),
        "{}",
        read_log()
    );
    assert_eq!(our_metric(port, "kuberay_wasm_leader").await, Some(0.0));

    // Killed, KubeRay's operator does not release the Lease: ours waits for it to expire (15 s), then leads.
    kuberay.kill().await.expect("killing KubeRay's operator");
    eventually("our operator to lead", Duration::from_secs(60), || async {
        our_metric(port, "kuberay_wasm_leader")
            .await
            .filter(|l| *l == 1.0)
    })
    .await;
    let now = holder_of(&leases, LEASE).await;
    assert!(
        now.is_some() && now.as_deref() != Some(kuberays.as_str()),
        "{now:?}"
    );
    create_cluster(&client, &ns, "under-ours").await;
    let managers = head_managers(&client, &ns, "under-ours").await;
    assert!(ours(&managers), "the head Pod is not ours: {managers:?}");
}
