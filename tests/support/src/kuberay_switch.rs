//! What the tests of a switch between KubeRay's operator and ours share: KubeRay's operator (built from its
//! Go module by `make kuberay-operator`) started as its chart runs it, the holder of the Lease both use, and
//! what a switch must leave as it was (the uids of Ray Pods and RayClusters, the submissions a fake head saw).

use std::{collections::BTreeMap, net::TcpListener, path::Path, process::Stdio};

use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, ListParams},
};
use serde_json::Value;

use crate::{paths::Layout, proxy_http::ProxyHttp};

/// KubeRay's Lease name (both operators' default).
pub const LEASE: &str = "ray-operator-leader";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("a free loopback port: {e}"))
}

/// KubeRay's operator with leader election in `lease_namespace`, watching `watched`, with the `extra` flags,
/// its output in `log`; killed when dropped.
pub fn start_kuberay(
    kubeconfig: &Path,
    lease_namespace: &str,
    watched: &str,
    log: &Path,
    extra: &[&str],
) -> tokio::process::Child {
    let binary = Layout::discover().binary("kuberay-operator").unwrap_or_else(|e| {
        panic!("{e}; `make kuberay-operator` builds KubeRay's operator (`make test` does)")
    });
    let out = std::fs::File::create(log).unwrap_or_else(|e| panic!("KubeRay's log file: {e}"));
    let err = out
        .try_clone()
        .unwrap_or_else(|e| panic!("KubeRay's log file: {e}"));
    tokio::process::Command::new(binary)
        .args([
            "--enable-leader-election=true",
            &format!("--leader-election-namespace={lease_namespace}"),
            &format!("--watch-namespace={watched}"),
            &format!("--metrics-addr=127.0.0.1:{}", free_port()),
            &format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        ])
        .args(extra)
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("starting KubeRay's operator: {e}"))
}

/// The holder of [`LEASE`] in `namespace`, if any.
pub async fn lease_holder(client: &Client, namespace: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    leases.get_opt(LEASE).await.ok()??.spec?.holder_identity
}

/// Every Ray Pod of `namespace` not being deleted, by name, with its uid.
pub async fn pod_uids(client: &Client, namespace: &str) -> BTreeMap<String, String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels("ray.io/is-ray-node=yes"))
        .await
        .unwrap_or_else(|e| panic!("listing Ray Pods: {e}"));
    list.items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.metadata.name?, p.metadata.uid?)))
        .collect()
}

/// Every RayCluster of `namespace` by name, with its uid.
pub async fn cluster_uids(client: &Client, namespace: &str) -> BTreeMap<String, String> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"));
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let list = clusters
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("listing RayClusters: {e}"));
    list.items
        .into_iter()
        .filter_map(|c| Some((c.metadata.name?, c.metadata.uid?)))
        .collect()
}

/// How many times each submission id reached the fake head of `cluster`, or `None` when it does not answer.
pub async fn submissions(client: &Client, namespace: &str, cluster: &str) -> Option<Value> {
    let head = ProxyHttp::service(
        client.clone(),
        namespace,
        &format!("{cluster}-head-svc"),
        "dashboard",
    );
    head.get("/testenv/submissions").await.ok()?.json().ok()
}

/// How many Ray jobs of each submission id the real Ray head of `cluster` holds (Ray's `GET /api/jobs/`),
/// or `None` when it does not answer.
pub async fn ray_jobs(client: &Client, namespace: &str, cluster: &str) -> Option<BTreeMap<String, usize>> {
    let head = ProxyHttp::service(
        client.clone(),
        namespace,
        &format!("{cluster}-head-svc"),
        "dashboard",
    );
    let list = head.get("/api/jobs/").await.ok()?.json().ok()?;
    let mut counts = BTreeMap::new();
    for job in list.as_array()? {
        if let Some(id) = job["submission_id"].as_str() {
            *counts.entry(id.to_string()).or_insert(0) += 1;
        }
    }
    Some(counts)
}
