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
