//! A write the API server's admission refuses with a 403 (here a ResourceQuota allowing no Pods) is not
//! the operator's RBAC: the RayCluster's condition and Event carry the API server's message alone, as
//! KubeRay's do, and nothing is counted as a plugin refusal.

use std::time::Duration;

use k8s_openapi::api::{core::v1::ResourceQuota, events::v1::Event};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, rayclusters, sample, start_operator,
};

/// A quota of no Pods, with the usage the quota controller (not run by the test environment) would record.
async fn no_pods(client: &kube::Client, namespace: &str) {
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), namespace);
    let quota: ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}}))
            .unwrap();
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    let status = json!({"status": {"hard": {"pods": "0"}, "used": {"pods": "0"}}});
    quotas
        .patch_status("no-pods", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

#[tokio::test]
async fn an_admission_denial_shows_the_api_servers_message_not_a_credentials_error() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "admission").await;
    no_pods(&client, ns.name()).await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;

    let clusters = rayclusters(&client, &ns);
    let messages = eventually(
        "the quota's refusal on the RayCluster",
        Duration::from_secs(60),
        || async {
            let cluster = serde_json::to_value(clusters.get("raycluster-kuberay").await.ok()?).ok()?;
            let messages: Vec<String> = cluster
                .pointer("/status/conditions")?
                .as_array()?
                .iter()
                .filter_map(|c| c.get("message").and_then(Value::as_str).map(String::from))
                .collect();
            messages
                .iter()
                .any(|m| m.contains("exceeded quota: no-pods"))
                .then_some(messages)
        },
    )
    .await;
    for message in &messages {
        assert!(!message.contains("credentials were refused"), "{message}");
    }
    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    let note = eventually(
        "the FailedToCreateHeadPod event",
        Duration::from_secs(30),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .find(|e| e.reason.as_deref() == Some("FailedToCreateHeadPod"))
                .and_then(|e| e.note.clone())
        },
    )
    .await;
    assert!(note.contains("exceeded quota: no-pods"), "{note}");
    assert!(!note.contains("credentials were refused"), "{note}");
    // Neither a plugin refusal nor the operator's RBAC.
    assert_eq!(operator.metric("kuberay_wasm_refused_calls_total", &[]), 0.0);
    operator.stop().await;
}

/// KubeRay's RayJob has no `status.conditions`: a failed reconcile of one is reported by the Warning event
/// and the log, and the host stops trying to write its `Reconciled` condition after the API server's first
/// refusal, instead of warning on every retry.
#[tokio::test]
async fn a_kind_without_conditions_is_reported_by_events_and_not_written_again() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "conditionless").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![kuberay_plugin_artifacts::RAYJOB],
            ..OperatorOptions::default()
        },
    )
    .await;
    // It selects a cluster that does not exist: its reconciles fail until one does.
    apply_manifest(&client, &ns, &sample("ray-job.use-existing-raycluster.yaml")).await;
    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    let failures = || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        let failed = list
            .items
            .iter()
            .find(|e| e.reason.as_deref() == Some("ReconcileFailed"))?;
        Some(failed.series.as_ref().map_or(1, |s| s.count))
    };
    eventually("the ReconcileFailed event", Duration::from_secs(60), failures).await;
    eventually("a retried failure", Duration::from_secs(60), || async {
        (failures().await? > 1).then_some(())
    })
    .await;
    let object = format!("namespace={}", ns.name());
    let failed_writes = crate::support::log_lines(&["could not write the Reconciled condition", &object]);
    assert!(failed_writes.is_empty(), "{failed_writes:?}");
    operator.stop().await;
}
