//! The sandbox against a plugin that misbehaves on purpose (`tests/plugins/chaos`), with no cluster: each
//! test runs one reconcile of a `Chaos` object through `plugin run`'s engine (`authoring::run`), which loads,
//! grants and calls the component exactly as the operator does (same `Sandbox`, limits, budgets, grant
//! gate, log guard and admission) against an in-memory cluster. The component is compiled once into a
//! cache shared by the tests, so each test costs milliseconds. The end-to-end tests in `tests/all`
//! (`containment`, `limits`, `budgets`) check the same behaviours through a real API server, with the
//! conditions, Events and metrics a user sees.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on setup errors"
)]

use std::{path::PathBuf, sync::OnceLock, time::Duration};

use kuberay_wasm::{
    authoring::run::{CallResult, Report, RunOptions, run},
    sandbox::CallFailure,
};
use serde_json::{Value, json};

/// Where the chaos component is compiled once for all the tests of this binary.
fn cache_dir() -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
        .path()
        .join("compiled")
}

/// Runs one reconcile of a `Chaos` object with `spec` under the given call limits.
async fn chaos_with(spec: Value, timeout: Duration, memory_mib: usize) -> Report {
    // One reconcile compiles the component into the shared cache while the other tests wait; they load it.
    static COMPILED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    COMPILED
        .get_or_init(|| async {
            reconcile(json!({"behaviour": "ok"}), Duration::from_secs(30), 128).await;
        })
        .await;
    reconcile(spec, timeout, memory_mib).await
}

async fn reconcile(spec: Value, timeout: Duration, memory_mib: usize) -> Report {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let object = dir.path().join("chaos.yaml");
    let chaos = json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": "c", "namespace": "default", "uid": "11111111-2222-3333-4444-555555555555", "generation": 1},
        "spec": spec,
    });
    std::fs::write(&object, chaos.to_string()).unwrap();
    let options = RunOptions {
        plugin: PathBuf::from(kuberay_plugin_artifacts::CHAOS),
        object,
        objects: None,
        grant: None,
        policy: None,
        namespace_level: None,
        compiler: None,
        cache_dir: Some(cache_dir()),
        timeout,
        memory_bytes: memory_mib << 20,
    };
    run(&options).await.expect("a run of the chaos plugin")
}

/// A reconcile with the operator's default limits (30 s, 128 MiB).
async fn chaos(spec: Value) -> Report {
    chaos_with(spec, Duration::from_secs(30), 128).await
}

fn failure(report: &Report) -> &CallFailure {
    match &report.outcome {
        Some(Err(failure)) => failure,
        other => panic!("expected the call to fail, got {other:?}\n{report}"),
    }
}

fn succeeded(report: &Report) {
    assert!(
        matches!(report.outcome, Some(Ok(_))),
        "expected the call to succeed\n{report}"
    );
}

#[tokio::test]
async fn a_well_behaved_reconcile_writes_what_it_applied_and_its_status() {
    let report = chaos(json!({"behaviour": "ok"})).await;
    succeeded(&report);
    assert!(report.refusals().is_empty(), "{report}");
    let applied: Vec<_> = report.calls.iter().map(|c| (c.verb, c.target.as_str())).collect();
    assert!(applied.contains(&("apply", "c-ok")), "{applied:?}");
    assert!(report.diff.contains("c-ok"), "{}", report.diff);
    assert!(report.diff.contains("observed: ok"), "{}", report.diff);
}

#[tokio::test]
async fn a_plugin_that_spins_is_stopped_at_its_timeout() {
    let timeout = Duration::from_millis(300);
    let report = chaos_with(json!({"behaviour": "loop"}), timeout, 128).await;
    assert!(
        matches!(failure(&report), CallFailure::TimedOut(t) if *t == timeout),
        "{report}"
    );
}

#[tokio::test]
async fn a_plugin_that_hoards_memory_is_stopped_at_its_limit() {
    let report = chaos_with(json!({"behaviour": "oom"}), Duration::from_secs(30), 32).await;
    match failure(&report) {
        CallFailure::MemoryExceeded(asked) => assert!(*asked > 32 << 20, "asked for {asked} bytes"),
        other => panic!("expected MemoryExceeded, got {other:?}"),
    }
}

#[tokio::test]
async fn a_panic_is_a_trap_and_not_the_hosts() {
    let report = chaos(json!({"behaviour": "trap"})).await;
    assert!(matches!(failure(&report), CallFailure::Trapped(_)), "{report}");
    assert_eq!(failure(&report).to_string().lines().count(), 1, "{report}");
}

#[tokio::test]
async fn a_kind_the_plugin_never_asked_for_is_refused() {
    let report = chaos(json!({"behaviour": "ungranted"})).await;
    let refusals = report.refusals();
    assert!(
        refusals.iter().any(|r| r.starts_with("list v1/ServiceAccount")),
        "{refusals:?}"
    );
    assert!(
        failure(&report).to_string().contains("ServiceAccount"),
        "{report}"
    );
}

#[tokio::test]
async fn secrets_are_withheld_by_default() {
    let report = chaos(json!({"behaviour": "secret", "target": "token"})).await;
    let refusals = report.refusals();
    assert!(
        refusals.iter().any(|r| r.starts_with("get v1/Secret")),
        "{refusals:?}"
    );
    assert!(
        report.withheld.iter().any(|w| w.contains("Secret")),
        "{:?}",
        report.withheld
    );
}

#[tokio::test]
async fn a_write_outside_the_objects_namespace_is_refused() {
    let report = chaos(json!({"behaviour": "other-namespace", "target": "kube-system"})).await;
    let refusals = report.refusals();
    assert!(
        refusals.iter().any(|r| r.starts_with("create v1/ConfigMap")),
        "{refusals:?}"
    );
    assert!(!report.diff.contains("kube-system"), "{}", report.diff);
    assert!(report.write_refused.is_some(), "{report}");
}

#[tokio::test]
async fn a_flood_of_reads_is_stopped_by_the_call_budget() {
    let report = chaos(json!({"behaviour": "flood-reads"})).await;
    assert!(
        matches!(failure(&report), CallFailure::LimitExceeded(_)),
        "{report}"
    );
    let reads = report.calls.iter().filter(|c| c.verb == "get").count();
    assert!((1..100_000).contains(&reads), "{reads} reads");
}

#[tokio::test]
async fn a_flood_of_events_is_stopped_by_the_call_budget() {
    let report = chaos(json!({"behaviour": "flood-events"})).await;
    assert!(
        matches!(failure(&report), CallFailure::LimitExceeded(_)),
        "{report}"
    );
    assert!(report.events.len() <= 100, "{} events", report.events.len());
}

#[tokio::test]
async fn an_oversized_object_never_reaches_the_host() {
    let report = chaos(json!({"behaviour": "oversized-object"})).await;
    assert!(
        matches!(failure(&report), CallFailure::LimitExceeded(_)),
        "{report}"
    );
    assert!(
        !report
            .calls
            .iter()
            .any(|c| c.verb == "apply" && matches!(c.result, CallResult::Done(_))),
        "{report}"
    );
}

#[tokio::test]
async fn a_log_flood_is_cut_to_the_log_rate_and_the_reconcile_goes_on() {
    let report = chaos(json!({"behaviour": "flood-log"})).await;
    succeeded(&report);
    assert!(!report.logs.is_empty(), "{report}");
    assert!(report.logs.len() < 10_000, "{} log lines kept", report.logs.len());
    assert!(report.diff.contains("observed: flood-log"), "{}", report.diff);
}

#[tokio::test]
async fn a_forged_log_line_is_escaped() {
    let report = chaos(json!({"behaviour": "forge-log"})).await;
    succeeded(&report);
    assert!(!report.logs.is_empty(), "{report}");
    for line in &report.logs {
        assert!(
            !line.contains('\n') && !line.contains('\r') && !line.contains('\x1b'),
            "an unescaped log line: {line:?}"
        );
    }
}
