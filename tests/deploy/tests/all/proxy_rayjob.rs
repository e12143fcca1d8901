//! The chart in proxy routing (`routing: proxy`): the operator runs in its Pod with only the chart's RBAC
//! for that mode and brings a RayJob (HTTPMode, on a fake Ray head) to `Complete`, every request to the head
//! going through the API server's proxy subresources.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DynamicObject, PostParams};
use kuberay_testenv::{HeadMode, TestEnv, proxy_http::ProxyHttp};
use serde_json::json;

use crate::{
    incluster::{Operator, eventually, ray_api, ready_pods, small_cluster},
    tools,
};

/// The operator's Ray requests by route, from its metrics (read through the API server's Pod proxy).
async fn ray_requests(client: &kube::Client, pod: &Pod, route: &str) -> f64 {
    let namespace = pod.metadata.namespace.as_deref().unwrap();
    let name = pod.metadata.name.as_deref().unwrap();
    let metrics = ProxyHttp::pod(client.clone(), namespace, name, 8080)
        .get("/metrics")
        .await
        .unwrap();
    metrics
        .body
        .lines()
        .filter(|l| l.starts_with("kuberay_wasm_ray_requests") && l.contains(&format!("route=\"{route}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn in_proxy_routing_the_operator_in_its_pod_runs_a_rayjob_with_the_charts_rights() {
    let tools = tools();
    let env: &TestEnv = TestEnv::shared().await.unwrap();
    let client = env.client().await.unwrap();
    let release_ns = env.namespace("chart-proxy").await.unwrap();
    let work = env
        .namespace_with("chart-proxy-work", Some(HeadMode::Fake))
        .await
        .unwrap();
    let operator = Operator::install(
        &tools,
        env,
        release_ns.name(),
        work.name(),
        &["--set", "routing=proxy", "--set", "replicas=1"],
    );
    let pod = ready_pods(&client, release_ns.name(), 1).await.remove(0);

    let jobs = ray_api(&client, work.name(), "RayJob");
    let job: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "through-the-proxy"},
        "spec": {"submissionMode": "HTTPMode", "entrypoint": "echo hello", "rayClusterSpec": small_cluster()},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let status = eventually("the RayJob to complete", Duration::from_secs(180), || async {
        let status = jobs.get("through-the-proxy").await.ok()?.data["status"].clone();
        (status["jobDeploymentStatus"] == "Complete").then_some(status)
    })
    .await;
    assert_eq!(status["jobStatus"], "SUCCEEDED", "{status}");
    assert!(
        ray_requests(&client, &pod, "proxy-service").await > 0.0,
        "the Jobs API was reached through services/proxy"
    );
    for direct in ["direct-service", "direct-pod"] {
        assert_eq!(
            ray_requests(&client, &pod, direct).await,
            0.0,
            "no {direct} requests"
        );
    }

    operator.uninstall();
    work.delete(&client).await.unwrap();
    release_ns.delete(&client).await.unwrap();
}
