//! A plugin in another language: the Python example plugin (`plugins/python/rayconnection`, a component built
//! with componentize-py by `make python-plugin`) reconciles its own kind, RayConnection, next to the built-in
//! plugins, under the policy entry it documents (`policy-entry.yaml`): it reports a RayCluster that does not
//! exist yet, writes the ConfigMap a client app mounts once it does (owned by the RayConnection through the
//! controller reference the host adds), follows a change of cluster, and the ConfigMap goes with its
//! RayConnection.

use std::{path::Path, time::Duration};

use k8s_openapi::api::{core::v1::ConfigMap, events::v1::Event};
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams},
};
use kuberay_testenv::fixtures::small_cluster;
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply, env, eventually, namespace, policy_with, rayclusters, start_operator,
};

/// The plugin's entry, as an administrator appends it to the operator's policy.
const POLICY_ENTRY: &str = include_str!("../../../plugins/python/rayconnection/policy-entry.yaml");

/// The plugin's sources: the component must be newer than each.
const SOURCES: &[&str] = &[
    "plugins/python/rayconnection/app.py",
    "plugins/python/rayconnection/connection.py",
    "wit/plugin.wit",
];

fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The component `make python-plugin` builds. Missing or older than its sources, the test fails rather than
/// skips or tests an old build.
fn python_component() -> &'static str {
    let path = repo_root().join(".local/python-plugins/rayconnection.wasm");
    let built = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| {
            panic!(
                "the Python plugin {} is missing ({e}): run `make python-plugin`",
                path.display()
            )
        });
    for source in SOURCES {
        let changed = std::fs::metadata(repo_root().join(source))
            .and_then(|m| m.modified())
            .unwrap();
        assert!(
            changed <= built,
            "the Python plugin {} is older than {source}: run `make python-plugin`",
            path.display()
        );
    }
    // The operator's options take the paths of its plugins for the whole test.
    Box::leak(path.to_string_lossy().into_owned().into_boxed_str())
}

fn rayconnections(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("examples.kuberay-wasm.io", "v1alpha1", "RayConnection");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "rayconnections"),
    )
}

/// The RayConnection CRD, from next to the plugin, once served.
async fn install_crd(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let path = repo_root().join("plugins/python/rayconnection/crd.yaml");
    let crd: CustomResourceDefinition =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        "rayconnections.examples.kuberay-wasm.io",
        &PatchParams::apply("kuberay-wasm-tests").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap();
    eventually(
        "the RayConnection CRD to be served",
        Duration::from_secs(30),
        || async {
            rayconnections(client, "default")
                .list(&ListParams::default())
                .await
                .ok()
                .map(|_| ())
        },
    )
    .await;
}

/// The RayConnection's status once its Ready condition has `status` and `reason` for `generation`.
async fn ready_condition(
    api: &Api<DynamicObject>,
    name: &str,
    status: &str,
    reason: &str,
    generation: i64,
    timeout: Duration,
) -> Value {
    eventually(
        &format!("RayConnection {name} to be Ready={status} ({reason}) at generation {generation}"),
        timeout,
        || async {
            let object = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            let found = object.pointer("/status/conditions")?.as_array()?.iter().any(|c| {
                c["type"] == "Ready"
                    && c["status"] == status
                    && c["reason"] == reason
                    && c["observedGeneration"] == generation
            });
            (found && object.pointer("/status/observedGeneration") == Some(&json!(generation)))
                .then(|| object["status"].clone())
        },
    )
    .await
}

fn condition_message(status: &Value) -> String {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// An event about `regarding` with `reason` whose note contains `needle`.
async fn event(events: &Api<Event>, regarding: &str, reason: &str, needle: &str) -> Event {
    eventually(
        &format!("a {reason} event about {regarding} with {needle:?}"),
        Duration::from_secs(30),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
                    && e.note.as_deref().is_some_and(|n| n.contains(needle))
            })
        },
    )
    .await
}

/// The RayCluster `name` with the head container ports of `ports` (KubeRay's names).
fn raycluster(name: &str, ports: Value) -> Value {
    let mut spec = small_cluster();
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = ports;
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn the_python_plugin_connects_apps_to_a_raycluster_through_an_owned_configmap() {
    let component = python_component();
    let env = env().await;
    let client = env.client().await.unwrap();
    install_crd(&client).await;
    let ns = namespace(env, "python-plugin").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::RAYJOB,
                kuberay_plugin_artifacts::RAYSERVICE,
                kuberay_plugin_artifacts::RAYCRONJOB,
                component,
            ],
            policy: Some(policy_with(POLICY_ENTRY)),
            ..OperatorOptions::default()
        },
    )
    .await;
    let connections = rayconnections(&client, ns.name());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());

    // A RayConnection to a cluster that does not exist yet. The first wait includes compiling the component
    // (CPython and all) when the shared cache has no artifact for this build.
    apply(
        &connections,
        &json!({
            "apiVersion": "examples.kuberay-wasm.io/v1alpha1", "kind": "RayConnection",
            "metadata": {"name": "app"}, "spec": {"rayClusterName": "first"},
        }),
    )
    .await;
    let status = ready_condition(
        &connections,
        "app",
        "False",
        "RayClusterNotFound",
        1,
        Duration::from_secs(300),
    )
    .await;
    let message = condition_message(&status);
    assert!(
        message.contains(&format!(
            "RayCluster first does not exist in namespace {}",
            ns.name()
        )),
        "{message}"
    );
    assert!(status.get("configMapName").is_none(), "{status}");
    event(&events, "app", "RayClusterNotFound", "RayCluster first").await;
    assert!(config_maps.get_opt("app").await.unwrap().is_none());

    // The cluster appears (found by the plugin's poll: the host does not watch RayClusters for it).
    let rayclusters = rayclusters(&client, &ns);
    apply(
        &rayclusters,
        &raycluster(
            "first",
            json!([{"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265}]),
        ),
    )
    .await;
    let status = ready_condition(
        &connections,
        "app",
        "True",
        "ConfigMapReady",
        1,
        Duration::from_secs(60),
    )
    .await;
    let host = format!("first-head-svc.{}.svc.cluster.local", ns.name());
    assert_eq!(status["configMapName"], "app", "{status}");
    assert_eq!(status["rayAddress"], format!("ray://{host}:10001"), "{status}");
    let config_map = config_maps.get("app").await.unwrap();
    let data = config_map.data.clone().unwrap_or_default();
    let expected = [
        ("RAY_ADDRESS", format!("ray://{host}:10001")),
        ("RAY_DASHBOARD_URL", format!("http://{host}:8265")),
        ("RAY_SERVE_URL", format!("http://{host}:8000")),
        ("RAY_HEAD_SERVICE", host.clone()),
        ("RAY_CLUSTER_NAME", "first".to_string()),
    ];
    assert_eq!(
        data,
        expected.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        "{config_map:?}"
    );
    // Controlled by the RayConnection: the reference the host added, with its uid.
    let connection = connections.get("app").await.unwrap();
    let owners = config_map.metadata.owner_references.clone().unwrap_or_default();
    let controller = owners
        .iter()
        .find(|o| o.controller == Some(true))
        .expect("a controller owner reference");
    assert_eq!(
        (controller.kind.as_str(), controller.name.as_str()),
        ("RayConnection", "app")
    );
    assert_eq!(Some(&controller.uid), connection.metadata.uid.as_ref());
    event(&events, "app", "ConfigMapWritten", &format!("ray://{host}:10001")).await;

    // Another cluster, with its own ports: the ConfigMap follows the spec.
    apply(
        &rayclusters,
        &raycluster(
            "second",
            json!([
                {"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265},
                {"name": "client", "containerPort": 20001}, {"name": "serve", "containerPort": 8001},
            ]),
        ),
    )
    .await;
    connections
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"rayClusterName": "second"}})),
        )
        .await
        .unwrap();
    let status = ready_condition(
        &connections,
        "app",
        "True",
        "ConfigMapReady",
        2,
        Duration::from_secs(60),
    )
    .await;
    let second = format!("second-head-svc.{}.svc.cluster.local", ns.name());
    assert_eq!(status["rayAddress"], format!("ray://{second}:20001"), "{status}");
    let data = config_maps.get("app").await.unwrap().data.unwrap_or_default();
    assert_eq!(data["RAY_ADDRESS"], format!("ray://{second}:20001"));
    assert_eq!(data["RAY_SERVE_URL"], format!("http://{second}:8001"));
    assert_eq!(data["RAY_CLUSTER_NAME"], "second");
    let written = event(
        &events,
        "app",
        "ConfigMapWritten",
        &format!("ray://{second}:20001"),
    )
    .await;
    assert_eq!(written.action.as_deref(), Some("Update"));

    // Every reconcile succeeded, and nothing was refused.
    assert_eq!(
        operator.metric(
            "kuberay_wasm_reconcile_errors_total",
            &["plugin=\"rayconnection\""]
        ),
        0.0
    );
    assert_eq!(
        operator.metric("kuberay_wasm_refused_calls_total", &["plugin=\"rayconnection\""]),
        0.0
    );
    let calls = operator.metric(
        "kuberay_wasm_plugin_call_duration_seconds_count",
        &["plugin=\"rayconnection\"", "export=\"reconcile\""],
    );
    let seconds = operator.metric(
        "kuberay_wasm_plugin_call_duration_seconds_sum",
        &["plugin=\"rayconnection\"", "export=\"reconcile\""],
    );
    assert!(calls >= 3.0, "{calls} reconciles");
    eprintln!(
        "rayconnection: {calls} reconciles, {:.1} ms each on average",
        seconds * 1000.0 / calls
    );

    // The RayConnection goes, and the garbage collector takes its ConfigMap.
    connections.delete("app", &DeleteParams::default()).await.unwrap();
    eventually(
        "the ConfigMap to be collected with its RayConnection",
        Duration::from_secs(60),
        || async { config_maps.get_opt("app").await.ok()?.is_none().then_some(()) },
    )
    .await;
    operator.stop().await;
}
