//! Plugins reach Ray heads only through the host, which picks the route: directly (head Service endpoints,
//! head Pod address) or, with `--use-kubernetes-proxy`, only through the API server's proxy subresources.
//! It refuses clusters the plugin's object neither is, owns nor selects, and paths that escape.

use std::time::Duration;

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kuberay_testenv::{fixtures::small_cluster, proxy_http::ProxyHttp};
use serde_json::{Value, json};

use crate::{
    containment::{chaos_api, install_chaos_crd_for_tests},
    isolated::{IsolatedOperator, never_direct, succeeded_on},
    support::{
        OperatorOptions, env, eventually, logged, namespace, rayclusters, ready_cluster, start_operator,
    },
};

/// This file's metrics port in the shared isolated network namespace.
const PORT: u16 = 18080;

async fn create_chaos(api: &kube::Api<DynamicObject>, name: &str, spec: Value) {
    let mut spec = spec;
    spec["behaviour"] = json!("ray");
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos", "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

/// The answer the chaos plugin recorded, once it has one.
async fn answer(api: &kube::Api<DynamicObject>, name: &str) -> (u64, String) {
    eventually(
        &format!("{name} to get an answer from its Ray head"),
        Duration::from_secs(90),
        || async {
            let object = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            Some((
                object["status"]["status"].as_u64()?,
                object["status"]["observed"].as_str()?.to_string(),
            ))
        },
    )
    .await
}

async fn failure(api: &kube::Api<DynamicObject>, name: &str) -> String {
    eventually(
        &format!("{name} to be reported"),
        Duration::from_secs(60),
        || async {
            let object = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            let condition = object["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Reconciled")?
                .clone();
            Some(condition["message"].as_str()?.to_string())
        },
    )
    .await
}

async fn routes_are_taken(proxy: bool) {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, if proxy { "route-proxy" } else { "route-direct" }).await;
    let options = OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::CHAOS,
        ],
        use_kubernetes_proxy: proxy,
        ..OperatorOptions::default()
    };
    let operator = start_operator(env, &ns, options).await;
    let chaos = chaos_api(&client, ns.name());

    create_chaos(&chaos, "svc", json!({"cluster": small_cluster()})).await;
    assert_eq!(answer(&chaos, "svc").await, (200, "success".to_string()));
    create_chaos(&chaos, "pod", json!({"cluster": small_cluster(), "via": "head-pod", "role": "dashboard-agent", "path": "/api/local_raylet_healthz"})).await;
    assert_eq!(answer(&chaos, "pod").await, (200, "success".to_string()));
    // Ray's own errors come back as answers (a 404 for an unknown job), not as host errors.
    create_chaos(
        &chaos,
        "missing",
        json!({"cluster": small_cluster(), "path": "/api/jobs/nope"}),
    )
    .await;
    assert_eq!(
        answer(&chaos, "missing").await,
        (404, "Job nope does not exist".to_string())
    );

    let prefix = if proxy { "proxy" } else { "direct" };
    assert!(
        operator.metric(
            "kuberay_wasm_ray_requests_total",
            &[&format!("route=\"{prefix}-service\""), "outcome=\"ok\""]
        ) >= 1.0
    );
    assert!(
        operator.metric(
            "kuberay_wasm_ray_requests_total",
            &[&format!("route=\"{prefix}-pod\""), "outcome=\"ok\""]
        ) >= 1.0
    );
    let other = if proxy { "direct" } else { "proxy" };
    assert_eq!(
        operator.metric("kuberay_wasm_ray_requests_total", &[&format!("route=\"{other}-")]),
        0.0
    );
    operator.stop().await;
}

#[tokio::test]
async fn direct_routing_reaches_the_head_service_and_pod() {
    routes_are_taken(false).await;
}

#[tokio::test]
async fn proxy_routing_reaches_the_head_service_and_pod() {
    routes_are_taken(true).await;
}

#[tokio::test]
async fn clusters_the_object_does_not_own_or_select_and_escaping_paths_are_refused() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "route-refused").await;
    let options = OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::CHAOS,
        ],
        ..OperatorOptions::default()
    };
    let operator = start_operator(env, &ns, options).await;
    let chaos = chaos_api(&client, ns.name());
    // A cluster nobody's Chaos object owns.
    let cluster = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "shared"}, "spec": small_cluster()});
    rayclusters(&client, &ns)
        .patch(
            "shared",
            &PatchParams::apply("kuberay-wasm-tests"),
            &Patch::Apply(&cluster),
        )
        .await
        .unwrap();
    ready_cluster(&client, &ns, "shared").await;

    create_chaos(&chaos, "foreign", json!({"target": "shared"})).await;
    let message = failure(&chaos, "foreign").await;
    assert!(
        message.contains("neither the reconciled object, nor owned by it, nor selected by it"),
        "{message}"
    );
    // Selecting it (as a RayJob's clusterSelector does) makes it reachable.
    create_chaos(
        &chaos,
        "selector",
        json!({"target": "shared", "clusterSelector": {"ray.io/cluster": "shared"}}),
    )
    .await;
    assert_eq!(answer(&chaos, "selector").await, (200, "success".to_string()));

    for (name, path) in [
        ("dotdot", "/api/../../api/v1/namespaces/kube-system/secrets"),
        ("encoded", "/api/%2e%2e/secrets"),
        ("double", "//api"),
    ] {
        create_chaos(
            &chaos,
            name,
            json!({"target": "shared", "clusterSelector": {"ray.io/cluster": "shared"}, "path": path}),
        )
        .await;
        let message = failure(&chaos, name).await;
        assert!(message.contains("refused path"), "{name}: {message}");
    }
    assert!(operator.metric("kuberay_wasm_refused_calls_total", &["verb=\"ray-send\""]) >= 4.0);
    operator.stop().await;
}
/// A request with a method outside the Ray sender's allow-list, or setting a header outside it (the
/// credentials header), never reaches the head: the reason is on the Chaos object's condition and in the
/// log, the refusal is counted under `ray-send`, and the object's own head (up and answering) records no
/// submission.
#[tokio::test]
async fn ray_requests_with_a_method_or_header_outside_the_allow_list_are_refused() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "route-method").await;
    let options = OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::CHAOS,
        ],
        ..OperatorOptions::default()
    };
    let operator = start_operator(env, &ns, options).await;
    let chaos = chaos_api(&client, ns.name());
    let methods = [("trace", "TRACE"), ("connect", "CONNECT")];
    for (name, method) in methods {
        let job = json!({"entrypoint": "echo sent", "submission_id": name}).to_string();
        let spec = json!({"cluster": small_cluster(), "method": method, "path": "/api/jobs/", "body": job});
        create_chaos(&chaos, name, spec).await;
    }
    // A job submission that sets the credentials header itself, which the host adds and a plugin may not.
    let job = json!({"entrypoint": "echo sent", "submission_id": "forged"}).to_string();
    let forged = json!({"cluster": small_cluster(), "method": "POST", "path": "/api/jobs/", "body": job,
        "headers": {"X-Ray-Authorization": "Bearer forged"}});
    create_chaos(&chaos, "forged", forged).await;

    for (name, method) in methods {
        let needle = format!("HTTP method \"{method}\" is not allowed (allowed: GET, POST");
        eventually(
            &format!("{name} to be refused"),
            Duration::from_secs(90),
            || async {
                let object = serde_json::to_value(chaos.get(name).await.ok()?).ok()?;
                let condition = object["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "Reconciled" && c["status"] == "False")?
                    .clone();
                condition["message"].as_str()?.contains(&needle).then_some(())
            },
        )
        .await;
        // In the log, the reason is quoted (`reason="..."`), so the method's quotes are escaped.
        let object = format!("object={}/{name}", ns.name());
        let reason = format!("HTTP method \\\"{method}\\\" is not allowed");
        logged(&["refused", "plugin=chaos", "verb=\"ray-send\"", &object, &reason]).await;
    }
    eventually("forged to be refused", Duration::from_secs(90), || async {
        let object = serde_json::to_value(chaos.get("forged").await.ok()?).ok()?;
        let condition = object["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Reconciled" && c["status"] == "False")?
            .clone();
        condition["message"]
            .as_str()?
            .contains("header \"X-Ray-Authorization\" may not be set")
            .then_some(())
    })
    .await;
    let object = format!("object={}/forged", ns.name());
    logged(&[
        "refused",
        "plugin=chaos",
        "verb=\"ray-send\"",
        &object,
        "may not be set",
    ])
    .await;
    assert!(
        operator.metric(
            "kuberay_wasm_refused_calls_total",
            &["plugin=\"chaos\"", "verb=\"ray-send\""]
        ) >= 3.0
    );
    // The heads come up, answer, and were sent nothing (the refusals came before routing, so the clusters
    // may still be starting).
    for name in ["trace", "connect", "forged"] {
        ready_cluster(&client, &ns, &format!("{name}-ray")).await;
        let head = ProxyHttp::service(
            client.clone(),
            ns.name(),
            &format!("{name}-ray-head-svc"),
            "dashboard",
        );
        let received = eventually(
            &format!("{name}'s head to answer"),
            Duration::from_secs(90),
            || async { head.get("/testenv/submissions").await.ok()?.json().ok() },
        )
        .await;
        assert_eq!(received, json!({}), "{name}'s head received a submission");
    }
    operator.stop().await;
}

#[tokio::test]
async fn an_operator_that_cannot_reach_pods_works_through_the_api_server_proxy_only() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let plugins = [
        kuberay_plugin_artifacts::RAYCLUSTER,
        kuberay_plugin_artifacts::CHAOS,
    ];

    // The namespace really is cut off from the Pods: the same operator in direct mode gets no answer.
    let direct_ns = namespace(env, "isolated-direct").await;
    let direct = IsolatedOperator::start(env, direct_ns.name(), &plugins, false, PORT);
    let chaos = chaos_api(&client, direct_ns.name());
    create_chaos(&chaos, "unreachable", json!({"cluster": small_cluster()})).await;
    ready_cluster(&client, &direct_ns, "unreachable-ray").await;
    let message = eventually("the direct request to fail", Duration::from_secs(60), || async {
        let object = serde_json::to_value(chaos.get("unreachable").await.ok()?).ok()?;
        let condition = object["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Reconciled")?
            .clone();
        let message = condition["message"].as_str()?.to_string();
        message.contains("connecting to").then_some(message)
    })
    .await;
    assert!(
        message.contains("unreachable") || message.contains("Network"),
        "{message}"
    );
    let ray_lines = direct.ray_requests().await;
    assert!(
        !ray_lines.iter().any(|l| l.contains("outcome=\"ok\"")),
        "{ray_lines:?}"
    );
    direct.stop().await;

    // Through the API server it works, and every request went through the proxy.
    let proxy_ns = namespace(env, "isolated-proxy").await;
    let proxied = IsolatedOperator::start(env, proxy_ns.name(), &plugins, true, PORT);
    let chaos = chaos_api(&client, proxy_ns.name());
    create_chaos(&chaos, "reachable", json!({"cluster": small_cluster()})).await;
    create_chaos(
        &chaos,
        "pod",
        json!({"cluster": small_cluster(), "via": "head-pod"}),
    )
    .await;
    assert_eq!(answer(&chaos, "reachable").await, (200, "success".to_string()));
    assert_eq!(answer(&chaos, "pod").await, (200, "success".to_string()));
    let ray_lines = proxied.ray_requests().await;
    assert!(succeeded_on(&ray_lines, "proxy-service"), "{ray_lines:?}");
    assert!(succeeded_on(&ray_lines, "proxy-pod"), "{ray_lines:?}");
    assert!(never_direct(&ray_lines), "{ray_lines:?}");
    proxied.stop().await;
}
