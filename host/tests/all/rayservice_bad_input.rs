//! RayServices that cannot work, on the real control plane with fake heads: a `serveConfigV2` that is not
//! YAML, and a head that never becomes ready with the initializing timeout. Each gets a condition and a
//! Warning Event that say why, nothing that serves is touched, and the operator goes on reconciling a
//! healthy RayService next to them.

use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::{Api, Client, api::ListParams};
use kuberay_testenv::{TestNamespace, annotations};
use serde_json::{Value, json};

use crate::support::{
    apply, env, eventually, namespace, ray_api, rayclusters, sample, start_operator, status_of,
};

const WAIT: Duration = Duration::from_secs(150);

/// KubeRay's sample named `name`.
fn service(name: &str) -> Value {
    let text = std::fs::read_to_string(sample("ray-service.sample.yaml")).unwrap();
    let mut service: Value = serde_yaml::from_str(&text).unwrap();
    service["metadata"]["name"] = json!(name);
    service["spec"]["rayClusterDeletionDelaySeconds"] = json!(2);
    service
}

fn condition(status: &Value, type_: &str) -> Option<Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

/// The Warning Events recorded for the RayService `name`.
async fn warnings(client: &Client, ns: &TestNamespace, name: &str) -> Vec<(String, String)> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    let selector = format!("involvedObject.kind=RayService,involvedObject.name={name},type=Warning");
    let list = events
        .list(&ListParams::default().fields(&selector))
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    list.into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn broken_rayservices_say_why_and_a_healthy_one_next_to_them_becomes_ready() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "rayservice-bad").await;
    let operator = start_operator(env, &ns, crate::rayservice::options()).await;
    let api = ray_api(&client, &ns, "RayService", "rayservices");

    // Not YAML: the cluster comes up, nothing is sent to its head, the object says why.
    let mut bad_yaml = service("bad-yaml");
    bad_yaml["spec"]["serveConfigV2"] = json!("applications: [\n  - name: {unclosed");
    apply(&api, &bad_yaml).await;
    // The head never becomes ready: the initializing timeout fails the RayService.
    let mut stuck = service("stuck");
    stuck["metadata"]["annotations"] = json!({"ray.io/initializing-timeout": "20s"});
    stuck["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["metadata"] =
        json!({"annotations": {annotations::NOT_READY: "true"}});
    apply(&api, &stuck).await;
    apply(&api, &service("healthy")).await;

    let reconciled = eventually("bad-yaml to report its config", WAIT, || async {
        let status = status_of(&api, "bad-yaml").await?;
        let condition = condition(&status, "Reconciled")?;
        (condition["status"] == "False").then_some(condition)
    })
    .await;
    assert!(
        reconciled["message"]
            .as_str()
            .unwrap()
            .contains("serveConfigV2 is not valid YAML"),
        "{reconciled}"
    );
    eventually("a Warning Event for bad-yaml", WAIT, || async {
        let found = warnings(&client, &ns, "bad-yaml").await;
        found
            .iter()
            .any(|(reason, message)| {
                reason == "FailedToUpdateServeApplications" && message.contains("not valid YAML")
            })
            .then_some(())
    })
    .await;
    let status = status_of(&api, "bad-yaml").await.unwrap();
    assert_ne!(
        condition(&status, "Ready").map(|c| c["status"].clone()),
        Some(json!("True")),
        "{status}"
    );

    let ready = eventually("stuck to time out", WAIT, || async {
        let status = status_of(&api, "stuck").await?;
        let ready = condition(&status, "Ready")?;
        (ready["reason"] == "InitializingTimeout").then_some(ready)
    })
    .await;
    assert_eq!(ready["status"], "False", "{ready}");
    eventually("a Warning Event for stuck", WAIT, || async {
        let found = warnings(&client, &ns, "stuck").await;
        found
            .iter()
            .any(|(reason, _)| reason == "RayServiceInitializingTimeout")
            .then_some(())
    })
    .await;
    // Its cluster is deleted after the delay and no other is made.
    let clusters = rayclusters(&client, &ns);
    eventually("stuck's cluster to go", WAIT, || async {
        let list = clusters.list(&Default::default()).await.ok()?;
        let left = list.items.iter().any(|c| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("stuck-"))
        });
        (!left).then_some(())
    })
    .await;

    // The healthy one next to them.
    eventually("healthy to be ready", WAIT, || async {
        let status = status_of(&api, "healthy").await?;
        (condition(&status, "Ready")?["status"] == "True").then_some(())
    })
    .await;
    operator.stop().await;
}
