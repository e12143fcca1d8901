//! The WIT `config` interface (kuberay:plugin@0.1.1): the operator's `--cluster-domain`, KubeRay's
//! environment toggles and what KubeRay's Configuration file adds to Pods reach the built-in plugins, which write the domain into the head address workers dial
//! and name the head Pod and leave out the GCS wait as the toggles say; and a plugin built against 0.1.0,
//! which imports no `config`, still loads and reconciles on this host.

use std::time::Duration;

use kube::api::PostParams;
use kuberay_wasm::kuberay_env::KubeRayEnv;
use serde_json::json;

use crate::{
    containment::{chaos_api, install_chaos_crd_for_tests},
    support::{
        OperatorOptions, apply, env, eventually, install_plugin_as, namespace, pods, rayclusters,
        start_operator,
    },
};

/// The chaos test plugin as built against kuberay:plugin@0.1.0, before the `config` interface existed.
const CHAOS_WIT_0_1_0: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/plugins/chaos-wit-0.1.0.wasm"
);

#[tokio::test]
async fn the_cluster_domain_reaches_the_plugins_and_a_plugin_built_for_0_1_0_still_loads() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "config").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            reload: Some(Duration::from_millis(500)),
            cluster_domain: Some("corp.example".into()),
            kuberay_env: Some(
                KubeRayEnv::from_lookup(|name| match name {
                    "ENABLE_DETERMINISTIC_HEAD_POD_NAME" => Some("true".into()),
                    "ENABLE_INIT_CONTAINER_INJECTION" => Some("false".into()),
                    _ => None,
                })
                .unwrap(),
            ),
            pod_defaults: Some(json!({"defaultPodLabels": {"team": "platform"}})),
            ..OperatorOptions::default()
        },
    )
    .await;
    install_plugin_as(&operator.plugins_dir, CHAOS_WIT_0_1_0, "chaos.wasm");

    let clusters = rayclusters(&client, &ns);
    apply(
        &clusters,
        &json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "dns"},
            "spec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                    {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
                "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                    "rayStartParams": {}, "template": {"spec": {"containers": [
                        {"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}],
            },
        }),
    )
    .await;
    let worker = eventually("the worker Pod", Duration::from_secs(120), || async {
        pods(&client, &ns, "ray.io/cluster=dns,ray.io/node-type=worker")
            .await
            .into_iter()
            .next()
    })
    .await;
    let worker = serde_json::to_string(&worker).unwrap();
    assert!(
        worker.contains("dns-head-svc.") && worker.contains(".svc.corp.example:6379"),
        "{worker}"
    );
    assert!(!worker.contains("svc.cluster.local"), "{worker}");
    assert!(!worker.contains("wait-gcs-ready"), "{worker}");
    // KubeRay's Configuration file's defaults reach the plugin too.
    assert!(worker.contains(r#""team":"platform""#), "{worker}");
    let head = pods(&client, &ns, "ray.io/cluster=dns,ray.io/node-type=head").await;
    let names: Vec<_> = head.iter().filter_map(|p| p.metadata.name.as_deref()).collect();
    assert_eq!(names, ["dns-head"]);

    let chaos = chaos_api(&client, ns.name());
    let object = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": "old"}, "spec": {"behaviour": "ok"},
    }))
    .unwrap();
    chaos.create(&PostParams::default(), &object).await.unwrap();
    eventually(
        "the 0.1.0 plugin to reconcile",
        Duration::from_secs(120),
        || async {
            let object = serde_json::to_value(chaos.get("old").await.ok()?).ok()?;
            (object["status"]["observed"] == "ok").then_some(())
        },
    )
    .await;
    operator.stop().await;
}
