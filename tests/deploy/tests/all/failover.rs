//! The chart installed the way a platform team installs it, with the operator's Pods run for real by the
//! simulated kubelet (the chart's image mapped to the operator binary built here, the plugins at the image's
//! plugin path): two replicas, one leader. The leader is killed (SIGKILL, as a crashed process); the standby
//! takes the Lease and reconciles a new RayCluster. Then the new leader's Pod is deleted (SIGTERM): it releases
//! the Lease, so the other replica takes it before the old lease would have expired.

use std::{os::unix::fs::PermissionsExt, path::PathBuf, process::Command, time::Duration};

use k8s_openapi::{
    api::{coordination::v1::Lease, core::v1::Pod},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use kuberay_deploy_tests::{
    Tools,
    tools::{CHART, stdout_of},
};
use kuberay_testenv::{
    TestEnv, annotations,
    images::{ImageMap, ImageSpec},
    supervisor_binary,
};
use serde_json::json;

use crate::tools;

/// The chart's default image (`image.repository`:`appVersion`).
const IMAGE: &str = "kuberay-wasm:0.1.0";
/// The operator's default Lease name (`--leader-election-id`).
const LEASE: &str = "kuberay-wasm-leader";
const SELECTOR: &str = "app.kubernetes.io/name=kuberay-wasm";

/// A directory any user may read, holding the plugins under the names the built-in policy knows.
fn plugins_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kwt-chart-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.join("raycluster.wasm");
    std::fs::copy(kuberay_plugin_artifacts::RAYCLUSTER, &file).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    dir
}

async fn eventually<T, F: Future<Output = Option<T>>>(
    what: &str,
    limit: Duration,
    mut f: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = f().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The Lease's holder, and the Pod whose name it starts with (the operator's identity is its Pod name and a
/// suffix).
async fn leader(leases: &Api<Lease>, pods: &Api<Pod>) -> Option<(String, Pod, Lease)> {
    let lease = leases.get_opt(LEASE).await.ok()??;
    let holder = lease
        .spec
        .as_ref()?
        .holder_identity
        .clone()
        .filter(|h| !h.is_empty())?;
    let list = pods.list(&ListParams::default().labels(SELECTOR)).await.ok()?;
    let pod = list
        .items
        .into_iter()
        .find(|p| p.metadata.name.as_deref().is_some_and(|n| holder.starts_with(n)))?;
    Some((holder, pod, lease))
}

async fn create_cluster(client: &Client, namespace: &str, name: &str) {
    let gvk = GroupVersionKind::gvk("ray.io", "v1", "RayCluster");
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk));
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{
                "name": "ray-head", "image": "rayproject/ray:2.52.0",
                "ports": [{"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265}],
            }]}}},
        },
    }))
    .unwrap();
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
}

async fn head_pod_created(client: &Client, namespace: &str, cluster: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let selector = format!("ray.io/cluster={cluster},ray.io/node-type=head");
    eventually(
        &format!("the head Pod of {cluster}"),
        Duration::from_secs(90),
        || async {
            let list = pods.list(&ListParams::default().labels(&selector)).await.ok()?;
            (!list.items.is_empty()).then_some(())
        },
    )
    .await;
}

fn helm(tools: &Tools, env: &TestEnv, args: &[&str]) -> Command {
    let mut helm = tools.helm();
    helm.arg("--kubeconfig").arg(env.kubeconfig()).args(args);
    helm
}

#[tokio::test]
async fn the_standby_replica_takes_over_when_the_leader_is_killed_or_deleted() {
    let Some(tools) = tools() else { return };
    let env = TestEnv::shared().await.unwrap();
    let operator = supervisor_binary()
        .unwrap()
        .parent()
        .unwrap()
        .join("kuberay-wasm");
    assert!(operator.is_file(), "build it: cargo build -p kuberay-wasm");
    let plugins = plugins_dir();
    let spec = ImageSpec::new(&operator).with_path("/opt/kuberay-wasm/plugins", &plugins);
    env.map_images(&ImageMap::one(IMAGE, spec)).unwrap();
    let client = env.client().await.unwrap();
    let release_ns = env.namespace("chart-ha").await.unwrap();
    let work = env.namespace("chart-ha-work").await.unwrap();
    let release = format!("kuberay-wasm-{}", release_ns.name());
    let watched = format!("watchNamespaces={{{}}}", work.name());
    let install = helm(
        &tools,
        env,
        &[
            "install",
            &release,
            CHART,
            "--namespace",
            release_ns.name(),
            "--set",
            "replicas=2",
            "--set",
            &watched,
        ],
    );
    stdout_of(install).unwrap();

    let pods: Api<Pod> = Api::namespaced(client.clone(), release_ns.name());
    let leases: Api<Lease> = Api::namespaced(client.clone(), release_ns.name());
    eventually("two Ready operator Pods", Duration::from_secs(120), || async {
        let list = pods.list(&ListParams::default().labels(SELECTOR)).await.ok()?;
        (list.items.iter().filter(|p| is_ready(p)).count() == 2).then_some(())
    })
    .await;
    let (first_holder, first_pod, _) =
        eventually("a leader", Duration::from_secs(60), || leader(&leases, &pods)).await;
    create_cluster(&client, work.name(), "before-failover").await;
    head_pod_created(&client, work.name(), "before-failover").await;

    // Killed: no chance to release the Lease; the standby takes it once it expires.
    let first_name = first_pod.metadata.name.clone().unwrap();
    let kill = json!({"metadata": {"annotations": {annotations::KILL: "failover"}}});
    pods.patch(&first_name, &PatchParams::default(), &Patch::Merge(&kill))
        .await
        .unwrap();
    let (second_holder, second_pod, second_lease) =
        eventually("a new leader after the kill", Duration::from_secs(90), || async {
            leader(&leases, &pods)
                .await
                .filter(|(holder, ..)| *holder != first_holder)
        })
        .await;
    create_cluster(&client, work.name(), "after-failover").await;
    head_pod_created(&client, work.name(), "after-failover").await;
    let killed = pods.get(&first_name).await.unwrap();
    let restarts = killed
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|c| c.first().map(|c| c.restart_count))
        .unwrap_or(0);
    assert!(restarts >= 1, "the killed operator's container is restarted");

    // Deleted: SIGTERM; the leader releases the Lease on its way out, so another replica takes it before the
    // old lease would have run out.
    let second_name = second_pod.metadata.name.clone().unwrap();
    let spec = second_lease.spec.unwrap();
    let expiry = spec.renew_time.map(|t| t.0).unwrap()
        + Duration::from_secs(u64::try_from(spec.lease_duration_seconds.unwrap()).unwrap());
    pods.delete(&second_name, &DeleteParams::default()).await.unwrap();
    let (_, _, third_lease) = eventually("a leader after the deletion", Duration::from_secs(90), || async {
        leader(&leases, &pods)
            .await
            .filter(|(holder, ..)| *holder != second_holder)
    })
    .await;
    let acquired: Timestamp = third_lease.spec.unwrap().acquire_time.unwrap().0;
    assert!(
        acquired < expiry,
        "taken over at {acquired}, before the released lease's expiry {expiry}"
    );
    create_cluster(&client, work.name(), "after-handover").await;
    head_pod_created(&client, work.name(), "after-handover").await;

    stdout_of(helm(
        &tools,
        env,
        &["uninstall", &release, "--namespace", release_ns.name()],
    ))
    .unwrap();
    work.delete(&client).await.unwrap();
    release_ns.delete(&client).await.unwrap();
    let _ = std::fs::remove_dir_all(plugins);
}
