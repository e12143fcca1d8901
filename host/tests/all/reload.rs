//! Plugins are swapped while the operator runs: a new plugin starts reconciling its kind, a broken update
//! leaves the running version in place, a removed plugin makes its objects reported as unreconciled, and
//! putting it back recovers them. A plugin is picked up when the directory reports the change, not at the
//! next poll.

use std::time::Duration;

use kube::api::{DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, discovery::ApiResource};
use serde_json::{Value, json};

use crate::support::{OperatorOptions, env, eventually, install_plugin, namespace, start_operator};

fn chaos_api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("testing.kuberay-wasm.io", "v1", "Chaos");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "chaos"),
    )
}

async fn create_ok(api: &Api<DynamicObject>, name: &str) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": name}, "spec": {"behaviour": "ok"},
    }))
    .unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

async fn observed(api: &Api<DynamicObject>, name: &str) {
    eventually(
        &format!("{name} to be reconciled"),
        Duration::from_secs(60),
        || async {
            let object = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            (object["status"]["observed"] == "ok").then_some(())
        },
    )
    .await;
}

fn reconciled_reason(object: &Value) -> Option<String> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Reconciled")
        .and_then(|c| c["reason"].as_str().map(str::to_string))
}

#[tokio::test]
async fn plugins_are_added_replaced_and_removed_while_the_operator_runs() {
    let env = env().await;
    let client = env.client().await.unwrap();
    crate::containment::install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "reload").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            reload: Some(Duration::from_millis(300)),
            ..OperatorOptions::default()
        },
    )
    .await;
    let api = chaos_api(&client, ns.name());
    create_ok(&api, "first").await;

    // Added: the chaos plugin starts reconciling Chaos objects without a restart.
    let plugin = install_plugin(&operator.plugins_dir, kuberay_plugin_artifacts::CHAOS);
    observed(&api, "first").await;

    // A broken update keeps the running version.
    std::fs::write(&plugin, b"this is not a component").unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    create_ok(&api, "second").await;
    observed(&api, "second").await;

    // Removed: objects of the kind are reported as unavailable.
    std::fs::remove_file(&plugin).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    create_ok(&api, "third").await;
    eventually("third to be reported", Duration::from_secs(30), || async {
        let object = serde_json::to_value(api.get("third").await.ok()?).ok()?;
        (reconciled_reason(&object).as_deref() == Some("PluginUnavailable")).then_some(())
    })
    .await;

    // Restored: the object is reconciled and its failure condition removed.
    install_plugin(&operator.plugins_dir, kuberay_plugin_artifacts::CHAOS);
    eventually("third to recover", Duration::from_secs(60), || async {
        let object = serde_json::to_value(api.get("third").await.ok()?).ok()?;
        (object["status"]["observed"] == "ok" && reconciled_reason(&object).is_none()).then_some(())
    })
    .await;
    operator.stop().await;
}

#[tokio::test]
async fn a_plugin_that_lands_is_loaded_on_the_filesystem_notification_not_the_poll() {
    let env = env().await;
    let client = env.client().await.unwrap();
    crate::containment::install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "reload-notify").await;
    // The poll would not come for an hour: only the directory's notification can load the plugin.
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            reload: Some(Duration::from_secs(3600)),
            ..OperatorOptions::default()
        },
    )
    .await;
    let api = chaos_api(&client, ns.name());
    create_ok(&api, "notified").await;
    install_plugin(&operator.plugins_dir, kuberay_plugin_artifacts::CHAOS);
    observed(&api, "notified").await;
    operator.stop().await;
}
