//! The RayCluster of a `SidecarMode` RayJob carries the submitter container in its head template, so the
//! RayCluster plugin's `ray.io/upgrade-strategy-recreate-hash` covers it. Its hash must be the one KubeRay's
//! RayCluster controller computes for the same cluster, checked against KubeRay's own Go code (the oracle of
//! `tests/kuberay-hash`; `make kuberay-hash` builds it, and the test fails without it). The submission id is part of that container (`--submission-id`, `RAY_JOB_SUBMISSION_ID`), so two
//! operators that each generate one get different hashes for the same RayJob; with `spec.jobId` they agree.

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use common::*;
use kuberay_crds::RayCluster;
use kuberay_plugin_sdk::serde_json::{self, Value, json};
use kuberay_rules::hash::recreate_hash;

fn oracle() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.local/bin/kuberay-hash");
    assert!(
        path.exists(),
        "{} is missing: `make kuberay-hash` builds it (`make test` does)",
        path.display()
    );
    path
}

/// KubeRay's hash of `cluster` (the oracle's v1.7 column).
fn kuberays_hash(oracle: &Path, cluster: &Value, file_name: &str) -> String {
    let file = std::env::temp_dir().join(format!("{}-{file_name}.json", std::process::id()));
    std::fs::write(&file, cluster.to_string()).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let output = Command::new(oracle)
        .arg("hash")
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", oracle.display()));
    let _ = std::fs::remove_file(&file);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let columns: Vec<&str> = stdout.trim_end().split('\t').collect();
    assert_eq!(columns.len(), 5, "{stdout}");
    columns[3].to_string()
}

/// The RayCluster the plugin creates for `job`, as stored.
fn created_cluster(job: Value) -> (Value, String) {
    let host = host(job);
    step(&host);
    step(&host);
    let name = cluster_name(&host);
    let cluster = get(&host, &ray_cluster_kind(), &name).unwrap_or_else(|| panic!("no cluster {name}"));
    (cluster, job_id(&host))
}

fn our_hash(cluster: &Value) -> String {
    let typed: RayCluster = serde_json::from_value(cluster.clone()).unwrap_or_else(|e| panic!("{e}"));
    recreate_hash(&typed.spec)
}

#[test]
fn the_sidecar_mode_cluster_hashes_as_kuberay_hashes_it() {
    let oracle = oracle();
    let (cluster, id) = created_cluster(sample("ray-job.sidecar-mode.yaml"));
    let args = cluster
        .pointer("/spec/headGroupSpec/template/spec/containers/1/args/0")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(args.contains(&format!("--submission-id {id}")), "{args}");
    assert_eq!(our_hash(&cluster), kuberays_hash(&oracle, &cluster, "sidecar"));
}

#[test]
fn the_submission_id_decides_the_hash_of_a_sidecar_mode_cluster() {
    let oracle = oracle();
    let with_id = |id: Option<&str>| {
        let mut job = sample("ray-job.sidecar-mode.yaml");
        if let Some(id) = id {
            job["spec"]["jobId"] = json!(id);
        }
        created_cluster(job).0
    };
    let (a, b) = (with_id(Some("my-job")), with_id(Some("my-job")));
    assert_eq!(our_hash(&a), our_hash(&b));
    assert_eq!(our_hash(&a), kuberays_hash(&oracle, &a, "fixed-id"));
    let generated = with_id(None);
    assert_ne!(our_hash(&a), our_hash(&generated));
}

#[test]
fn with_a_given_job_id_the_hash_is_kuberay_v1_7s() {
    // KubeRay v1.7.0's own code, built from its source, for this sample with `jobId: my-job`: the steps of
    // `constructRayClusterForRayJob` in SidecarMode (GetDefaultSubmitterContainer, BuildJobSubmitCommand,
    // GetContainerCommand, the three variables, `restartPolicy: Never`), the RayCluster reconciler's
    // defaulting, then GenerateHashWithoutReplicasAndWorkersToDelete.
    const KUBERAY: &str = "CTQJGFAHK8SNF4U41UQHG3D4TMQUNJJC";
    let mut job = sample("ray-job.sidecar-mode.yaml");
    job["spec"]["jobId"] = json!("my-job");
    let (mut cluster, id) = created_cluster(job);
    assert_eq!(id, "my-job");
    // That run took the sample as written; the API server fills in the worker groups' defaults, which the
    // plugin copies into the cluster as KubeRay does. Without them the cluster is the one KubeRay built.
    for group in cluster["spec"]["workerGroupSpecs"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        for defaulted in ["minReplicas", "maxReplicas", "numOfHosts"] {
            group.remove(defaulted);
        }
    }
    assert_eq!(our_hash(&cluster), KUBERAY);
}
