//! The Serve fixture of the RayService tests: KubeRay's `ray-service.sample.yaml` adapted to import its
//! applications from `tests/ray/apps` (`tests/fixtures/rayservice/ray-service.sample.local.yaml`) becomes
//! RUNNING on a real Ray head Pod of the simulated kubelet, and both applications answer as KubeRay documents,
//! at the head Pod's Serve port and through a serve Service. No operator: the config is PUT to the dashboard
//! as KubeRay's RayService controller does.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use kuberay_testenv::{HeadMode, proxy_http::ProxyHttp};
use serde_json::{Value, json};

use crate::support::{env, eventually};

/// The Serve config of the adapted sample (`serveConfigV2`, YAML in YAML) as JSON, as the operator PUTs it.
fn sample_serve_config() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/rayservice/ray-service.sample.local.yaml");
    let service: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let config = service["spec"]["serveConfigV2"].as_str().unwrap();
    serde_yaml::from_str(config).unwrap()
}

/// Application name and status, from `GET /api/serve/applications/`.
async fn serve_statuses(dashboard: &ProxyHttp) -> Option<Vec<(String, String)>> {
    let reply = dashboard.get("/api/serve/applications/").await.ok()?;
    let applications = reply.json().ok()?["applications"].as_object()?.clone();
    let mut statuses: Vec<(String, String)> = applications
        .iter()
        .map(|(name, app)| {
            (
                name.clone(),
                app["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    statuses.sort();
    Some(statuses)
}

async fn create<K>(api: &Api<K>, manifest: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), &serde_json::from_value(manifest).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
#[ignore = "not yet passing: in the test environment the applications did not reach RUNNING within 300 s \
            (the same config and code ran RUNNING by hand on a real head in about 90 s); to investigate"]
async fn the_rayservice_sample_runs_on_a_real_head_from_local_code() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env
        .namespace_with("serve-sample", Some(HeadMode::Real))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let labels = json!({"ray.io/cluster": "sample", "ray.io/node-type": "head", "ray.io/group": "headgroup"});
    create(
        &pods,
        json!({
            "metadata": {"name": "sample-head", "labels": labels},
            "spec": {"containers": [{
                "name": "ray-head", "image": "rayproject/ray:2.60.0",
                "ports": [
                    {"name": "gcs-server", "containerPort": 6379},
                    {"name": "dashboard", "containerPort": 8265},
                    {"name": "serve", "containerPort": 8000},
                ],
            }]},
        }),
    )
    .await;
    create(
        &services,
        json!({
            "metadata": {"name": "sample-head-svc"},
            "spec": {"selector": {"ray.io/cluster": "sample", "ray.io/node-type": "head"},
                "ports": [{"name": "dashboard", "port": 8265}]},
        }),
    )
    .await;
    // The serve Service as KubeRay's RayService makes it: the cluster's Pods labelled `ray.io/serve=true`.
    create(
        &services,
        json!({
            "metadata": {"name": "sample-serve-svc"},
            "spec": {"selector": {"ray.io/cluster": "sample", "ray.io/serve": "true"},
                "ports": [{"name": "serve", "port": 8000}]},
        }),
    )
    .await;

    let dashboard = ProxyHttp::service(client.clone(), ns.name(), "sample-head-svc", "dashboard");
    eventually("the real head's dashboard", Duration::from_secs(120), || async {
        let reply = dashboard.get("/api/gcs_healthz").await.ok()?;
        (reply.status == 200).then_some(())
    })
    .await;
    let put = dashboard
        .put("/api/serve/applications/", &sample_serve_config())
        .await
        .unwrap();
    assert_eq!(put.status.as_u16(), 200, "{}", put.body);
    let running = vec![
        ("fruit_app".to_string(), "RUNNING".to_string()),
        ("math_app".to_string(), "RUNNING".to_string()),
    ];
    eventually(
        "both applications to be RUNNING",
        Duration::from_secs(300),
        || async { (serve_statuses(&dashboard).await? == running).then_some(()) },
    )
    .await;
    let label = json!({"metadata": {"labels": {"ray.io/serve": "true"}}});
    pods.patch("sample-head", &PatchParams::default(), &Patch::Merge(label))
        .await
        .unwrap();

    // KubeRay's documented answers (MANGO 2 -> 6, MUL 3 -> "15 pizzas please!"); the other prices come from
    // the config's user_config, which replaces the code's defaults.
    let head = ProxyHttp::pod(client.clone(), ns.name(), "sample-head", 8000);
    let serve = ProxyHttp::service(client.clone(), ns.name(), "sample-serve-svc", "serve");
    for target in [&head, &serve] {
        for (path, body, answer) in [
            ("/fruit/", json!(["MANGO", 2]), "6"),
            ("/fruit/", json!(["ORANGE", 2]), "4"),
            ("/fruit/", json!(["PEAR", 3]), "3"),
            ("/fruit/", json!(["KIWI", 1]), "-1"),
            ("/calc/", json!(["MUL", 3]), "15 pizzas please!"),
            ("/calc/", json!(["ADD", 3]), "6 pizzas please!"),
        ] {
            let reply = eventually(&format!("{path} {body}"), Duration::from_secs(60), || async {
                target
                    .post(path, Some(&body))
                    .await
                    .ok()
                    .filter(|r| r.status == 200)
            })
            .await;
            assert_eq!(reply.body.trim(), answer, "{path} {body}");
        }
    }
}
