//! Job submissions over REST in both routing modes: straight to the head (the server in this process, which
//! reaches Pod addresses) and through the Kubernetes API server's `services/proxy` (the `kuberay-apiserver`
//! binary in a network namespace from which no Pod is reachable, with `--use-kubernetes-proxy`), on a
//! cluster created through the v1 API and on one with a custom head Service name.

use kube::Api;
use kuberay_apiserver::api;
use kuberay_testenv::HeadMode;
use serde_json::{Value, json};

use crate::{
    flows::{
        FAKE_READY, LONG, REAL_READY, Tenant, metric, metric_lines, ready_cluster, ready_ray_cluster,
        submission_flow,
    },
    grpc_flows::Clients,
    isolated::IsolatedServer,
    operator::Operator,
    support::{Server, cluster, env, expect, template},
};

const RAY_REQUESTS: &str = "kuberay_apiserver_ray_requests_total";

/// Checks that every request the server made to a Ray head took `route` and that some succeeded.
fn assert_only_route(metrics: &str, route: &str) {
    let lines = metric_lines(metrics, RAY_REQUESTS);
    let ok = metric(
        metrics,
        RAY_REQUESTS,
        &[&format!("route=\"{route}\""), "outcome=\"ok\""],
    );
    assert!(ok > 0.0, "no successful {route} request: {lines:?}");
    assert!(
        lines.iter().all(|l| l.contains(&format!("route=\"{route}\""))),
        "requests by another route than {route}: {lines:?}"
    );
}

#[tokio::test]
async fn job_submissions_run_on_a_real_head_directly_and_through_the_kubernetes_proxy() {
    let env = env().await;
    let tenant = Tenant::new(env, "rest-submissions", HeadMode::Real).await;
    let operator = Operator::start(env, &tenant.ns).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&tenant.user.token));
    let base = tenant.base();
    expect(
        rest.post(&format!("{base}/compute_templates"), &template("small", 1))
            .await,
        200,
    );
    expect(
        rest.post(
            &format!("{base}/clusters"),
            &cluster("jobs", "ray-user", "small", 0),
        )
        .await,
        200,
    );
    ready_cluster(&rest, &base, "jobs", REAL_READY).await;

    submission_flow(&rest, &base, "jobs", "direct", true).await;
    let (_, metrics) = server.rest(None).get("/metrics").await;
    assert_only_route(metrics.as_str().unwrap(), "direct-service");

    let proxied = IsolatedServer::start(env, &["--use-kubernetes-proxy"]).await;
    let proxy_rest = proxied.rest(Some(&tenant.user.token));
    submission_flow(&proxy_rest, &base, "jobs", "proxy", true).await;
    // Its gRPC port reaches the head the same way.
    let mut over_grpc = Clients::connect(proxied.grpc, Some(&tenant.user.token)).await;
    let listed = over_grpc
        .submissions
        .list_job_details(api::ListJobDetailsRequest {
            namespace: tenant.name().into(),
            clustername: "jobs".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        listed
            .submissions
            .iter()
            .any(|s| s.submission_id == "proxy-long" && s.status == "STOPPED"),
        "{listed:?}"
    );
    assert_only_route(&proxied.metrics().await, "proxy-service");

    // The same binary without the flag cannot reach the head from there.
    let cut_off = IsolatedServer::start(env, &[]).await;
    let refused = expect(
        cut_off
            .rest(Some(&tenant.user.token))
            .post(
                &format!("{base}/jobsubmissions/jobs"),
                &json!({"entrypoint": LONG}),
            )
            .await,
        503,
    );
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be reached"),
        "{refused}\n{}",
        cut_off.log().await
    );

    cut_off.stop().await;
    proxied.stop().await;
    server.stop().await.unwrap();
    tenant.remove(env).await;
    operator.stop().await;
}

/// A RayCluster whose head Service is named `service` (which KubeRay's apiserver cannot submit to: it always
/// dials `<cluster>-head-svc`), in the form a user posts to the `ray.io/v1` pass-through.
fn custom_head_cluster(name: &str, service: &str) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.9.0",
            "headGroupSpec": {
                "headService": {"metadata": {"name": service}},
                "rayStartParams": {"dashboard-host": "0.0.0.0"},
                "template": {"spec": {"containers": [{
                    "name": "ray-head", "image": "rayproject/ray:2.9.0",
                    "ports": [
                        {"containerPort": 6379, "name": "gcs-server"},
                        {"containerPort": 8265, "name": "dashboard"},
                        {"containerPort": 10001, "name": "client"},
                    ],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
                }]}},
            },
        },
    })
}

#[tokio::test]
async fn a_cluster_with_a_custom_head_service_name_accepts_submissions_in_both_modes() {
    let env = env().await;
    let tenant = Tenant::new(env, "custom-head", HeadMode::Fake).await;
    let operator = Operator::start(env, &tenant.ns).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&tenant.user.token));
    let base = tenant.base();

    let created = expect(
        rest.post(
            &format!("/apis/ray.io/v1/namespaces/{}/rayclusters", tenant.name()),
            &custom_head_cluster("custom", "my-head"),
        )
        .await,
        201,
    );
    assert_eq!(
        created["spec"]["headGroupSpec"]["headService"]["metadata"]["name"],
        "my-head"
    );
    let ready = ready_ray_cluster(env, tenant.name(), "custom", FAKE_READY).await;
    assert_eq!(ready["status"]["head"]["serviceName"], "my-head", "{ready}");
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(env.client().await.unwrap(), tenant.name());
    assert!(services.get_opt("my-head").await.unwrap().is_some());
    assert!(services.get_opt("custom-head-svc").await.unwrap().is_none());

    submission_flow(&rest, &base, "custom", "custom-direct", false).await;
    let proxied = IsolatedServer::start(env, &["--use-kubernetes-proxy"]).await;
    submission_flow(
        &proxied.rest(Some(&tenant.user.token)),
        &base,
        "custom",
        "custom-proxy",
        false,
    )
    .await;
    assert_only_route(&proxied.metrics().await, "proxy-service");

    proxied.stop().await;
    server.stop().await.unwrap();
    tenant.remove(env).await;
    operator.stop().await;
}

/// Submissions wait for a cluster that is not ready yet (and name it), rather than failing at the head.
#[tokio::test]
async fn submissions_to_a_cluster_that_is_not_ready_are_refused_with_a_reason() {
    let env = env().await;
    let tenant = Tenant::new(env, "not-ready", HeadMode::Fake).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&tenant.user.token));
    let base = tenant.base();
    expect(
        rest.post(&format!("{base}/compute_templates"), &template("small", 1))
            .await,
        200,
    );
    // No operator: the cluster never gets a state.
    expect(
        rest.post(
            &format!("{base}/clusters"),
            &cluster("idle", "ray-user", "small", 0),
        )
        .await,
        200,
    );
    let refused = expect(
        rest.post(
            &format!("{base}/jobsubmissions/idle"),
            &json!({"entrypoint": LONG}),
        )
        .await,
        400,
    );
    assert_eq!(refused["code"], 9, "FAILED_PRECONDITION: {refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not ready"),
        "{refused}"
    );
    let missing = expect(
        rest.post(
            &format!("{base}/jobsubmissions/nope"),
            &json!({"entrypoint": LONG}),
        )
        .await,
        404,
    );
    assert_eq!(missing["code"], 5, "{missing}");
    server.stop().await.unwrap();
    tenant.remove(env).await;
}
