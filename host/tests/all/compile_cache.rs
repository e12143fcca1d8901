//! A restart loads plugins from the compiled-plugin cache instead of compiling them again.

use crate::support::{
    OperatorOptions, apply_manifest, env, namespace, ready_cluster, sample, scratch_dir, start_operator,
};

#[tokio::test]
async fn a_restart_reuses_the_compiled_plugin_cache() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "cache").await;
    let first = start_operator(
        env,
        &ns,
        OperatorOptions {
            cache_dir: Some(scratch_dir("cache")),
            ..OperatorOptions::default()
        },
    )
    .await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    assert_eq!(
        first.metric("kuberay_wasm_plugin_loads_total", &["source=\"compiled\""]),
        1.0
    );
    assert_eq!(
        first.metric("kuberay_wasm_plugin_loads_total", &["source=\"cache\""]),
        0.0
    );
    let cache_dir = first.cache_dir.clone();
    let entries = std::fs::read_dir(&cache_dir)
        .unwrap()
        .filter_map(Result::ok)
        .count();
    assert_eq!(entries, 2, "one compiled artifact and its checksum");
    first.stop().await;

    let second = start_operator(
        env,
        &ns,
        OperatorOptions {
            cache_dir: Some(cache_dir.clone()),
            ..OperatorOptions::default()
        },
    )
    .await;
    crate::support::eventually(
        "the plugin to load",
        std::time::Duration::from_secs(30),
        || async { (second.metric("kuberay_wasm_plugin_loads_total", &[]) >= 1.0).then_some(()) },
    )
    .await;
    assert_eq!(
        second.metric("kuberay_wasm_plugin_loads_total", &["source=\"cache\""]),
        1.0
    );
    assert_eq!(
        second.metric("kuberay_wasm_plugin_loads_total", &["source=\"compiled\""]),
        0.0
    );
    // The cached plugin works: the cluster is still reconciled to ready.
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    second.stop().await;
    let _ = std::fs::remove_dir_all(cache_dir);
}
