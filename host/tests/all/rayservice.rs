//! The RayService plugin on the real control plane with fake Ray heads: KubeRay's sample becomes Ready
//! behind its Services; a `serveConfigV2` change is deployed to the running cluster (and an operator restart
//! re-deploys nothing); a `rayClusterConfig` change is rolled out blue/green and the old cluster deleted
//! after the delay; an application that fails to deploy on the new cluster leaves the old one serving.

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::{Api, Client, api::DynamicObject};
use kuberay_testenv::{TestEnv, TestNamespace, proxy_http::ProxyHttp};
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply, env, eventually, namespace, ray_api, rayclusters, sample, start_operator,
    status_of,
};

pub(crate) const WAIT: Duration = Duration::from_secs(150);

pub(crate) fn rayservices(client: &Client, ns: &TestNamespace) -> Api<DynamicObject> {
    ray_api(client, ns, "RayService", "rayservices")
}

pub(crate) fn options() -> OperatorOptions {
    OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::RAYSERVICE,
        ],
        ..OperatorOptions::default()
    }
}

pub(crate) async fn setup(env: &TestEnv, prefix: &str) -> (Client, TestNamespace, crate::support::Operator) {
    let client = env.client().await.unwrap();
    let ns = namespace(env, prefix).await;
    let operator = start_operator(env, &ns, options()).await;
    (client, ns, operator)
}

/// KubeRay's sample as a JSON object, with the deletion delay a test can wait for.
pub(crate) fn sample_service() -> Value {
    let text = std::fs::read_to_string(sample("ray-service.sample.yaml")).unwrap();
    let mut service: Value = serde_yaml::from_str(&text).unwrap();
    service["spec"]["rayClusterDeletionDelaySeconds"] = json!(3);
    service
}

pub(crate) fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

pub(crate) fn is_true(status: &Value, type_: &str) -> bool {
    condition(status, type_).is_some_and(|c| c["status"] == "True")
}

/// Waits until the RayService is Ready with every application RUNNING on its active cluster and no pending
/// cluster; returns its status.
pub(crate) async fn ready(api: &Api<DynamicObject>, name: &str) -> Value {
    eventually(&format!("RayService {name} to be ready"), WAIT, || async {
        let status = status_of(api, name).await?;
        let apps = status
            .pointer("/activeServiceStatus/applicationStatuses")?
            .as_object()?;
        let running = !apps.is_empty() && apps.values().all(|a| a["status"] == "RUNNING");
        let settled = status.pointer("/pendingServiceStatus/rayClusterName").is_none();
        (is_true(&status, "Ready") && running && settled).then_some(status)
    })
    .await
}

pub(crate) fn active_cluster(status: &Value) -> String {
    status["activeServiceStatus"]["rayClusterName"]
        .as_str()
        .unwrap()
        .to_string()
}

pub(crate) async fn selector_cluster(client: &Client, ns: &TestNamespace, service: &str) -> Option<String> {
    let api: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let service = api.get(service).await.ok()?;
    service.spec?.selector?.get("ray.io/cluster").cloned()
}

/// The applications the cluster's head runs, asked through the API server.
pub(crate) async fn head_applications(client: &Client, ns: &TestNamespace, cluster: &str) -> Value {
    let head = ProxyHttp::service(
        client.clone(),
        ns.name(),
        &format!("{cluster}-head-svc"),
        "dashboard",
    );
    let reply = head.get("/api/serve/applications/").await.unwrap();
    reply.json().unwrap()["applications"].clone()
}

#[tokio::test]
async fn the_sample_becomes_ready_and_a_serve_config_change_is_deployed_in_place() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-sample").await;
    let api = rayservices(&client, &ns);
    let mut service = sample_service();
    apply(&api, &service).await;
    let status = ready(&api, "rayservice-sample").await;
    let cluster = active_cluster(&status);
    assert!(cluster.starts_with("rayservice-sample-"), "{cluster}");
    assert!(status["numServeEndpoints"].as_i64().unwrap() >= 1, "{status}");
    assert_eq!(status["serviceStatus"], "Running");
    assert_eq!(
        condition(&status, "UpgradeInProgress").unwrap()["reason"],
        "NoPendingCluster"
    );
    let deployments =
        &status["activeServiceStatus"]["applicationStatuses"]["fruit_app"]["serveDeploymentStatuses"];
    assert_eq!(deployments["MangoStand"]["status"], "HEALTHY", "{status}");
    for svc in ["rayservice-sample-head-svc", "rayservice-sample-serve-svc"] {
        assert_eq!(
            selector_cluster(&client, &ns, svc).await.as_deref(),
            Some(cluster.as_str())
        );
    }
    let svc =
        serde_json::to_value(rayservices(&client, &ns).get("rayservice-sample").await.unwrap()).unwrap();
    assert!(
        svc["metadata"]["finalizers"]
            .to_string()
            .contains("ray.io/rayservice-finalizer")
    );
    let deployed = head_applications(&client, &ns, &cluster).await;
    let deployed_at = deployed["fruit_app"]["last_deployed_time_s"].clone();

    // An operator restart sends nothing: the head already runs serveConfigV2.
    operator.stop().await;
    let operator = start_operator(env, &ns, options()).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let deployed = head_applications(&client, &ns, &cluster).await;
    assert_eq!(
        deployed["fruit_app"]["last_deployed_time_s"], deployed_at,
        "re-deployed after a restart"
    );

    // A serveConfigV2 change goes to the running cluster; no new cluster.
    let config = service["spec"]["serveConfigV2"]
        .as_str()
        .unwrap()
        .replace("price: 3", "price: 4");
    service["spec"]["serveConfigV2"] = json!(config);
    apply(&api, &service).await;
    eventually("the new price on the head", WAIT, || async {
        let apps = head_applications(&client, &ns, &cluster).await;
        let mango = apps["fruit_app"]["deployed_app_config"]["deployments"]
            .as_array()?
            .iter()
            .find(|d| d["name"] == "MangoStand")?
            .clone();
        (mango["user_config"]["price"] == 4).then_some(())
    })
    .await;
    let status = ready(&api, "rayservice-sample").await;
    assert_eq!(active_cluster(&status), cluster);
    let clusters = rayclusters(&client, &ns).list(&Default::default()).await.unwrap();
    assert_eq!(
        clusters.items.len(),
        1,
        "a serveConfigV2 change made a new cluster"
    );
    operator.stop().await;
}

#[tokio::test]
async fn a_cluster_change_is_rolled_out_blue_green_and_a_failed_deploy_keeps_the_old_cluster_serving() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-upgrade").await;
    let api = rayservices(&client, &ns);
    let mut service = sample_service();
    apply(&api, &service).await;
    let first = active_cluster(&ready(&api, "rayservice-sample").await);

    // A cluster change that fails to deploy: the new cluster is prepared, the old one keeps serving.
    service["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = json!({"num-cpus": "1"});
    let good = service["spec"]["serveConfigV2"].as_str().unwrap().to_string();
    service["spec"]["serveConfigV2"] =
        json!(good.replace("conditional_dag.serve_dag", "conditional_dag.fail_dag"));
    apply(&api, &service).await;
    let failed = eventually("the pending cluster's application to fail", WAIT, || async {
        let status = status_of(&api, "rayservice-sample").await?;
        let app = status.pointer("/pendingServiceStatus/applicationStatuses/math_app/status")?;
        (app == "DEPLOY_FAILED").then_some(status)
    })
    .await;
    assert!(is_true(&failed, "UpgradeInProgress"), "{failed}");
    assert!(is_true(&failed, "Ready"), "{failed}");
    assert_eq!(active_cluster(&failed), first);
    let second = failed["pendingServiceStatus"]["rayClusterName"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(second, first);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        selector_cluster(&client, &ns, "rayservice-sample-serve-svc").await,
        Some(first.clone())
    );
    assert!(rayclusters(&client, &ns).get_opt(&first).await.unwrap().is_some());

    // The fixed config finishes the upgrade on the same new cluster; the old one goes after the delay.
    service["spec"]["serveConfigV2"] = json!(good);
    apply(&api, &service).await;
    let status = eventually("the new cluster to take over", WAIT, || async {
        let status = status_of(&api, "rayservice-sample").await?;
        (status["activeServiceStatus"]["rayClusterName"] == second.as_str()).then_some(status)
    })
    .await;
    assert_eq!(
        selector_cluster(&client, &ns, "rayservice-sample-serve-svc").await,
        Some(second.clone())
    );
    assert_eq!(
        selector_cluster(&client, &ns, "rayservice-sample-head-svc").await,
        Some(second.clone())
    );
    assert!(
        status.pointer("/pendingServiceStatus/rayClusterName").is_none(),
        "{status}"
    );
    let clusters = rayclusters(&client, &ns);
    eventually(
        "the old cluster to be deleted",
        Duration::from_secs(60),
        || async { clusters.get_opt(&first).await.ok()?.is_none().then_some(()) },
    )
    .await;
    let status = ready(&api, "rayservice-sample").await;
    assert_eq!(active_cluster(&status), second);

    // Deleting the RayService waits for its clusters, then lets it go.
    api.delete("rayservice-sample", &Default::default())
        .await
        .unwrap();
    eventually("the RayService to be deleted", WAIT, || async {
        api.get_opt("rayservice-sample")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    operator.stop().await;
}
