//! Suspending and resuming a cluster, and deleting it with its dependents garbage-collected.

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, pods, rayclusters, ready_cluster, sample,
    start_operator,
};

const NAME: &str = "raycluster-kuberay";
const ALL_PODS: &str = "ray.io/cluster=raycluster-kuberay";

fn condition(cluster: &Value, type_: &str) -> Option<String> {
    cluster["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

#[tokio::test]
async fn suspend_deletes_every_pod_and_resume_brings_them_back() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "suspend").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, NAME).await;
    let clusters = rayclusters(&client, &ns);

    clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    let suspended = eventually("the cluster to be suspended", Duration::from_secs(60), || async {
        let cluster = serde_json::to_value(clusters.get(NAME).await.ok()?).ok()?;
        (cluster["status"]["state"] == "suspended").then_some(cluster)
    })
    .await;
    assert_eq!(
        condition(&suspended, "RayClusterSuspended").as_deref(),
        Some("True")
    );
    assert_eq!(
        condition(&suspended, "RayClusterSuspending").as_deref(),
        Some("False")
    );
    assert!(
        pods(&client, &ns, ALL_PODS).await.is_empty(),
        "Pods survived the suspension"
    );
    // The head Service stays; only Pods go.
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    assert!(
        services
            .get_opt("raycluster-kuberay-head-svc")
            .await
            .unwrap()
            .is_some()
    );

    clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .unwrap();
    let resumed = ready_cluster(&client, &ns, NAME).await;
    assert_eq!(
        condition(&resumed, "RayClusterSuspended").as_deref(),
        Some("False")
    );
    assert_eq!(pods(&client, &ns, ALL_PODS).await.len(), 2);
    operator.stop().await;
}

#[tokio::test]
async fn deleting_a_cluster_garbage_collects_its_pods_and_services() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "delete").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, NAME).await;
    rayclusters(&client, &ns)
        .delete(NAME, &DeleteParams::background())
        .await
        .unwrap();
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    eventually(
        "Pods and Services to be collected",
        Duration::from_secs(60),
        || async {
            let pods_gone = pods(&client, &ns, ALL_PODS).await.is_empty();
            let service_gone = services
                .get_opt("raycluster-kuberay-head-svc")
                .await
                .ok()?
                .is_none();
            (pods_gone && service_gone).then_some(())
        },
    )
    .await;
    operator.stop().await;
}

#[tokio::test]
async fn an_invalid_spec_is_reported_on_the_object_until_it_is_fixed() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use kube::api::ListParams;

    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "invalid").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    let group = |min: i32, max: i32| {
        json!({"groupName": "g", "replicas": 1, "minReplicas": min, "maxReplicas": max, "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}})
    };
    let mut cluster = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "bad"},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
            "workerGroupSpecs": [group(3, 1)],
        },
    });
    let clusters = rayclusters(&client, &ns);
    let params = PatchParams::apply("kuberay-wasm-tests");
    clusters
        .patch("bad", &params, &Patch::Apply(&cluster))
        .await
        .unwrap();
    let reported = eventually(
        "the invalid spec to be reported",
        Duration::from_secs(60),
        || async {
            let object = serde_json::to_value(clusters.get("bad").await.ok()?).ok()?;
            let condition = object["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Reconciled")?
                .clone();
            Some(condition)
        },
    )
    .await;
    assert_eq!(reported["status"], "False");
    assert_eq!(reported["reason"], "InvalidObject");
    assert!(
        reported["message"]
            .as_str()
            .unwrap()
            .contains("greater than maxReplicas"),
        "{reported}"
    );
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), ns.name());
    eventually(
        "the InvalidRayClusterSpec event",
        Duration::from_secs(30),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| e.reason.as_deref() == Some("InvalidRayClusterSpec"))
                .then_some(())
        },
    )
    .await;
    assert!(
        pods(&client, &ns, "ray.io/cluster=bad").await.is_empty(),
        "an invalid cluster got Pods"
    );

    cluster["spec"]["workerGroupSpecs"] = json!([group(1, 5)]);
    clusters
        .patch("bad", &params, &Patch::Apply(&cluster))
        .await
        .unwrap();
    let fixed = ready_cluster(&client, &ns, "bad").await;
    let conditions = fixed["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        conditions.iter().all(|c| c["type"] != "Reconciled"),
        "the failure condition stayed: {conditions:?}"
    );
    operator.stop().await;
}
