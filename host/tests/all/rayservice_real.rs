//! The RayService plugin with real Ray heads. KubeRay's `ray-service.sample.yaml`, its applications adapted to
//! code the head imports locally (`tests/fixtures/rayservice/ray-service.sample.local.yaml`), becomes Ready:
//! first with the operator where no Pod address is reachable (`--use-kubernetes-proxy`), whose metrics then
//! count `proxy-service` and `proxy-pod` requests and nothing else; then, after the RayService was deleted,
//! with an operator that reaches the head directly. Each time, requests through the serve Service reach the
//! applications with KubeRay's documented answers, and a `serveConfigV2` change is deployed on the running
//! head without a new cluster.

use std::time::Duration;

use kube::{Api, Client, api::DynamicObject};
use kuberay_testenv::{TestNamespace, proxy_http::ProxyHttp};
use serde_json::{Value, json};

use crate::{
    isolated::{IsolatedOperator, never_direct, succeeded_on},
    support::{
        OperatorOptions, apply, env, eventually, ray_api, rayclusters, real_ray_namespace, start_operator,
        status_of,
    },
};

const NAME: &str = "rayservice-sample";
/// A real head starts Ray, then Serve's controller, proxy and eight replicas: minutes on a busy machine.
const WAIT: Duration = Duration::from_secs(420);

fn local_sample() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/rayservice/ray-service.sample.local.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The sample with MangoStand's price changed (3 in the sample).
fn with_mango_price(mut service: Value, price: u32) -> Value {
    let config = service["spec"]["serveConfigV2"].as_str().unwrap();
    assert!(config.contains("price: 3"), "{config}");
    service["spec"]["serveConfigV2"] = json!(config.replace("price: 3", &format!("price: {price}")));
    service
}

/// Waits until the RayService is Ready with both applications RUNNING and returns its active cluster.
async fn ready(api: &Api<DynamicObject>) -> String {
    eventually("the RayService to be ready", WAIT, || async {
        let status = status_of(api, NAME).await?;
        let ready = status["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        let apps = status
            .pointer("/activeServiceStatus/applicationStatuses")?
            .as_object()?;
        let running = apps.len() == 2 && apps.values().all(|a| a["status"] == "RUNNING");
        (ready && running && status["numServeEndpoints"].as_i64()? >= 1).then(|| {
            status["activeServiceStatus"]["rayClusterName"]
                .as_str()
                .map(str::to_string)
        })?
    })
    .await
}

/// Sends KubeRay's documented requests through the serve Service (the API server's service proxy, so the
/// request goes to the Service's endpoints) and checks the answers; MangoStand's price is `mango`.
async fn answers(client: &Client, ns: &TestNamespace, mango: u32) {
    let serve = ProxyHttp::service(client.clone(), ns.name(), &format!("{NAME}-serve-svc"), "serve");
    let mango_answer = (2 * mango).to_string();
    for (path, body, answer) in [
        ("/fruit/", json!(["MANGO", 2]), mango_answer.as_str()),
        ("/fruit/", json!(["ORANGE", 2]), "4"),
        ("/fruit/", json!(["PEAR", 3]), "3"),
        ("/fruit/", json!(["KIWI", 1]), "-1"),
        ("/calc/", json!(["MUL", 3]), "15 pizzas please!"),
        ("/calc/", json!(["ADD", 3]), "6 pizzas please!"),
    ] {
        eventually(
            &format!("{path} {body} to answer {answer}"),
            Duration::from_secs(90),
            || async {
                let reply = serve.post(path, Some(&body)).await.ok()?;
                (reply.status == 200 && reply.body.trim() == answer).then_some(())
            },
        )
        .await;
    }
}

/// Brings the sample up, checks it serves, changes `serveConfigV2` and checks the running head serves it.
async fn serves_and_updates_in_place(client: &Client, ns: &TestNamespace) {
    let api = ray_api(client, ns, "RayService", "rayservices");
    apply(&api, &local_sample()).await;
    let cluster = ready(&api).await;
    answers(client, ns, 3).await;
    apply(&api, &with_mango_price(local_sample(), 4)).await;
    answers(client, ns, 4).await;
    assert_eq!(
        ready(&api).await,
        cluster,
        "a serveConfigV2 change moved the service"
    );
    let clusters = rayclusters(client, ns).list(&Default::default()).await.unwrap();
    assert_eq!(
        clusters.items.len(),
        1,
        "a serveConfigV2 change made a new cluster"
    );
}

async fn delete_service(client: &Client, ns: &TestNamespace) {
    let api = ray_api(client, ns, "RayService", "rayservices");
    api.delete(NAME, &Default::default()).await.unwrap();
    let clusters = rayclusters(client, ns);
    eventually("the RayService and its cluster to be gone", WAIT, || async {
        let gone = api.get_opt(NAME).await.ok()?.is_none();
        let none = clusters.list(&Default::default()).await.ok()?.items.is_empty();
        (gone && none).then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_rayservice_sample_serves_on_a_real_head_through_the_proxy_and_directly() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let (ns, _turn) = real_ray_namespace(env, "rayservice-real").await;
    let plugins = [
        kuberay_plugin_artifacts::RAYCLUSTER,
        kuberay_plugin_artifacts::RAYSERVICE,
    ];

    // Where no Pod is reachable: the Serve API through the head Service's proxy, the Serve proxy's health
    // through the head Pod's.
    let proxied = IsolatedOperator::start(env, ns.name(), &plugins, true, 18280);
    serves_and_updates_in_place(&client, &ns).await;
    let ray = proxied.ray_requests().await;
    assert!(succeeded_on(&ray, "proxy-service"), "{ray:?}");
    assert!(succeeded_on(&ray, "proxy-pod"), "{ray:?}");
    assert!(never_direct(&ray), "a direct connection was attempted: {ray:?}");
    delete_service(&client, &ns).await;
    proxied.stop().await;

    // The same from scratch with an operator that reaches the head directly.
    let options = OperatorOptions {
        plugins: plugins.to_vec(),
        ..OperatorOptions::default()
    };
    let direct = start_operator(env, &ns, options).await;
    serves_and_updates_in_place(&client, &ns).await;
    for route in ["direct-service", "direct-pod"] {
        let ok = direct.metric(
            "kuberay_wasm_ray_requests_total",
            &[&format!("route=\"{route}\""), "outcome=\"ok\""],
        );
        assert!(ok > 0.0, "no successful {route} request");
    }
    assert_eq!(
        direct.metric("kuberay_wasm_ray_requests_total", &["route=\"proxy-"]),
        0.0
    );
    delete_service(&client, &ns).await;
    direct.stop().await;
}
