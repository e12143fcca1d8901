//! The chart installed the way a platform team installs it, with two operator replicas run for real in their
//! Pods (`incluster.rs`), one leading. The leader hangs (SIGSTOP): the standby takes the Lease once it expires
//! and reconciles a new RayCluster. The new leader is killed (SIGKILL, as a crashed process): a replica takes
//! the Lease once it expires and reconciles. The next leader's Pod is deleted (SIGTERM): it releases the Lease,
//! so the other replica takes it before the old lease would have expired.

use std::time::Duration;

use k8s_openapi::{
    api::{coordination::v1::Lease, core::v1::Pod},
    jiff::Timestamp,
};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kuberay_testenv::{TestEnv, annotations};
use serde_json::json;

use crate::{
    incluster::{Operator, SELECTOR, create_cluster, eventually, head_pod_created, ready_pods},
    tools,
};

/// The operator's default Lease name (`--leader-election-id`).
const LEASE: &str = "ray-operator-leader";

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

async fn annotate(pods: &Api<Pod>, name: &str, key: &str, value: Option<&str>) {
    let patch = json!({"metadata": {"annotations": {key: value}}});
    pods.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Waits for a leader other than `previous` and returns it.
async fn new_leader(
    leases: &Api<Lease>,
    pods: &Api<Pod>,
    previous: &str,
    after: &str,
) -> (String, Pod, Lease) {
    eventually(
        &format!("a new leader after {after}"),
        Duration::from_secs(90),
        || async {
            leader(leases, pods)
                .await
                .filter(|(holder, ..)| holder != previous)
        },
    )
    .await
}

#[tokio::test]
async fn the_standby_replica_takes_over_when_the_leader_hangs_dies_or_goes() {
    let tools = tools();
    let env: &TestEnv = TestEnv::shared().await.unwrap();
    let client = env.client().await.unwrap();
    let release_ns = env.namespace("chart-ha").await.unwrap();
    let work = env.namespace("chart-ha-work").await.unwrap();
    let operator = Operator::install(
        &tools,
        env,
        release_ns.name(),
        work.name(),
        &["--set", "replicas=2"],
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), release_ns.name());
    let leases: Api<Lease> = Api::namespaced(client.clone(), release_ns.name());
    ready_pods(&client, release_ns.name(), 2).await;
    let (first_holder, first_pod, _) =
        eventually("a leader", Duration::from_secs(60), || leader(&leases, &pods)).await;
    create_cluster(&client, work.name(), "first").await;
    head_pod_created(&client, work.name(), "first").await;

    // Hung (SIGSTOP): it cannot renew, so the standby takes the Lease once it expires and reconciles.
    let first_name = first_pod.metadata.name.clone().unwrap();
    annotate(&pods, &first_name, annotations::FREEZE, Some("true")).await;
    let (second_holder, second_pod, _) = new_leader(&leases, &pods, &first_holder, "the leader hung").await;
    assert_ne!(
        second_pod.metadata.name.as_deref(),
        Some(first_name.as_str()),
        "the standby leads"
    );
    create_cluster(&client, work.name(), "second").await;
    head_pod_created(&client, work.name(), "second").await;
    annotate(&pods, &first_name, annotations::FREEZE, None).await;

    // Killed (SIGKILL): no chance to release the Lease; its container restarts, and a replica takes the Lease
    // once it expires.
    let second_name = second_pod.metadata.name.clone().unwrap();
    annotate(&pods, &second_name, annotations::KILL, Some("failover")).await;
    let (third_holder, third_pod, third_lease) =
        new_leader(&leases, &pods, &second_holder, "the leader was killed").await;
    create_cluster(&client, work.name(), "third").await;
    head_pod_created(&client, work.name(), "third").await;
    let killed = pods.get(&second_name).await.unwrap();
    let restarts = killed
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|c| c.first().map(|c| c.restart_count))
        .unwrap_or(0);
    assert!(restarts >= 1, "the killed operator's container is restarted");

    // Deleted (SIGTERM): the leader releases the Lease on its way out, so another replica takes it before the
    // old lease would have run out.
    let spec = third_lease.spec.unwrap();
    let expiry = spec.renew_time.map(|t| t.0).unwrap()
        + Duration::from_secs(u64::try_from(spec.lease_duration_seconds.unwrap()).unwrap());
    let third_name = third_pod.metadata.name.clone().unwrap();
    pods.delete(&third_name, &DeleteParams::default()).await.unwrap();
    let (_, _, fourth_lease) = new_leader(&leases, &pods, &third_holder, "the leader was deleted").await;
    let acquired: Timestamp = fourth_lease.spec.unwrap().acquire_time.unwrap().0;
    assert!(
        acquired < expiry,
        "taken over at {acquired}, before the released lease's expiry {expiry}"
    );
    create_cluster(&client, work.name(), "fourth").await;
    head_pod_created(&client, work.name(), "fourth").await;

    operator.uninstall();
    work.delete(&client).await.unwrap();
    release_ns.delete(&client).await.unwrap();
}
