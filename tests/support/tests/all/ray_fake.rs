use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Client;
use kuberay_testenv::{HeadMode, TestNamespace, annotations, conformance, proxy_http::ProxyHttp};
use serde_json::json;

use crate::util::{create, env, eventually, is_ready, ready_pod};

/// A Ray head Pod and its headless Service, shaped as KubeRay creates them.
pub async fn head_pod_and_service(client: &Client, ns: &TestNamespace, cluster: &str) -> (Pod, String) {
    let _: Pod = create(
        client,
        ns,
        json!({
            "metadata": {
                "name": format!("{cluster}-head"),
                "labels": {"ray.io/cluster": cluster, "ray.io/node-type": "head", "ray.io/group": "headgroup"},
            },
            "spec": {"containers": [{
                "name": "ray-head",
                "image": "rayproject/ray:2.60.0",
                "ports": [
                    {"name": "gcs-server", "containerPort": 6379},
                    {"name": "dashboard", "containerPort": 8265},
                    {"name": "client", "containerPort": 10001},
                    {"name": "serve", "containerPort": 8000},
                ],
            }]},
        }),
    )
    .await;
    let service = format!("{cluster}-head-svc");
    let _: Service = create(
        client,
        ns,
        json!({
            "metadata": {"name": service},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": true,
                "selector": {"ray.io/cluster": cluster, "ray.io/node-type": "head"},
                "ports": [
                    {"name": "dashboard", "port": 8265},
                    {"name": "serve", "port": 8000},
                    {"name": "gcs-server", "port": 6379},
                ],
            },
        }),
    )
    .await;
    (ready_pod(client, ns, &format!("{cluster}-head")).await, service)
}

/// Waits until the Service proxy reaches the head's dashboard.
pub async fn dashboard(client: &Client, ns: &TestNamespace, service: &str) -> ProxyHttp {
    let dashboard = ProxyHttp::service(client.clone(), ns.name(), service, "dashboard");
    eventually(
        "the dashboard behind the head Service",
        Duration::from_secs(60),
        || async {
            let reply = dashboard.get("/api/gcs_healthz").await.ok()?;
            (reply.status == 200).then_some(())
        },
    )
    .await;
    dashboard
}

#[tokio::test]
async fn fake_ray_head_answers_the_jobs_api_like_ray() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env
        .namespace_with("fake-ray", Some(HeadMode::Fake))
        .await
        .unwrap();
    let (_, service) = head_pod_and_service(&client, &ns, "fake").await;
    let dashboard = dashboard(&client, &ns, &service).await;
    conformance::jobs_api(&dashboard, "fake").await.unwrap();
    conformance::sdk_jobs_client(dashboard.clone(), "fake")
        .await
        .unwrap();
}

#[tokio::test]
async fn fake_ray_head_serves_serve_apps_and_freezes_on_request() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env
        .namespace_with("fake-serve", Some(HeadMode::Fake))
        .await
        .unwrap();
    let (head, service) = head_pod_and_service(&client, &ns, "serve").await;
    let head_name = head.metadata.name.clone().unwrap();
    let dashboard = dashboard(&client, &ns, &service).await;
    let proxy = ProxyHttp::pod(client.clone(), ns.name(), &head_name, 8000);

    // Like a real head, the Serve proxy listens only once something is deployed.
    let before = proxy.get("/-/healthz").await.unwrap();
    assert_ne!(
        before.status, 200,
        "the serve proxy answered before any deployment: {before:?}"
    );

    let config = json!({"applications": [
        {"name": "fruit", "route_prefix": "/fruit", "import_path": "fruit.deployment_graph"},
        {"name": "broken", "route_prefix": "/broken", "import_path": "fail.app"},
    ]});
    assert_eq!(
        dashboard
            .put("/api/serve/applications/", &config)
            .await
            .unwrap()
            .status,
        200
    );
    let invalid = dashboard
        .put(
            "/api/serve/applications/",
            &json!({"applications": [{"name": "x"}]}),
        )
        .await
        .unwrap();
    assert_eq!(invalid.status, 400, "{invalid:?}");
    let apps = eventually("serve apps to settle", Duration::from_secs(30), || async {
        let details = dashboard
            .get("/api/serve/applications/?api_type=declarative")
            .await
            .ok()?
            .json()
            .ok()?;
        (details["applications"]["fruit"]["status"] == "RUNNING").then_some(details)
    })
    .await;
    assert_eq!(apps["applications"]["broken"]["status"], "DEPLOY_FAILED");
    assert_eq!(
        apps["applications"]["fruit"]["deployments"]["deployment_graph"]["status"],
        "HEALTHY"
    );

    let health = proxy.get("/-/healthz").await.unwrap();
    assert_eq!((health.status.as_u16(), health.body.as_str()), (200, "success"));
    let routes = proxy.get("/-/routes").await.unwrap().json().unwrap();
    assert_eq!(routes, json!({"/fruit": "fruit", "/broken": "broken"}));

    // A frozen head stops answering, so its Pod drops out of Ready.
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), ns.name());
    let patch = json!({"metadata": {"annotations": {annotations::FREEZE: "true"}}});
    pods.patch(&head_name, &Default::default(), &kube::api::Patch::Merge(patch))
        .await
        .unwrap();
    eventually(
        "the frozen head to be unready",
        Duration::from_secs(30),
        || async { (!is_ready(&pods.get(&head_name).await.ok()?)).then_some(()) },
    )
    .await;
    let patch = json!({"metadata": {"annotations": {annotations::FREEZE: null}}});
    pods.patch(&head_name, &Default::default(), &kube::api::Patch::Merge(patch))
        .await
        .unwrap();
    ready_pod(&client, &ns, &head_name).await;
    assert_eq!(dashboard.get("/api/gcs_healthz").await.unwrap().status, 200);
}
