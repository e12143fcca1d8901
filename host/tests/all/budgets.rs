//! Budgets across reconciles and per reconcile's written bytes: a plugin that records 100 events per reconcile
//! and asks to be requeued every 200 ms, from several objects at once, loses its own events beyond its
//! budget (dropped, counted, logged once) while a RayCluster in the same operator reconciles, its events
//! and the host's failure events published; a reconcile that writes more bytes than its budget, or a
//! plugin that writes faster than its rate across reconciles, fails as `PluginLimitExceeded`.

use std::time::{Duration, Instant};

use k8s_openapi::api::{core::v1::ConfigMap, events::v1::Event};
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::{
    containment::{ChaosRun, chaos_api, chaos_run, install_chaos_crd_for_tests},
    identity::{create_chaos, refusal},
    support::{
        CHAOS_ENTRY, OperatorOptions, apply_manifest, env, eventually, logged, namespace, policy_with,
        ready_cluster, sample, start_operator,
    },
};

/// The chaos plugin's entry with a budget of its own (YAML of the `budget:` map).
fn chaos_with_budget(budget: &str) -> String {
    format!("{CHAOS_ENTRY}  budget: {budget}\n")
}

/// How many times events with `reason` were published in the namespace (an event recorded again is one
/// Event with a series count).
async fn published(events: &Api<Event>, reason: &str) -> i64 {
    let list = events.list(&ListParams::default()).await.unwrap();
    list.items
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| e.series.as_ref().map_or(1, |s| i64::from(s.count)).max(1))
        .sum()
}

#[tokio::test]
async fn an_event_storm_across_reconciles_is_dropped_for_its_plugin_alone() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "event-storm").await;
    let (burst, per_second) = (200, 5);
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            policy: Some(policy_with(&chaos_with_budget(&format!(
                "{{eventBurst: {burst}, eventsPerSecond: {per_second}}}"
            )))),
            ..OperatorOptions::default()
        },
    )
    .await;
    let started = Instant::now();
    let chaos = chaos_api(&client, ns.name());
    for i in 0..4 {
        create_chaos(&chaos, &format!("storm-{i}"), json!({"behaviour": "event-storm"})).await;
    }
    // The host's own report of a failing object is not behind the storm either.
    create_chaos(&chaos, "trap", json!({"behaviour": "trap"})).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;

    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    eventually(
        "the RayCluster's and the host's events",
        Duration::from_secs(60),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            let from = |controller: &str, reason: &str| {
                list.items.iter().any(|e| {
                    e.reporting_controller.as_deref() == Some(controller)
                        && e.reason.as_deref() == Some(reason)
                })
            };
            (from("raycluster-controller", "CreatedHeadPod") && from("chaos-controller", "PluginTrapped"))
                .then_some(())
        },
    )
    .await;
    // The storm goes on (every reconcile completes) while its excess is dropped, counted and logged.
    eventually(
        "the storm's drops to be counted",
        Duration::from_secs(60),
        || async {
            let dropped = operator.metric(
                "kuberay_wasm_events_dropped_total",
                &["plugin=\"chaos\"", "reason=\"rate-limited\""],
            );
            (dropped >= 1000.0).then_some(())
        },
    )
    .await;
    logged(&[
        "plugin=chaos",
        "reason=\"rate-limited\"",
        "dropping the plugin's events",
    ])
    .await;
    for i in 0..4 {
        let name = format!("storm-{i}");
        let object = serde_json::to_value(chaos.get(&name).await.unwrap()).unwrap();
        assert_eq!(object["status"]["observed"], "event-storm", "{name}");
    }
    assert_eq!(
        operator.metric("kuberay_wasm_events_dropped_total", &["plugin=\"raycluster\""]),
        0.0
    );
    operator.stop().await;
    // No more than the budget allowed reached the API server (a little slack for publishing order).
    let allowed = burst + per_second * started.elapsed().as_secs() as i64 + 20;
    let storms = published(&events, "Storm").await;
    assert!(
        storms <= allowed,
        "{storms} storm events published; the budget allowed {allowed}"
    );
}

#[tokio::test]
async fn a_reconcile_writing_more_bytes_than_its_budget_is_stopped() {
    let ChaosRun {
        client,
        ns,
        operator,
        chaos,
    } = chaos_run(
        "write-bytes",
        vec![kuberay_plugin_artifacts::CHAOS],
        crate::support::test_policy(),
    )
    .await;
    // Ten ConfigMaps of 900 KiB: each within the object limit, together more than the 8 MiB of a reconcile.
    create_chaos(&chaos, "ten", json!({"behaviour": "write-bytes", "count": 10})).await;
    let message = refusal(&chaos, "ten", "bytes written in one reconcile").await;
    assert!(message.contains("more than 8388608 bytes"), "{message}");
    assert!(
        operator.metric(
            "kuberay_wasm_plugin_limits_exceeded_total",
            &["plugin=\"chaos\"", "limit=\"write-bytes\""]
        ) >= 1.0
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    assert!(
        config_maps.get_opt("ten-mib-9").await.unwrap().is_none(),
        "the tenth was written"
    );
    operator.stop().await;
}

#[tokio::test]
async fn a_plugin_writing_faster_than_its_rate_across_reconciles_is_stopped() {
    let ChaosRun {
        client,
        ns,
        operator,
        chaos,
    } = chaos_run(
        "write-rate",
        vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::CHAOS,
        ],
        policy_with(&chaos_with_budget(
            "{writeBytesBurst: 2097152, writeBytesPerSecond: 1024}",
        )),
    )
    .await;
    // One ConfigMap of 900 KiB per reconcile, requeued every 200 ms: each reconcile is within its budget.
    create_chaos(&chaos, "steady", json!({"behaviour": "write-bytes", "count": 1})).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    let message = refusal(&chaos, "steady", "bytes per second").await;
    assert!(message.contains("across its reconciles"), "{message}");
    assert!(
        operator.metric(
            "kuberay_wasm_plugin_limits_exceeded_total",
            &["plugin=\"chaos\"", "limit=\"write-bytes-rate\""]
        ) >= 1.0
    );
    // Another plugin's writes are its own.
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    assert_eq!(
        operator.metric(
            "kuberay_wasm_plugin_limits_exceeded_total",
            &["plugin=\"raycluster\""]
        ),
        0.0
    );
    operator.stop().await;
}
