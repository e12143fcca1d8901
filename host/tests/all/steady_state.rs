//! Once a cluster is ready, reconciling it again writes nothing to the API server.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, pods, rayclusters, ready_cluster, sample,
    start_operator,
};

#[tokio::test]
async fn a_steady_state_reconcile_makes_no_write() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "steady").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;

    // Let the operator settle: no write for two seconds.
    let written = || operator.metric("kuberay_wasm_api_writes_total", &["result=\"written\""]);
    let mut last = written();
    eventually("writes to stop", Duration::from_secs(60), || {
        let now = written();
        let quiet = now == last;
        last = now;
        async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            quiet.then_some(())
        }
    })
    .await;
    let writes_before = written();
    let reconciles_before = operator.metric("kuberay_wasm_reconciles_total", &["result=\"success\""]);

    // Touch the cluster's labels, then a Pod it owns: each queues a reconcile that finds nothing to do.
    let clusters = rayclusters(&client, &ns);
    clusters
        .patch(
            "raycluster-kuberay",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "1"}}})),
        )
        .await
        .unwrap();
    let touched = clusters.get("raycluster-kuberay").await.unwrap();
    // One at a time: changes within the reconcile debounce would become one reconcile.
    let succeeded = || operator.metric("kuberay_wasm_reconciles_total", &["result=\"success\""]);
    eventually(
        "a reconcile of the touched cluster",
        Duration::from_secs(30),
        || async { (succeeded() >= reconciles_before + 1.0).then_some(()) },
    )
    .await;
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let worker = pods(&client, &ns, "ray.io/node-type=worker").await.remove(0);
    pod_api
        .patch(
            worker.metadata.name.as_deref().unwrap(),
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"touched": "1"}}})),
        )
        .await
        .unwrap();
    eventually(
        "a reconcile for the touched Pod",
        Duration::from_secs(30),
        || async { (succeeded() >= reconciles_before + 2.0).then_some(()) },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        written(),
        writes_before,
        "a steady-state reconcile wrote to the API server"
    );
    let after = clusters.get("raycluster-kuberay").await.unwrap();
    assert_eq!(
        after.metadata.resource_version, touched.metadata.resource_version,
        "the RayCluster changed"
    );
    operator.stop().await;
}
