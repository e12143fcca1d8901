//! `Recreate` upgrades across a change of operator: the head Pod carries the spec hash KubeRay computes,
//! so Pods KubeRay created are kept when their spec did not change, and replaced when it did.

#![allow(clippy::unwrap_used, reason = "a test fails loudly on any unexpected error")]

mod common;

use std::{path::Path, process::Command};

use common::*;
use kuberay_plugin_sdk::serde_json::{self, Value, json};

const HASH: &str = "ray.io/upgrade-strategy-recreate-hash";
const VERSION: &str = "ray.io/kuberay-version";

fn recreating(replicas: i32) -> Value {
    let mut cluster = sample(replicas);
    cluster["spec"]["upgradeStrategy"] = json!({"type": "Recreate"});
    cluster
}

fn head_annotation(host: &kuberay_plugin_sdk::testing::FakeHost, key: &str) -> Value {
    heads(host)[0]["metadata"]["annotations"][key].clone()
}

/// KubeRay's own hash of a RayCluster manifest, from the oracle of `tests/kuberay-hash` (`make kuberay-hash`
/// builds it; the test fails without it).
fn kuberays_hash(cluster: &Value) -> String {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.local/bin/kuberay-hash");
    assert!(
        oracle.exists(),
        "{} is missing: `make kuberay-hash` builds it (`make test` does)",
        oracle.display()
    );
    // Tests run at once: one file per call.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!("kuberay-hash-upgrade-{}-{call}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_vec(cluster).unwrap()).unwrap();
    let output = Command::new(oracle).arg("hash").arg(&file).output().unwrap();
    std::fs::remove_file(&file).unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = String::from_utf8(output.stdout).unwrap();
    line.split('\t')
        .nth(3)
        .unwrap_or_else(|| panic!("no hash column in the oracle's line {line:?}"))
        .to_string()
}

#[test]
fn the_head_carries_kuberays_hash_of_the_spec() {
    let cluster = recreating(1);
    let host = host(cluster.clone());
    settle(&host, 3);
    let hash = head_annotation(&host, HASH);
    let spec = serde_json::from_value(cluster["spec"].clone()).unwrap();
    assert_eq!(hash, kuberay_rules::hash::recreate_hash(&spec));
    assert_eq!(head_annotation(&host, VERSION), "v1.7.0");
    assert_eq!(hash, kuberays_hash(&cluster));
}

#[test]
fn pods_with_the_current_hash_are_kept_and_others_replaced() {
    let host = running(recreating(2));
    let head = name(&heads(&host)[0]);

    // What a KubeRay of the same version left with the same spec: nothing to do.
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(deletes(&host).is_empty());

    // A spec KubeRay saw differently: every Pod goes.
    host.update(&pod_kind(), &head, |p| {
        p["metadata"]["annotations"][HASH] = json!("ANOTHER-SPEC")
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 3);
}

#[test]
fn pods_of_another_operator_version_are_kept_and_stamped_with_this_one() {
    let host = host(recreating(1));
    settle(&host, 3);
    let head = name(&heads(&host)[0]);
    host.update(&pod_kind(), &head, |p| {
        p["metadata"]["annotations"][HASH] = json!("HASH-OF-AN-OLDER-KUBERAY");
        p["metadata"]["annotations"][VERSION] = json!("v1.5.1");
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(deletes(&host).is_empty());
    // As KubeRay does, the head is stamped with this version and the spec's hash instead...
    assert_eq!(
        head_annotation(&host, VERSION),
        json!(kuberay_rules::consts::KUBERAY_VERSION)
    );
    let cluster = host.primary();
    assert_eq!(head_annotation(&host, HASH), json!(kuberays_hash(&cluster)));
    // ...so that the next change of the spec re-creates the Pods (a cluster taken over from KubeRay).
    edit(&host, |c| {
        c["spec"]["headGroupSpec"]["template"]["metadata"] = json!({"labels": {"team": "b"}})
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 2);
}
