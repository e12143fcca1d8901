//! The chart's operator, in its Pod with only the chart's rights, serves a plugin from the test environment's
//! registry the way an administrator sets it up: `disablePlugins` frees the RayCronJob kind, the registry's CA
//! comes from a ConfigMap (`pluginResources.registryCA`), the credentials from a pull Secret in the release
//! namespace, and a `ReconcilePlugin` names the artifact by digest at the registry's address on the pod
//! network. The resource becomes Ready with that digest, and the Event about it lands in `default`, which the
//! operator may write to only through the chart's Events Role (it watches one other namespace).
//!
//! The resource is cluster-scoped and named after the plugin: this test owns the name `raycronjob` (the host's
//! tests use `raycluster`).

use std::time::Duration;

use k8s_openapi::{
    ByteString,
    api::{
        core::v1::{ConfigMap, Secret},
        events::v1::Event,
    },
};
use kube::{
    Api,
    api::{DeleteParams, DynamicObject, ListParams, ObjectMeta, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use kuberay_deploy_tests::rules::EVENTS_OF_CLUSTER_SCOPED;
use kuberay_testenv::TestEnv;
use serde_json::json;

use crate::{
    incluster::{Operator, PLUGIN_LABEL, eventually, ready_pods},
    tools,
};

/// The plugin's name, its policy entry's and the resource's.
const NAME: &str = "raycronjob";

#[tokio::test]
async fn the_charts_operator_serves_a_plugin_from_the_registry_with_the_charts_rights() {
    let tools = tools();
    let env: &TestEnv = TestEnv::shared().await.unwrap();
    let client = env.client().await.unwrap();
    let registry = env.registry().unwrap().clone();
    let pod_host_port = registry
        .pod_host_port
        .clone()
        .expect("the registry's address on the pod network");
    let release_ns = env.namespace("chart-plugins").await.unwrap();
    let work = env.namespace("chart-plugins-work").await.unwrap();

    let wasm = std::fs::read(kuberay_plugin_artifacts::RAYCRONJOB).unwrap();
    let repository = format!("{}/raycronjob", release_ns.name());
    let digest = registry.push_wasm(&repository, "v1", &wasm).await.unwrap();
    let artifact = format!("{pod_host_port}/{repository}@{digest}");

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), release_ns.name());
    let ca: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "registry-ca"}, "data": {"ca.crt": registry.ca_pem().unwrap()},
    }))
    .unwrap();
    config_maps.create(&PostParams::default(), &ca).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), release_ns.name());
    let pull_secret = Secret {
        metadata: ObjectMeta {
            name: Some("regcred".into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(
            [(
                ".dockerconfigjson".to_string(),
                ByteString(registry.docker_config_json(&pod_host_port).into_bytes()),
            )]
            .into(),
        ),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &pull_secret)
        .await
        .unwrap();

    let operator = Operator::install(
        &tools,
        env,
        release_ns.name(),
        work.name(),
        &[
            "--set",
            "replicas=1",
            "--set",
            "disablePlugins={raycronjob}",
            "--set",
            "pluginResources.registryCA.configMap=registry-ca",
        ],
    );
    ready_pods(&client, release_ns.name(), 1).await;

    let gvk = GroupVersionKind::gvk("plugins.kuberay-wasm.io", "v1alpha1", "ReconcilePlugin");
    let plugins: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk));
    // One left by an interrupted run would hold the name.
    let _ = plugins.delete(NAME, &DeleteParams::default()).await;
    eventually(
        "an earlier raycronjob resource gone",
        Duration::from_secs(30),
        || async { plugins.get_opt(NAME).await.ok()?.is_none().then_some(()) },
    )
    .await;
    // The grant of the built-in policy's raycronjob entry.
    let resource: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "plugins.kuberay-wasm.io/v1alpha1", "kind": "ReconcilePlugin",
        "metadata": {"name": NAME, "labels": {PLUGIN_LABEL: release_ns.name()}},
        "spec": {
            "artifact": artifact, "reconciles": "ray.io/v1/RayCronJob", "pullSecret": "regcred",
            "grant": {
                "owns": ["ray.io/v1/RayJob"],
                "verbs": {"ray.io/v1/RayCronJob": ["apply-status", "record-event"], "ray.io/v1/RayJob": ["create"]},
                "rayHeads": false,
            },
        },
    }))
    .unwrap();
    let created = plugins.create(&PostParams::default(), &resource).await.unwrap();
    let uid = created.metadata.uid.clone().unwrap();

    // Pulled with the Secret's credentials over TLS trusting the mounted CA, compiled (a debug build, on
    // two cores shared with other tests), its status patched.
    let status = eventually(
        "the ReconcilePlugin Ready with the pushed digest",
        Duration::from_secs(240),
        || async {
            let status = plugins.get(NAME).await.ok()?.data["status"].clone();
            let ready = status["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            (ready && status["digest"] == digest.as_str()).then_some(status)
        },
    )
    .await;
    assert!(status["lastError"].is_null(), "{status}");

    let events: Api<Event> = Api::namespaced(client.clone(), EVENTS_OF_CLUSTER_SCOPED);
    let loaded = eventually(
        "a PluginLoaded Event about it in default",
        Duration::from_secs(60),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.regarding.as_ref().and_then(|r| r.uid.as_deref()) == Some(uid.as_str())
                    && e.reason.as_deref() == Some("PluginLoaded")
            })
        },
    )
    .await;
    assert!(
        loaded.note.as_deref().unwrap_or_default().contains(&digest),
        "{loaded:?}"
    );

    plugins.delete(NAME, &DeleteParams::default()).await.unwrap();
    operator.uninstall();
    work.delete(&client).await.unwrap();
    release_ns.delete(&client).await.unwrap();
}
