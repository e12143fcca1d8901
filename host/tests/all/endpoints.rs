//! The operator's HTTP endpoints: `/healthz`, `/readyz` once plugins are loaded and caches synced, and
//! `/metrics` in the Prometheus text format.

use std::time::Duration;

use kuberay_testenv::workloads::real_ray::http_get;

use crate::support::{OperatorOptions, env, eventually, namespace, start_operator};

#[tokio::test]
async fn health_readiness_and_metrics_are_served() {
    let env = env().await;
    let ns = namespace(env, "endpoints").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    let url = |addr: std::net::SocketAddr, path: &str| format!("http://{addr}{path}");
    let ready = eventually("/readyz to answer ok", Duration::from_secs(60), || async {
        http_get(&url(operator.health_addr, "/readyz"), Duration::from_secs(2)).await
    })
    .await;
    assert_eq!(ready, "ok");
    assert_eq!(
        http_get(&url(operator.health_addr, "/healthz"), Duration::from_secs(2))
            .await
            .as_deref(),
        Some("ok")
    );
    let metrics = http_get(&url(operator.metrics_addr, "/metrics"), Duration::from_secs(2))
        .await
        .expect("/metrics");
    assert!(metrics.contains("kuberay_wasm_plugins_loaded 1"), "{metrics}");
    // The families a KubeRay operator exports besides its own (kuberay_samples.rs checks them all with data).
    for series in [
        r#"controller_runtime_max_concurrent_reconciles{controller="raycluster"}"#,
        r#"workqueue_depth{name="raycluster",controller="raycluster"}"#,
        r#"rest_client_requests_total{code="200",method="GET",host=""#,
        "process_resident_memory_bytes ",
        "process_open_fds ",
    ] {
        assert!(metrics.contains(series), "{series} missing in {metrics}");
    }
    // client-go's `host` label is the API server's address, though kube's requests carry only a path until
    // its innermost layer.
    let get = r#"rest_client_requests_total{code="200",method="GET",host=""#;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with(get) && !l[get.len()..].starts_with('"')),
        "no API server host in {metrics}"
    );
    // Compiled, or loaded from the compiled-plugin cache the tests share (compile_cache.rs tells them apart).
    assert_eq!(
        operator.metric("kuberay_wasm_plugin_loads_total", &["plugin=\"raycluster\""]),
        1.0,
        "{metrics}"
    );
    let health = operator.health_addr;
    operator.stop().await;
    // A stopped operator no longer answers.
    assert!(
        tokio::net::TcpStream::connect(health).await.is_err(),
        "the health endpoint outlived the operator"
    );
}
