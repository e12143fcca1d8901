use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Api;

use crate::util::{env, eventually};

#[tokio::test]
async fn api_server_is_ready_and_reports_its_release() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let readyz = client
        .request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(readyz.trim(), "ok");
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "36"),
        "{version:?}"
    );
    assert!(version.git_version.starts_with("v1.36."), "{version:?}");
}

#[tokio::test]
async fn simulated_node_is_registered_and_ready() {
    let env = env().await;
    let nodes: Api<Node> = Api::all(env.client().await.unwrap());
    let node = eventually("the simulated node", Duration::from_secs(30), || async {
        nodes.get_opt(&env.info().node_name).await.ok().flatten()
    })
    .await;
    let ready = node.status.as_ref().and_then(|s| s.conditions.as_ref()).unwrap();
    assert!(
        ready.iter().any(|c| c.type_ == "Ready" && c.status == "True"),
        "{ready:?}"
    );
    let addresses = node.status.as_ref().and_then(|s| s.addresses.as_ref()).unwrap();
    assert!(
        addresses
            .iter()
            .any(|a| a.type_ == "InternalIP" && a.address == env.info().host_ip)
    );

    // The kubectl built alongside the control plane sees it too.
    let out = env
        .kubectl()
        .unwrap()
        .args(["get", "nodes", "--no-headers"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&env.info().node_name) && text.contains("Ready"),
        "{text}"
    );
}
