use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::{Pod, Service};
use kuberay_testenv::{annotations, proxy_http::ProxyHttp};
use serde_json::json;

use crate::util::{create, env, ready_pod};

#[tokio::test]
async fn service_and_pod_proxy_subresources_reach_the_pod_address() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("proxy").await.unwrap();
    let _: Pod = create(
        &client,
        &ns,
        json!({
            "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {annotations::HTTP_ECHO: "true"}},
            "spec": {"containers": [{"name": "web", "image": "echo", "ports": [{"name": "http", "containerPort": 8080}]}]},
        }),
    )
    .await;
    let _: Service = create(
        &client,
        &ns,
        json!({
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        }),
    )
    .await;
    let pod = ready_pod(&client, &ns, "web").await;
    let pod_ip: Ipv4Addr = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        !pod_ip.is_loopback() && !pod_ip.is_link_local(),
        "pod address {pod_ip}"
    );
    assert!(
        env.info().pod_subnet.starts_with("10."),
        "{}",
        env.info().pod_subnet
    );

    let via_pod = ProxyHttp::pod(client.clone(), ns.name(), "web", 8080)
        .get("/through/pod?x=1")
        .await
        .unwrap();
    assert_eq!(via_pod.status, 200, "{via_pod:?}");
    let echo = via_pod.json().unwrap();
    assert_eq!(echo["ip"], pod_ip.to_string());
    assert_eq!(echo["path"], "/through/pod");
    assert_eq!(echo["query"], "x=1");

    // The Service port is addressed by name, as KubeRay does (`<svc>:dashboard`); the Endpoints behind it
    // come from the endpoints controller seeing the Pod Ready.
    let service = ProxyHttp::service(client.clone(), ns.name(), "web", "http");
    let via_service = crate::util::eventually(
        "the service proxy to answer",
        std::time::Duration::from_secs(30),
        || async {
            let reply = service.get("/through/service").await.ok()?;
            (reply.status == 200).then_some(reply)
        },
    )
    .await;
    let echo = via_service.json().unwrap();
    assert_eq!(
        (echo["pod"].as_str(), echo["port"].as_u64()),
        (Some("web"), Some(8080))
    );
    assert_eq!(echo["path"], "/through/service");
    // The API server forwards as itself; the caller's credentials do not reach the pod.
    assert!(echo["headers"].get("authorization").is_none(), "{echo}");
}
