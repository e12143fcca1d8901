//! Scaling a worker group up and down, `workersToDelete`, replacing workers that were killed or failed, and
//! read-your-writes: scaling from 0 to 50 creates exactly 50 Pods.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use kuberay_testenv::annotations;
use serde_json::json;

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, pods, rayclusters, ready_cluster, sample,
    start_operator,
};

const NAME: &str = "raycluster-kuberay";
const WORKERS: &str = "ray.io/cluster=raycluster-kuberay,ray.io/node-type=worker";

async fn patch_spec(
    client: &kube::Client,
    ns: &kuberay_testenv::TestNamespace,
    name: &str,
    patch: serde_json::Value,
) {
    rayclusters(client, ns)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

async fn wait_for_workers(
    client: &kube::Client,
    ns: &kuberay_testenv::TestNamespace,
    selector: &str,
    count: usize,
) -> Vec<Pod> {
    eventually(
        &format!("{count} running workers"),
        Duration::from_secs(90),
        || async {
            let workers = pods(client, ns, selector).await;
            let running = workers
                .iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                .count();
            (workers.len() == count && running == count).then_some(workers)
        },
    )
    .await
}

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap()
}

#[tokio::test]
async fn workers_scale_up_down_and_by_name_and_are_replaced_when_killed() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "scaling").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, NAME).await;

    patch_spec(&client, &ns, NAME, json!({"spec": {"workerGroupSpecs": [{"groupName": "workergroup", "replicas": 4, "minReplicas": 1, "maxReplicas": 5, "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}]}})).await;
    let workers = wait_for_workers(&client, &ns, WORKERS, 4).await;
    let cluster = ready_cluster(&client, &ns, NAME).await;
    assert_eq!(cluster["status"]["desiredWorkerReplicas"], 4);

    // workersToDelete removes exactly the named worker, even while replicas stay the same count minus one.
    let victim = name_of(&workers[1]);
    patch_spec(&client, &ns, NAME, json!({"spec": {"workerGroupSpecs": [{"groupName": "workergroup", "replicas": 3, "minReplicas": 1, "maxReplicas": 5, "scaleStrategy": {"workersToDelete": [victim]}, "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}]}})).await;
    let after = wait_for_workers(&client, &ns, WORKERS, 3).await;
    assert!(after.iter().all(|p| name_of(p) != victim), "{victim} survived");
    let survivors: Vec<String> = after.iter().map(name_of).collect();

    // Scaling down with autoscaling off removes the surplus.
    patch_spec(&client, &ns, NAME, json!({"spec": {"workerGroupSpecs": [{"groupName": "workergroup", "replicas": 1, "minReplicas": 1, "maxReplicas": 5, "scaleStrategy": {"workersToDelete": []}, "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}]}})).await;
    let one = wait_for_workers(&client, &ns, WORKERS, 1).await;
    assert!(survivors.contains(&name_of(&one[0])));

    // A deleted worker is recreated.
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let deleted = name_of(&one[0]);
    api.delete(&deleted, &DeleteParams::default()).await.unwrap();
    let replaced = eventually("a replacement worker", Duration::from_secs(60), || async {
        let workers = pods(&client, &ns, WORKERS).await;
        (workers.len() == 1 && name_of(&workers[0]) != deleted).then_some(workers)
    })
    .await;

    // A failed worker is deleted and replaced.
    let failed = name_of(&replaced[0]);
    let patch = json!({"metadata": {"annotations": {annotations::FAIL: "simulated node failure"}}});
    api.patch(&failed, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually(
        "the failed worker to be replaced",
        Duration::from_secs(60),
        || async {
            let workers = pods(&client, &ns, WORKERS).await;
            (workers.len() == 1
                && name_of(&workers[0]) != failed
                && api.get_opt(&failed).await.ok()?.is_none())
            .then_some(())
        },
    )
    .await;
    ready_cluster(&client, &ns, NAME).await;
    operator.stop().await;
}

#[tokio::test]
async fn scaling_from_zero_to_fifty_creates_exactly_fifty_pods() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "fifty").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    let cluster = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "wide"},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
            "workerGroupSpecs": [{"groupName": "wide", "replicas": 0, "minReplicas": 0, "maxReplicas": 100, "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}],
        },
    });
    rayclusters(&client, &ns)
        .patch(
            "wide",
            &PatchParams::apply("kuberay-wasm-tests"),
            &Patch::Apply(&cluster),
        )
        .await
        .unwrap();
    ready_cluster(&client, &ns, "wide").await;
    let creates_before = operator.metric(
        "kuberay_wasm_api_writes_total",
        &["verb=\"create\"", "result=\"written\""],
    );
    assert_eq!(creates_before, 1.0, "only the head Pod so far");

    let mut scaled = cluster.clone();
    scaled["spec"]["workerGroupSpecs"][0]["replicas"] = json!(50);
    rayclusters(&client, &ns)
        .patch(
            "wide",
            &PatchParams::apply("kuberay-wasm-tests"),
            &Patch::Apply(&scaled),
        )
        .await
        .unwrap();
    wait_for_workers(&client, &ns, "ray.io/cluster=wide,ray.io/group=wide", 50).await;
    ready_cluster(&client, &ns, "wide").await;
    // `ready` needs every Pod running, not yet Ready (as KubeRay's state does): the last worker's Ready
    // condition may reach the status one reconcile later.
    eventually(
        "all fifty workers to be counted ready",
        Duration::from_secs(30),
        || async {
            let cluster = serde_json::to_value(rayclusters(&client, &ns).get("wide").await.ok()?).ok()?;
            (cluster["status"]["readyWorkerReplicas"] == 50).then_some(())
        },
    )
    .await;
    // Every reconcile triggered by 50 Pod creations saw the Pods created before it: not one extra Pod.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        pods(&client, &ns, "ray.io/cluster=wide,ray.io/group=wide")
            .await
            .len(),
        50
    );
    let creates = operator.metric(
        "kuberay_wasm_api_writes_total",
        &["verb=\"create\"", "result=\"written\""],
    );
    assert_eq!(
        creates - creates_before,
        50.0,
        "Pods created for a scale from 0 to 50"
    );
    operator.stop().await;
}
