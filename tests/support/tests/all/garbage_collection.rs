use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::{Api, api::DeleteParams};
use serde_json::json;

use crate::util::{create, env, eventually};

#[tokio::test]
async fn deleting_an_owner_garbage_collects_its_dependents() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("gc").await.unwrap();
    let owner: ConfigMap = create(&client, &ns, json!({"metadata": {"name": "owner"}})).await;
    let owner_ref = json!([{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner.metadata.uid, "controller": true, "blockOwnerDeletion": true,
    }]);
    let _: ConfigMap = create(
        &client,
        &ns,
        json!({"metadata": {"name": "dependent", "ownerReferences": owner_ref}}),
    )
    .await;
    let _: Pod = create(
        &client,
        &ns,
        json!({
            "metadata": {"name": "dependent-pod", "ownerReferences": owner_ref},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }),
    )
    .await;
    let _: ConfigMap = create(&client, &ns, json!({"metadata": {"name": "bystander"}})).await;

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    config_maps
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually("dependents to be collected", Duration::from_secs(60), || async {
        let cm_gone = config_maps.get_opt("dependent").await.ok()?.is_none();
        let pod_gone = pods.get_opt("dependent-pod").await.ok()?.is_none();
        (cm_gone && pod_gone).then_some(())
    })
    .await;
    assert!(
        config_maps.get_opt("bystander").await.unwrap().is_some(),
        "an unrelated object was deleted"
    );
}
