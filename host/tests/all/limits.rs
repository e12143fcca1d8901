//! Limits that hold per call and per plugin: a plugin that floods the host with calls, writes or events,
//! or hands it oversized strings, is stopped and reported as `PluginLimitExceeded`; its log flood is
//! dropped and counted; a plugin whose reconciles all hang cannot take every reconcile permit; and a plugin
//! whose file is removed after a failed update really stops. Meanwhile a well-behaved RayCluster in the same
//! operator becomes ready.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use kube::{
    Api,
    api::{DynamicObject, ListParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    containment::{chaos_api, install_chaos_crd_for_tests},
    support::{
        OperatorOptions, apply_manifest, env, eventually, install_plugin, logged, namespace, ready_cluster,
        sample, start_operator,
    },
};

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

async fn create_chaos(api: &Api<DynamicObject>, name: &str, behaviour: &str) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": name}, "spec": {"behaviour": behaviour},
    }))
    .unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

async fn observed(api: &Api<DynamicObject>, name: &str, value: &str) {
    eventually(
        &format!("{name} to report {value}"),
        Duration::from_secs(60),
        || async {
            let object = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            (object["status"]["observed"] == value).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn host_call_floods_and_oversized_inputs_stop_the_plugin_while_a_raycluster_becomes_ready() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "limits").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            timeout: Duration::from_secs(20),
            memory_mib: 64,
            ..OperatorOptions::default()
        },
    )
    .await;
    let chaos = chaos_api(&client, ns.name());
    let cases = [
        ("flood-reads", "more than 5000 host calls in one reconcile"),
        ("flood-writes", "more than 1000 writes in one reconcile"),
        ("flood-events", "more than 100 events in one reconcile"),
        ("oversized-object", "object of 2097"),
        ("oversized-note", "event note of 65536 bytes"),
        ("oversized-selector", "label selector of"),
    ];
    for (behaviour, _) in cases {
        create_chaos(&chaos, behaviour, behaviour).await;
    }
    create_chaos(&chaos, "flood-log", "flood-log").await;
    create_chaos(&chaos, "forge-log", "forge-log").await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;

    for (behaviour, expected) in cases {
        let (reason, message) = eventually(
            &format!("{behaviour} to be reported"),
            Duration::from_secs(60),
            || async {
                let object = serde_json::to_value(chaos.get(behaviour).await.ok()?).ok()?;
                reconciled_condition(&object)
            },
        )
        .await;
        assert_eq!(reason, "PluginLimitExceeded", "{behaviour}: {message}");
        assert!(message.contains(expected), "{behaviour}: {message}");
        // The breach is in the log, with the object and the limit's message.
        let object = format!("object={}/{behaviour}", ns.name());
        logged(&["plugin=chaos", &object, expected]).await;
    }
    // The reason is also an Event and a bounded metric (the limit's name, never the plugin's text).
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), ns.name());
    eventually("PluginLimitExceeded events", Duration::from_secs(30), || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("PluginLimitExceeded"))
            .then_some(())
    })
    .await;
    for limit in ["host-calls", "writes", "events", "input-size"] {
        assert!(
            operator.metric(
                "kuberay_wasm_plugin_limits_exceeded_total",
                &["chaos", &format!("limit=\"{limit}\"")]
            ) >= 1.0,
            "no metric for {limit}"
        );
    }
    // The victims: at most one ConfigMap from the write flood, none of 2 MiB, at most 100 flood events per
    // attempt.
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    assert!(
        config_maps
            .get_opt("oversized-object-flood")
            .await
            .unwrap()
            .is_none()
    );
    let flooded = events.list(&ListParams::default()).await.unwrap();
    let floods = flooded
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Flood"))
        .map(|e| e.count.unwrap_or(1).max(1))
        .sum::<i32>();
    assert!(floods <= 100 * 8, "{floods} flood events");

    // A log flood finishes, its excess dropped and counted; forged lines are escaped (see log_guard.rs).
    observed(&chaos, "flood-log", "flood-log").await;
    observed(&chaos, "forge-log", "forge-log").await;
    assert!(
        operator.metric("kuberay_wasm_plugin_log_lines_dropped_total", &["chaos"]) >= 90_000.0,
        "the log flood was not dropped"
    );
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_plugin_whose_reconciles_hang_cannot_take_every_permit() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "limits-permits").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            // Every chaos reconcile holds its permit for the whole timeout.
            timeout: Duration::from_secs(60),
            memory_mib: 64,
            concurrency: Some(2),
            ..OperatorOptions::default()
        },
    )
    .await;
    let chaos = chaos_api(&client, ns.name());
    for i in 0..6 {
        create_chaos(&chaos, &format!("hang-{i}"), "loop").await;
    }
    // Let the hanging reconciles take what they can.
    tokio::time::sleep(Duration::from_secs(2)).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    // With both permits held for 60 s at a time by the chaos plugin, the first reconcile alone would wait
    // about a minute.
    let clusters = crate::support::rayclusters(&client, &ns);
    eventually(
        "the RayCluster to be reconciled while the chaos plugin hangs",
        Duration::from_secs(20),
        || async {
            let cluster = serde_json::to_value(clusters.get("raycluster-kuberay").await.ok()?).ok()?;
            let status = cluster.get("status")?.as_object()?;
            (!status.is_empty()).then_some(())
        },
    )
    .await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    operator.stop().await;
}

#[tokio::test]
async fn a_plugin_removed_after_a_failed_update_stops() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "limits-removed").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            reload: Some(Duration::from_millis(300)),
            ..OperatorOptions::default()
        },
    )
    .await;
    let chaos = chaos_api(&client, ns.name());
    create_chaos(&chaos, "first", "ok").await;
    observed(&chaos, "first", "ok").await;

    // An update that cannot be used (another plugin, under chaos's file name: the policy refuses it): the
    // running version stays.
    let chaos_file = operator.plugins_dir.join("chaos.wasm");
    std::fs::copy(kuberay_plugin_artifacts::RAYCLUSTER, &chaos_file).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    create_chaos(&chaos, "second", "ok").await;
    observed(&chaos, "second", "ok").await;

    // Removed: the version that kept running stops too.
    std::fs::remove_file(&chaos_file).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    create_chaos(&chaos, "third", "ok").await;
    let (reason, message) = eventually("third to be reported", Duration::from_secs(30), || async {
        let object = serde_json::to_value(chaos.get("third").await.ok()?).ok()?;
        reconciled_condition(&object)
    })
    .await;
    assert_eq!(reason, "PluginUnavailable", "{message}");
    let third = serde_json::to_value(chaos.get("third").await.unwrap()).unwrap();
    assert_ne!(
        third["status"]["observed"], "ok",
        "the removed plugin still reconciles"
    );

    // Putting it back recovers.
    install_plugin(&operator.plugins_dir, kuberay_plugin_artifacts::CHAOS);
    observed(&chaos, "third", "ok").await;
    operator.stop().await;
}
