//! `upgradeStrategy: Recreate`: the head Pod carries KubeRay's own spec hash (checked against KubeRay's Go
//! code, `tests/kuberay-hash`, for the spec as the API server stores it), a replicas change re-creates
//! nothing, and a change of a Pod template deletes every Pod and brings the cluster back from the new spec.

use std::{collections::BTreeSet, path::Path, time::Duration};

use kube::api::{Patch, PatchParams};
use kuberay_testenv::TestNamespace;
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply, env, eventually, namespace, pods, rayclusters, ready_cluster, sample,
    start_operator,
};

const NAME: &str = "raycluster-kuberay";
const ALL_PODS: &str = "ray.io/cluster=raycluster-kuberay";
const HASH: &str = "ray.io/upgrade-strategy-recreate-hash";

/// KubeRay's hash of the cluster as the API server stores it, from the Go oracle; `None` (loudly) when the
/// oracle is not built, which CI does not allow.
async fn kuberay_hash(client: &kube::Client, ns: &TestNamespace) -> Option<String> {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.local/bin/kuberay-hash");
    if !oracle.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing",
            oracle.display()
        );
        eprintln!("skipped the comparison with KubeRay: `make kuberay-hash` builds the oracle");
        return None;
    }
    let live = serde_json::to_value(rayclusters(client, ns).get(NAME).await.unwrap()).unwrap();
    let file = std::env::temp_dir().join(format!("kuberay-wasm-recreate-{}.json", ns.name()));
    std::fs::write(&file, live.to_string()).unwrap();
    let out = std::process::Command::new(&oracle)
        .arg("hash")
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // `file kind name v17-hash v162-hash`: this operator follows KubeRay v1.7.
    let line = String::from_utf8(out.stdout).unwrap();
    Some(line.split_whitespace().nth(3).unwrap().to_string())
}

async fn pod_names(client: &kube::Client, ns: &TestNamespace) -> BTreeSet<String> {
    pods(client, ns, ALL_PODS)
        .await
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect()
}

async fn head_hash(client: &kube::Client, ns: &TestNamespace) -> Option<String> {
    let heads = pods(client, ns, &format!("{ALL_PODS},ray.io/node-type=head")).await;
    let [head] = heads.as_slice() else {
        return None;
    };
    head.metadata.annotations.as_ref()?.get(HASH).cloned()
}

#[tokio::test]
async fn recreate_keeps_kuberays_hash_and_recreates_every_pod_on_a_template_change() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "recreate").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    let text = std::fs::read_to_string(sample("ray-cluster.sample.yaml")).unwrap();
    let mut cluster: Value = serde_yaml::from_str(&text).unwrap();
    cluster["spec"]["upgradeStrategy"] = json!({"type": "Recreate"});
    let api = rayclusters(&client, &ns);
    apply(&api, &cluster).await;
    ready_cluster(&client, &ns, NAME).await;
    let first_hash = head_hash(&client, &ns).await.expect("the head Pod's hash");
    if let Some(expected) = kuberay_hash(&client, &ns).await {
        assert_eq!(first_hash, expected, "KubeRay would store another hash");
    }
    let first = pod_names(&client, &ns).await;
    assert_eq!(first.len(), 2, "{first:?}");

    // Replicas are left out of the hash: one more worker, nothing re-created.
    let replicas = json!([{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2}]);
    api.patch(
        NAME,
        &PatchParams::default(),
        &Patch::<Value>::Json(serde_json::from_value(replicas).unwrap()),
    )
    .await
    .unwrap();
    let scaled = eventually("a second worker", Duration::from_secs(60), || async {
        let names = pod_names(&client, &ns).await;
        (names.len() == 3).then_some(names)
    })
    .await;
    assert!(
        first.is_subset(&scaled),
        "a replicas change re-created Pods: {first:?} -> {scaled:?}"
    );
    assert_eq!(
        head_hash(&client, &ns).await.as_deref(),
        Some(first_hash.as_str())
    );

    // A template change: every Pod goes, the new ones carry the new spec and its hash.
    let env_var = json!([{"op": "add", "path": "/spec/headGroupSpec/template/spec/containers/0/env",
        "value": [{"name": "DEMO", "value": "recreated"}]}]);
    api.patch(
        NAME,
        &PatchParams::default(),
        &Patch::<Value>::Json(serde_json::from_value(env_var).unwrap()),
    )
    .await
    .unwrap();
    let second = eventually("every Pod re-created", Duration::from_secs(120), || async {
        let names = pod_names(&client, &ns).await;
        (names.len() == 3 && names.is_disjoint(&scaled)).then_some(names)
    })
    .await;
    ready_cluster(&client, &ns, NAME).await;
    let second_hash = head_hash(&client, &ns).await.expect("the new head Pod's hash");
    assert_ne!(second_hash, first_hash);
    if let Some(expected) = kuberay_hash(&client, &ns).await {
        assert_eq!(second_hash, expected, "KubeRay would store another hash");
    }
    assert_eq!(
        pod_names(&client, &ns).await,
        second,
        "Pods re-created more than once"
    );
    operator.stop().await;
}
