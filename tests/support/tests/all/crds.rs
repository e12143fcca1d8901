use kube::{
    Api,
    api::{DynamicObject, GroupVersionKind, PostParams},
    discovery::ApiResource,
};
use serde_json::json;

use crate::util::env;

fn raycluster_api(client: kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ray.io", "v1", "RayCluster");
    Api::namespaced_with(
        client,
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "rayclusters"),
    )
}

#[tokio::test]
async fn crds_install_with_server_side_apply_and_validate_objects() {
    let env = env().await;
    env.install_crds().await.unwrap();
    // Installing again is a no-op, not a conflict.
    env.install_crds().await.unwrap();
    let ns = env.namespace("crds").await.unwrap();
    let api = raycluster_api(env.client().await.unwrap(), ns.name());

    let valid: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "valid"},
        "spec": {
            "rayVersion": "2.60.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}},
            "workerGroupSpecs": [{"groupName": "small", "replicas": 1, "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray"}]}}}],
        },
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &valid).await.unwrap();
    // Schema defaults apply.
    assert_eq!(created.data["spec"]["workerGroupSpecs"][0]["numOfHosts"], 1);
    assert_eq!(
        created.data["spec"]["workerGroupSpecs"][0]["maxReplicas"],
        2147483647
    );

    let missing_head: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "no-head"},
        "spec": {"workerGroupSpecs": []},
    }))
    .unwrap();
    let err = api
        .create(&PostParams::default(), &missing_head)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 422 && e.message.contains("headGroupSpec")),
        "{err}"
    );

    let bad_replicas: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "bad-replicas"},
        "spec": {
            "headGroupSpec": {"template": {}},
            "workerGroupSpecs": [{"groupName": "g", "replicas": "three", "template": {}}],
        },
    }))
    .unwrap();
    let err = api
        .create(&PostParams::default(), &bad_replicas)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 422 && e.message.contains("replicas")),
        "{err}"
    );
}

#[tokio::test]
async fn gateway_api_crds_install_and_serve_gateways_and_httproutes() {
    let env = env().await;
    env.install_gateway_api_crds().await.unwrap();
    let ns = env.namespace("gateway-crds").await.unwrap();
    let client = env.client().await.unwrap();
    let api = |kind: &str, plural: &str| -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", kind);
        Api::namespaced_with(
            client.clone(),
            ns.name(),
            &ApiResource::from_gvk_with_plural(&gvk, plural),
        )
    };
    let gateway: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "g"},
        "spec": {"gatewayClassName": "example", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
    }))
    .unwrap();
    api("Gateway", "gateways")
        .create(&PostParams::default(), &gateway)
        .await
        .unwrap();
    let route: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "r"},
        "spec": {"parentRefs": [{"name": "g"}], "rules": [{"backendRefs": [
            {"name": "a-serve-svc", "port": 8000, "weight": 70},
            {"name": "b-serve-svc", "port": 8000, "weight": 30}]}]},
    }))
    .unwrap();
    let created = api("HTTPRoute", "httproutes")
        .create(&PostParams::default(), &route)
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["rules"][0]["backendRefs"][1]["weight"], 30);
}

#[tokio::test]
async fn a_crd_changed_on_the_server_is_applied_again() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams};
    let env = env().await;
    env.install_crds().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client().await.unwrap());
    let name = "rayclusters.ray.io";
    let wanted = crds.get(name).await.unwrap().spec.names.categories;
    let patch = json!({"spec": {"names": {"categories": ["changed-by-the-test"]}}});
    crds.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    // The server now holds something the file does not say, so installing applies the file again.
    env.install_crds().await.unwrap();
    assert_eq!(crds.get(name).await.unwrap().spec.names.categories, wanted);
}
