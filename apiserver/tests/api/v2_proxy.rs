//! KubeRay's apiserver v2 on the pass-through, end to end: a RayCluster posted as YAML with
//! `computeTemplate` on its groups is created sized by the template (KubeRay's compute-template
//! middleware), the operator brings it up, and its head's dashboard (Jobs API) answers through
//! `/api/v1/namespaces/{ns}/services/{service}/proxy/...` as the caller; what is refused is refused with
//! KubeRay's status and message.

use k8s_openapi::api::core::v1::Service;
use kube::{Api, api::PostParams};
use kuberay_testenv::HeadMode;
use serde_json::{Value, json};

use crate::{
    flows::{FAKE_READY, Tenant, ready_ray_cluster},
    operator::Operator,
    support::{Server, User, env, expect},
};

const TEMPLATE: &str = "sized";

/// Sends `body` as `content_type` with `token`; the status and the body (JSON, or the text).
async fn send(
    server: &Server,
    token: &str,
    method: reqwest::Method,
    path: &str,
    content_type: &str,
    body: String,
) -> (u16, Value) {
    let response = reqwest::Client::new()
        .request(method, format!("{}{path}", server.url()))
        .bearer_auth(token)
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// A GET with `token`; the status and the body.
async fn get(server: &Server, token: &str, path: &str) -> (u16, Value) {
    send(
        server,
        token,
        reqwest::Method::GET,
        path,
        "application/json",
        String::new(),
    )
    .await
}

/// A RayCluster as KubeRay's apiserversdk suite posts it: both groups name the template.
fn cluster_yaml(name: &str, template: &str) -> String {
    format!(
        "apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {name}
spec:
  headGroupSpec:
    computeTemplate: {template}
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
  workerGroupSpecs:
  - groupName: workers
    computeTemplate: {template}
    replicas: 0
    minReplicas: 0
    maxReplicas: 1
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
"
    )
}

#[tokio::test]
async fn compute_templates_size_posted_clusters_and_heads_answer_through_the_services_proxy() {
    let env = env().await;
    let tenant = Tenant::new(env, "v2-proxy", HeadMode::Fake).await;
    let ns = tenant.name().to_string();
    let operator = Operator::start(env, &tenant.ns).await;
    let server = Server::start(env, &[]).await;
    let token = tenant.user.token.as_str();
    let rest = server.rest(Some(token));
    expect(
        rest.post(
            &format!("{}/compute_templates", tenant.base()),
            &json!({"name": TEMPLATE, "cpu": 1, "memory": 2, "tolerations": [
                {"key": "ray.io/node-type", "operator": "Equal", "value": "head", "effect": "NoSchedule"}
            ]}),
        )
        .await,
        200,
    );
    let clusters = format!("/apis/ray.io/v1/namespaces/{ns}/rayclusters");

    // A template that does not exist: 422 with KubeRay's message, and nothing is created.
    let (status, refusal) = send(
        &server,
        token,
        reqwest::Method::POST,
        &clusters,
        "application/yaml",
        cluster_yaml("unsized", "missing"),
    )
    .await;
    assert_eq!(status, 422, "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(&format!(
                "Cannot get compute template for name 'missing' in namespace '{ns}', error:"
            ))),
        "{refusal}"
    );
    let (status, _) = rest.get(&format!("{clusters}/unsized")).await;
    assert_eq!(status, 404, "a refused cluster was created");
    // A body that is neither JSON nor YAML cannot be sized.
    let (status, refusal) = send(
        &server,
        token,
        reqwest::Method::POST,
        &clusters,
        "text/plain",
        cluster_yaml("plain", TEMPLATE),
    )
    .await;
    assert_eq!(status, 400, "{refusal}");

    // Posted as YAML, stored sized.
    let (status, created) = send(
        &server,
        token,
        reqwest::Method::POST,
        &clusters,
        "application/yaml",
        cluster_yaml("sized", TEMPLATE),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let sized = json!({"cpu": "1", "memory": "2Gi"});
    for group in ["/spec/headGroupSpec", "/spec/workerGroupSpecs/0"] {
        let template = &created.pointer(&format!("{group}/template")).unwrap();
        assert_eq!(
            template["metadata"]["annotations"]["ray.io/compute-template"],
            TEMPLATE
        );
        let resources = &template["spec"]["containers"][0]["resources"];
        assert_eq!(
            (&resources["limits"], &resources["requests"]),
            (&sized, &sized),
            "{group}"
        );
        assert_eq!(template["spec"]["tolerations"][0]["value"], "head", "{group}");
        assert!(
            created.pointer(&format!("{group}/computeTemplate")).is_none(),
            "not pruned"
        );
    }

    // Its head answers through the Services proxy, as the caller.
    ready_ray_cluster(env, &ns, "sized", FAKE_READY).await;
    let proxy = format!("/api/v1/namespaces/{ns}/services/http:sized-head-svc:8265/proxy");
    let (status, version) = rest.get(&format!("{proxy}/api/version")).await;
    assert_eq!(status, 200, "{version}");
    assert!(version["ray_version"].is_string(), "{version}");
    let (status, submitted) = rest
        .post(&format!("{proxy}/api/jobs/"), &json!({"entrypoint": "echo hi"}))
        .await;
    assert_eq!(status, 200, "{submitted}");
    let id = submitted["submission_id"].as_str().expect("a submission id");
    let (status, job) = rest.get(&format!("{proxy}/api/jobs/{id}")).await;
    assert_eq!((status, &job["entrypoint"]), (200, &json!("echo hi")), "{job}");

    // A Service KubeRay did not make is not reachable, even for an administrator's token.
    let admin = env.client().await.unwrap();
    let plain: Service = serde_json::from_value(json!({
        "metadata": {"name": "not-ray"},
        "spec": {"ports": [{"port": 8265}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(admin, &ns)
        .create(&PostParams::default(), &plain)
        .await
        .unwrap();
    let (status, refusal) = rest
        .get(&format!("/api/v1/namespaces/{ns}/services/not-ray:8265/proxy/"))
        .await;
    assert_eq!(status, 404, "{refusal}");
    assert_eq!(refusal["message"], "kuberay service not found");
    // A malformed Service segment, and a caller without rights in the namespace.
    let (status, refusal) = rest
        .get(&format!(
            "/api/v1/namespaces/{ns}/services/ftp:sized-head-svc:8265/proxy/"
        ))
        .await;
    assert_eq!(status, 400, "{refusal}");
    let outsider = server.rest(Some(&User::named(env, "bob").token));
    let (status, refusal) = outsider.get(&format!("{proxy}/api/version")).await;
    assert_eq!(status, 403, "{refusal}");
    // Without credentials nothing is forwarded.
    let (status, _) = server.rest(None).get(&format!("{proxy}/api/version")).await;
    assert_eq!(status, 401);

    drop(operator);
    tenant.remove(env).await;
}

#[tokio::test]
async fn without_api_server_v2_the_pass_through_and_the_services_proxy_are_not_served() {
    let env = env().await;
    let server = Server::start(env, &["--enable-api-server-v2=false"]).await;
    let admin = env.info().identities.admin.token.clone();
    let (status, _) = send(
        &server,
        &admin,
        reqwest::Method::POST,
        "/apis/ray.io/v1/namespaces/default/rayclusters",
        "application/yaml",
        cluster_yaml("not-served", TEMPLATE),
    )
    .await;
    assert_eq!(status, 404, "the pass-through is off");
    let (status, _) = get(
        &server,
        &admin,
        "/api/v1/namespaces/default/services/anything:8265/proxy/api/version",
    )
    .await;
    assert_eq!(status, 404, "the Services proxy is off");
    let (status, document) = get(&server, &admin, "/openapi.json").await;
    assert_eq!(status, 200);
    let paths: Vec<&String> = document["paths"].as_object().expect("paths").keys().collect();
    assert!(
        paths
            .iter()
            .all(|p| !p.starts_with("/apis/ray.io") && !p.contains("/proxy")),
        "{paths:?}"
    );
    // The v1 API is still served.
    let (status, body) = get(&server, &admin, "/apis/v1/namespaces/default/compute_templates").await;
    assert_eq!(status, 200, "{body}");
    server.stop().await.unwrap();
}
