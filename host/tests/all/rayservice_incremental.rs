//! RayService `NewClusterWithIncrementalUpgrade` on the real control plane with the Gateway API CRDs and
//! fake Ray heads: KubeRay's incremental-upgrade sample gets its Gateway and HTTPRoute; a cluster change
//! moves the HTTPRoute's weights to the new cluster in steps, promotes it, and deletes the old cluster.
//!
//! No Gateway controller runs here and nothing routes traffic through the Gateway: the test plays the
//! controller's part by marking the Gateway and the HTTPRoute accepted and programmed in their status, which
//! is what the plugin waits for before moving capacity.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams},
};
use kuberay_testenv::TestNamespace;
use serde_json::{Value, json};

use crate::support::{
    apply, env, eventually, namespace, ray_api, rayclusters, sample, start_operator, status_of,
};

const WAIT: Duration = Duration::from_secs(150);
const NAME: &str = "rayservice-incremental-upgrade";

fn gateway_api(client: &Client, ns: &TestNamespace, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", kind);
    Api::namespaced_with(
        client.clone(),
        ns.name(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// KubeRay's sample with steps a test can wait for.
fn sample_service() -> Value {
    let text = std::fs::read_to_string(sample("ray-service.incremental-upgrade.yaml")).unwrap();
    let mut service: Value = serde_yaml::from_str(&text).unwrap();
    service["spec"]["upgradeStrategy"]["clusterUpgradeOptions"] = json!({
        "gatewayClassName": "istio", "stepSizePercent": 50, "intervalSeconds": 2, "maxSurgePercent": 50});
    service["spec"]["rayClusterDeletionDelaySeconds"] = json!(3);
    service
}

/// `(backend, weight)` of an HTTPRoute's first rule.
type Weights = Vec<(String, i64)>;

fn weights(route: &Value) -> Weights {
    route["spec"]["rules"][0]["backendRefs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            (
                b["name"].as_str().unwrap_or_default().to_string(),
                b["weight"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

/// What a Gateway controller writes once it has programmed the Gateway and accepted the route.
async fn mark_ready(gateways: &Api<DynamicObject>, routes: &Api<DynamicObject>, ns: &str) {
    let ok = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": type_, "message": "",
               "lastTransitionTime": "2027-01-01T00:00:00Z"})
    };
    let params = PatchParams::default();
    let _ = gateways
        .patch_status(
            &format!("{NAME}-gateway"),
            &params,
            &Patch::Merge(json!({"status": {"conditions": [ok("Accepted"), ok("Programmed")]}})),
        )
        .await;
    let _ = routes
        .patch_status(
            &format!("{NAME}-httproute"),
            &params,
            &Patch::Merge(json!({"status": {"parents": [{
                "parentRef": {"name": format!("{NAME}-gateway"), "namespace": ns},
                "controllerName": "example.com/test-gateway-controller",
                "conditions": [ok("Accepted"), ok("ResolvedRefs")]}]}})),
        )
        .await;
}

#[tokio::test]
async fn the_route_weights_step_to_the_new_cluster_and_the_old_cluster_is_deleted() {
    let env = env().await;
    env.install_gateway_api_crds().await.unwrap();
    let client = env.client().await.unwrap();
    let ns = namespace(env, "rayservice-incremental").await;
    let operator = start_operator(env, &ns, crate::rayservice::options()).await;
    let api = ray_api(&client, &ns, "RayService", "rayservices");
    let gateways = gateway_api(&client, &ns, "Gateway", "gateways");
    let routes = gateway_api(&client, &ns, "HTTPRoute", "httproutes");
    let mut service = sample_service();
    apply(&api, &service).await;

    let first = eventually(
        "the first cluster to serve through the HTTPRoute",
        WAIT,
        || async {
            let status = status_of(&api, NAME).await?;
            let ready = status["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            let active = status["activeServiceStatus"]["rayClusterName"]
                .as_str()?
                .to_string();
            let route = serde_json::to_value(routes.get(&format!("{NAME}-httproute")).await.ok()?).ok()?;
            (ready && weights(&route) == vec![(format!("{active}-serve-svc"), 100)]).then_some(active)
        },
    )
    .await;
    let gateway = serde_json::to_value(gateways.get(&format!("{NAME}-gateway")).await.unwrap()).unwrap();
    assert_eq!(gateway["spec"]["gatewayClassName"], "istio");
    assert_eq!(gateway["spec"]["listeners"][0]["port"], 80, "{gateway}");
    let status = status_of(&api, NAME).await.unwrap();
    assert_eq!(status["activeServiceStatus"]["targetCapacity"], 100, "{status}");

    // The Gateway controller's part, for the rest of the test.
    let controller = {
        let (gateways, routes, ns) = (gateways.clone(), routes.clone(), ns.name().to_string());
        tokio::spawn(async move {
            loop {
                mark_ready(&gateways, &routes, &ns).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };

    service["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = json!({"num-cpus": "1"});
    apply(&api, &service).await;
    let observed: Arc<Mutex<Vec<Weights>>> = Arc::default();
    let second = eventually("the new cluster to be promoted", WAIT, || {
        let (api, routes) = (api.clone(), routes.clone());
        let observed = observed.clone();
        let first = first.clone();
        async move {
            if let Ok(route) = routes.get(&format!("{NAME}-httproute")).await {
                let now = weights(&serde_json::to_value(route).ok()?);
                let mut seen = observed.lock().unwrap();
                if seen.last() != Some(&now) {
                    seen.push(now);
                }
            }
            let status = status_of(&api, NAME).await?;
            let active = status["activeServiceStatus"]["rayClusterName"]
                .as_str()?
                .to_string();
            let settled = status.pointer("/pendingServiceStatus/rayClusterName").is_none();
            (active != first && settled).then_some(active)
        }
    })
    .await;
    let seen = observed.lock().unwrap().clone();
    let (old, new) = (format!("{first}-serve-svc"), format!("{second}-serve-svc"));
    for expected in [
        vec![(old.clone(), 100), (new.clone(), 0)],
        vec![(old.clone(), 50), (new.clone(), 50)],
        vec![(old.clone(), 0), (new.clone(), 100)],
    ] {
        assert!(seen.contains(&expected), "{expected:?} not among {seen:?}");
    }
    let at = |w: &Weights| seen.iter().position(|s| s == w);
    assert!(
        at(&vec![(old.clone(), 50), (new.clone(), 50)]) < at(&vec![(old.clone(), 0), (new.clone(), 100)]),
        "{seen:?}"
    );
    eventually("the route to name only the new cluster", WAIT, || async {
        let route = serde_json::to_value(routes.get(&format!("{NAME}-httproute")).await.ok()?).ok()?;
        (weights(&route) == vec![(new.clone(), 100)]).then_some(())
    })
    .await;
    eventually("the old cluster to be deleted", WAIT, || async {
        let clusters = rayclusters(&client, &ns).list(&Default::default()).await.ok()?;
        let names: Vec<String> = clusters
            .items
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        (names == vec![second.clone()]).then_some(())
    })
    .await;
    controller.abort();

    // Another strategy: the Gateway and the HTTPRoute go; the service keeps running on its cluster.
    service["spec"]["upgradeStrategy"] = json!({"type": "NewCluster"});
    apply(&api, &service).await;
    eventually("the Gateway and HTTPRoute to be deleted", WAIT, || async {
        let gateway = gateways.get_opt(&format!("{NAME}-gateway")).await.ok()?;
        let route = routes.get_opt(&format!("{NAME}-httproute")).await.ok()?;
        (gateway.is_none() && route.is_none()).then_some(())
    })
    .await;
    let status = status_of(&api, NAME).await.unwrap();
    assert_eq!(
        status["activeServiceStatus"]["rayClusterName"],
        second.as_str(),
        "{status}"
    );
    operator.stop().await;
}
