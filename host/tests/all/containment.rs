//! A plugin that loops, traps, runs out of memory, reaches outside its namespace, deletes what its object
//! does not own, or asks for what it was not granted is contained and reported, while a well-behaved
//! RayCluster in the same operator becomes ready.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use kube::{
    Api,
    api::{DynamicObject, GroupVersionKind, ListParams, PostParams},
    discovery::ApiResource,
};
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, ready_cluster, sample, start_operator,
};

/// A test namespace with the Chaos CRD installed and an operator running `plugins` under `policy`.
pub struct ChaosRun {
    pub client: kube::Client,
    pub ns: kuberay_testenv::TestNamespace,
    pub operator: crate::support::Operator,
    /// The namespace's Chaos objects.
    pub chaos: Api<DynamicObject>,
}

/// Sets up a [`ChaosRun`] in a namespace named after `prefix`.
pub async fn chaos_run(
    prefix: &str,
    plugins: Vec<&'static str>,
    policy: kuberay_wasm::policy::Policy,
) -> ChaosRun {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, prefix).await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins,
            policy: Some(policy),
            ..OperatorOptions::default()
        },
    )
    .await;
    let chaos = chaos_api(&client, ns.name());
    ChaosRun {
        client,
        ns,
        operator,
        chaos,
    }
}

pub fn chaos_api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("testing.kuberay-wasm.io", "v1", "Chaos");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "chaos"),
    )
}

pub async fn install_chaos_crd_for_tests(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/chaos/crd.yaml");
    let crd: CustomResourceDefinition =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = kube::api::PatchParams::apply("kuberay-wasm-tests").force();
    api.patch(
        "chaos.testing.kuberay-wasm.io",
        &params,
        &kube::api::Patch::Apply(&crd),
    )
    .await
    .unwrap();
    eventually("the Chaos CRD to be served", Duration::from_secs(30), || async {
        chaos_api(client, "default")
            .list(&ListParams::default())
            .await
            .ok()
            .map(|_| ())
    })
    .await;
}

fn reconciled_condition(object: &Value) -> Option<(String, String)> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Reconciled")
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

#[tokio::test]
async fn misbehaving_plugins_are_contained_and_reported_while_a_raycluster_becomes_ready() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "containment").await;
    let other = env.namespace("containment-other").await.unwrap();
    // Something the chaos plugin does not own, which it will try to delete.
    let bystanders: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let bystander: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "bystander"}})).unwrap();
    bystanders
        .create(&PostParams::default(), &bystander)
        .await
        .unwrap();

    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            timeout: Duration::from_secs(3),
            memory_mib: 64,
            ..OperatorOptions::default()
        },
    )
    .await;

    let chaos = chaos_api(&client, ns.name());
    // A plugin that asks to be requeued after Duration::MAX is clamped, not a crash.
    let forever: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": "requeue-max"}, "spec": {"behaviour": "requeue-max"},
    }))
    .unwrap();
    chaos.create(&PostParams::default(), &forever).await.unwrap();
    let cases = [
        ("loop", "", "PluginTimedOut"),
        ("trap", "", "PluginTrapped"),
        ("oom", "", "PluginMemoryExceeded"),
        ("other-namespace", other.name(), "ReconcileFailed"),
        ("delete-unowned", "bystander", "ReconcileFailed"),
        ("secret", "anything", "ReconcileFailed"),
        ("ungranted", "", "ReconcileFailed"),
        ("garbage", "", "ReconcileFailed"),
    ];
    for (behaviour, target, _) in cases {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
            "metadata": {"name": behaviour},
            "spec": {"behaviour": behaviour, "target": target},
        }))
        .unwrap();
        chaos.create(&PostParams::default(), &object).await.unwrap();
    }
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;

    // The well-behaved cluster is unaffected.
    ready_cluster(&client, &ns, "raycluster-kuberay").await;

    for (behaviour, _, reason) in cases {
        let (got, message) = eventually(
            &format!("the {behaviour} object to be reported"),
            Duration::from_secs(60),
            || async {
                let object = serde_json::to_value(chaos.get(behaviour).await.ok()?).ok()?;
                reconciled_condition(&object)
            },
        )
        .await;
        assert_eq!(got, reason, "{behaviour}: {message}");
        match behaviour {
            "other-namespace" => assert!(
                message.contains("outside the reconciled object's namespace"),
                "{message}"
            ),
            "delete-unowned" => assert!(message.contains("not owned by"), "{message}"),
            "secret" => assert!(message.contains("not granted get on v1/Secret"), "{message}"),
            "ungranted" => assert!(
                message.contains("not granted list on v1/ServiceAccount"),
                "{message}"
            ),
            "garbage" => assert!(message.contains("not JSON"), "{message}"),
            _ => {}
        }
    }
    // Nothing escaped: no object in the other namespace, the bystander still exists.
    let escaped: Api<ConfigMap> = Api::namespaced(client.clone(), other.name());
    assert!(escaped.get_opt("other-namespace-escape").await.unwrap().is_none());
    assert!(bystanders.get_opt("bystander").await.unwrap().is_some());

    // Each failure is also an Event on the object, a log line (not checked here) and a metric.
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), ns.name());
    let reasons: Vec<String> = eventually("events for the failures", Duration::from_secs(30), || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        let reasons: Vec<String> = list.items.iter().filter_map(|e| e.reason.clone()).collect();
        ["PluginTimedOut", "PluginTrapped", "PluginMemoryExceeded"]
            .iter()
            .all(|r| reasons.iter().any(|x| x == r))
            .then_some(reasons)
    })
    .await;
    assert!(reasons.iter().any(|r| r == "ReconcileFailed"), "{reasons:?}");
    for reason in [
        "PluginTimedOut",
        "PluginTrapped",
        "PluginMemoryExceeded",
        "ReconcileFailed",
    ] {
        assert!(
            operator.metric("kuberay_wasm_reconcile_errors_total", &[reason]) >= 1.0,
            "no metric for {reason}"
        );
    }
    // The trap is what controller-runtime calls a reconciler's panic, under its name.
    assert!(
        operator.metric(
            "controller_runtime_reconcile_panics_total",
            &["controller=\"chaos\""]
        ) >= 1.0,
        "no panic counted for the chaos controller"
    );
    for kind in ["v1/Secret", "v1/ServiceAccount", "v1/ConfigMap"] {
        assert!(
            operator.metric("kuberay_wasm_refused_calls_total", &[kind]) >= 1.0,
            "no refusal counted for {kind}"
        );
    }
    eventually(
        "the requeue-max object to be reconciled",
        Duration::from_secs(30),
        || async {
            let object = serde_json::to_value(chaos.get("requeue-max").await.ok()?).ok()?;
            (object["status"]["observed"] == "requeue-max").then_some(())
        },
    )
    .await;
    // And the cluster is still ready after all that.
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    operator.stop().await;
}
