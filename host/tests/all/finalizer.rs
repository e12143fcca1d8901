//! The finalizer is the policy's: a plugin that declares one its entry does not name is not loaded
//! (`finalizer-not-allowed`), and `kuberay-wasm inspect` shows the granted one.

use std::time::Duration;

use kuberay_wasm::policy::Policy;

use crate::support::{
    CHAOS_ENTRY, OperatorOptions, env, eventually, install_plugin, logged, namespace, scratch_dir,
    start_operator,
};

const RAYCLUSTER_FINALIZER: &str = "  finalizer: ray.io/gcs-ft-redis-cleanup-finalizer\n";

#[tokio::test]
async fn a_plugin_declaring_a_finalizer_its_entry_does_not_name_is_not_loaded() {
    let env = env().await;
    let ns = namespace(env, "finalizer").await;
    let builtin = include_str!("../../deploy/policy.yaml");
    assert!(builtin.contains(RAYCLUSTER_FINALIZER));
    let policy = Policy::parse(&format!(
        "{}{CHAOS_ENTRY}",
        builtin.replace(RAYCLUSTER_FINALIZER, "")
    ))
    .unwrap();
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            policy: Some(policy),
            ..OperatorOptions::default()
        },
    )
    .await;
    eventually(
        "the plugins to be loaded or refused",
        Duration::from_secs(60),
        || async { (operator.metric("kuberay_wasm_plugins_loaded", &[]) >= 1.0).then_some(()) },
    )
    .await;
    assert_eq!(
        operator.metric(
            "kuberay_wasm_plugin_refusals_total",
            &["plugin=\"raycluster\"", "reason=\"finalizer-not-allowed\""]
        ),
        1.0
    );
    // The chaos plugin, which declares none, runs; the RayCluster plugin does not.
    assert_eq!(operator.metric("kuberay_wasm_plugins_loaded", &[]), 1.0);
    logged(&[
        "raycluster.wasm",
        "ray.io/gcs-ft-redis-cleanup-finalizer",
        "the policy allows none",
    ])
    .await;
    operator.stop().await;
}

#[test]
fn inspect_shows_the_granted_finalizer_and_budget() {
    let dir = scratch_dir("inspect");
    let plugin = install_plugin(&dir, kuberay_plugin_artifacts::RAYJOB);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
        .args(["--log-format", "text", "inspect"])
        .arg(&plugin)
        .output()
        .expect("running kuberay-wasm inspect");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("finalizer:   ray.io/rayjob-finalizer"),
        "{stdout}"
    );
    assert!(stdout.contains("8388608 bytes written"), "{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}
