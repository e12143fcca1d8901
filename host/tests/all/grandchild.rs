//! A plugin may label an object its object controls through one it owns, as KubeRay's RayService sets
//! `ray.io/serve` on its RayClusters' head Pods, and do nothing else to it: the label-only apply works and
//! adds no owner reference, its field manager owns only that label; the same apply to a Pod outside its
//! tree, one carrying anything besides labels, and one setting a label the policy does not list are
//! refused (on the object, in the log and in `refused_calls_total`), and the Pods stay as they were.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, Patch, PatchParams};
use kuberay_testenv::fixtures::small_cluster;
use serde_json::{Value, json};

use crate::{
    containment::{chaos_api, install_chaos_crd_for_tests},
    identity::{create_chaos, refusal},
    support::{
        OperatorOptions, env, eventually, logged, namespace, policy_with, rayclusters, ready_cluster,
        start_operator,
    },
};

/// The chaos plugin as a RayService would be granted: it owns RayClusters, may apply Pods, and may set
/// `ray.io/serve` on the Pods its RayClusters control.
const LABELLING_CHAOS_ENTRY: &str = "
- name: chaos
  file: chaos.wasm
  reconciles: testing.kuberay-wasm.io/v1/Chaos
  owns: [v1/ConfigMap, ray.io/v1/RayCluster]
  verbs:
    testing.kuberay-wasm.io/v1/Chaos: [get, apply-status, record-event]
    v1/ConfigMap: [get, apply]
    ray.io/v1/RayCluster: [get, apply]
    v1/Pod: [apply]
  rayHeads: false
  grandchildLabels: [ray.io/serve]
";

fn label_head(labels: Value, extra: Value) -> Value {
    json!({"behaviour": "label-head", "cluster": small_cluster(), "labels": labels, "object": extra})
}

async fn head_pod(client: &kube::Client, ns: &str, cluster: &str) -> Pod {
    let name = ready_cluster_head(client, ns, cluster).await;
    Api::<Pod>::namespaced(client.clone(), ns)
        .get(&name)
        .await
        .unwrap()
}

async fn ready_cluster_head(client: &kube::Client, ns: &str, cluster: &str) -> String {
    let api = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        ns,
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("ray.io", "v1", "RayCluster"),
            "rayclusters",
        ),
    );
    eventually(
        &format!("the head Pod of {cluster}"),
        Duration::from_secs(90),
        || async {
            let cluster = serde_json::to_value(api.get(cluster).await.ok()?).ok()?;
            let name = cluster.pointer("/status/head/podName")?.as_str()?;
            (!name.is_empty()).then(|| name.to_string())
        },
    )
    .await
}

fn label(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.labels.as_ref()?.get(key).cloned()
}

/// The fields the plugin's field manager owns on `pod`, as managedFields lists them.
fn owned_by_plugin(pod: &Pod) -> Vec<Value> {
    pod.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.manager.as_deref() == Some("kuberay-wasm/chaos"))
        .map(|m| json!({"operation": m.operation, "fields": m.fields_v1.as_ref().map(|f| f.0.clone())}))
        .collect()
}

#[tokio::test]
async fn a_plugin_labels_its_clusters_head_pods_and_nothing_else() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "grandchild").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            policy: Some(policy_with(LABELLING_CHAOS_ENTRY)),
            ..OperatorOptions::default()
        },
    )
    .await;

    // The victim: a user's RayCluster, whose head Pod is outside every Chaos object's tree.
    let victim = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "victim"}, "spec": small_cluster()});
    rayclusters(&client, &ns)
        .patch(
            "victim",
            &PatchParams::apply("kuberay-wasm-tests"),
            &Patch::Apply(&victim),
        )
        .await
        .unwrap();
    ready_cluster(&client, &ns, "victim").await;
    let victim_head = ready_cluster_head(&client, ns.name(), "victim").await;

    let chaos = chaos_api(&client, ns.name());
    let serve = json!({"ray.io/serve": "true"});
    create_chaos(&chaos, "serve", label_head(serve.clone(), json!({}))).await;
    let mut outside = label_head(serve.clone(), json!({}));
    outside["target"] = json!(victim_head);
    create_chaos(&chaos, "outside", outside).await;
    let annotated = label_head(
        serve.clone(),
        json!({"metadata": {"annotations": {"stolen": "yes"}}}),
    );
    create_chaos(&chaos, "annotated", annotated).await;
    let respec = label_head(serve.clone(), json!({"spec": {"activeDeadlineSeconds": 1}}));
    create_chaos(&chaos, "respec", respec).await;
    let reselect = label_head(json!({"ray.io/cluster": "victim"}), json!({}));
    create_chaos(&chaos, "reselect", reselect).await;

    // The label-only apply on its own cluster's head Pod works, adds no owner reference, and the plugin's
    // field manager owns only that label.
    let cluster = ready_cluster(&client, &ns, "serve-ray").await;
    let cluster_uid = cluster["metadata"]["uid"].as_str().unwrap().to_string();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let head_name = ready_cluster_head(&client, ns.name(), "serve-ray").await;
    let head = eventually(
        "the serve label on the head Pod",
        Duration::from_secs(60),
        || async {
            let pod = pods.get(&head_name).await.ok()?;
            (label(&pod, "ray.io/serve").as_deref() == Some("true")).then_some(pod)
        },
    )
    .await;
    let owners = head.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners[0].uid, cluster_uid);
    assert_eq!(owners[0].kind, "RayCluster");
    assert_eq!(label(&head, "ray.io/cluster").as_deref(), Some("serve-ray"));
    let owned = owned_by_plugin(&head);
    assert_eq!(
        owned,
        vec![json!({"operation": "Apply", "fields": {"f:metadata": {"f:labels": {"f:ray.io/serve": {}}}}})],
        "the plugin's field manager owns exactly the label"
    );
    let observed = serde_json::to_value(chaos.get("serve").await.unwrap()).unwrap();
    assert_eq!(observed["status"]["observed"], format!("labelled {head_name}"));

    // Flipping the label: the plugin's apply takes it to false.
    chaos
        .patch(
            "serve",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"labels": {"ray.io/serve": "false"}}})),
        )
        .await
        .unwrap();
    eventually("the serve label to be false", Duration::from_secs(60), || async {
        let pod = pods.get(&head_name).await.ok()?;
        (label(&pod, "ray.io/serve").as_deref() == Some("false")).then_some(())
    })
    .await;

    // Outside its tree, with anything besides labels, or with a label the policy does not list: refused.
    let message = refusal(&chaos, "outside", &format!("Pod {victim_head}")).await;
    assert!(
        message.contains("plugins do not adopt") || message.contains("controlled by another object"),
        "{message}"
    );
    refusal(&chaos, "annotated", "may not set metadata.annotations").await;
    refusal(&chaos, "respec", "may not set spec").await;
    refusal(
        &chaos,
        "reselect",
        "label ray.io/cluster is not one the policy lets",
    )
    .await;
    let object = format!("object={}/annotated", ns.name());
    logged(&[
        "refused",
        "plugin=chaos",
        &object,
        "may not set metadata.annotations",
    ])
    .await;
    let counted = operator.metric(
        "kuberay_wasm_refused_calls_total",
        &["verb=\"apply\"", "kind=\"v1/Pod\""],
    );
    assert!(counted >= 4.0, "{counted} refused Pod applies counted");

    // The Pods are untouched.
    let victim_pod = pods.get(&victim_head).await.unwrap();
    assert_eq!(label(&victim_pod, "ray.io/serve"), None, "{victim_pod:?}");
    assert!(owned_by_plugin(&victim_pod).is_empty());
    for (cluster, what) in [
        ("annotated-ray", "annotations"),
        ("respec-ray", "spec"),
        ("reselect-ray", "selector label"),
    ] {
        let pod = head_pod(&client, ns.name(), cluster).await;
        assert!(owned_by_plugin(&pod).is_empty(), "{what}: {pod:?}");
        assert_eq!(label(&pod, "ray.io/serve"), None, "{what}");
        assert_eq!(label(&pod, "ray.io/cluster").as_deref(), Some(cluster), "{what}");
        let annotations = pod.metadata.annotations.clone().unwrap_or_default();
        assert!(!annotations.contains_key("stolen"), "{what}");
        assert_eq!(
            pod.spec.as_ref().and_then(|s| s.active_deadline_seconds),
            None,
            "{what}"
        );
    }
    ready_cluster(&client, &ns, "victim").await;
    operator.stop().await;
}

/// What the host relies on to never create the object of a label-only apply: the API server refuses a
/// server-side apply whose uid matches no existing object instead of creating it.
#[tokio::test]
async fn an_apply_with_the_uid_of_a_gone_object_creates_nothing() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "grandchild-uid").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let intent = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "gone", "uid": "0b5e4c2e-1111-4a4a-9c9c-000000000000", "labels": {"ray.io/serve": "true"}}});
    let refused = config_maps
        .patch(
            "gone",
            &PatchParams::apply("kuberay-wasm/chaos").force(),
            &Patch::Apply(&intent),
        )
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(e)) if e.code == 409),
        "{refused:?}"
    );
    assert!(config_maps.get_opt("gone").await.unwrap().is_none());
}
