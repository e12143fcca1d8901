//! `gcsFaultToleranceOptions.backend: rocksdb` under the `GCSFaultToleranceEmbeddedStorage` gate, on the
//! judged FakeHost: the claim, the head's variables, volume and mount, and KubeRay v1.7's events and
//! validation messages for the same input (`reconcileGCSStoragePVC`, `configureEmbeddedFT`,
//! `validateGcsFaultToleranceBackend`).

#![allow(clippy::unwrap_used, reason = "a test fails loudly on any unexpected error")]

mod common;

use common::*;
use kuberay_plugin_sdk::{
    EventType, Kind, ReconcileError,
    serde_json::{Value, json},
    testing::FakeHost,
};

const CLAIM: &str = "raycluster-sample-gcs-pvc";

fn claim_kind() -> Kind {
    Kind::new("", "v1", "PersistentVolumeClaim")
}

/// The judged host with the gate set as `on`.
fn gated(cluster: Value, on: bool) -> FakeHost {
    let host = host(cluster);
    let mut config = kuberay_plugin_sdk::Host::config(&host);
    config.insert(
        "featureGates".into(),
        json!({"GCSFaultToleranceEmbeddedStorage": on}),
    );
    host.with_config(Value::Object(config))
}

/// The sample cluster on the embedded backend with `storage`.
fn embedded(storage: Value) -> Value {
    let mut c = sample(1);
    c["spec"]["gcsFaultToleranceOptions"] = json!({"backend": "rocksdb", "storage": storage});
    c
}

fn claims(host: &FakeHost) -> Vec<Value> {
    host.objects(&claim_kind())
}

fn warnings(host: &FakeHost, reason: &str) -> Vec<String> {
    host.events()
        .into_iter()
        .filter(|e| e.event_type == EventType::Warning && e.reason == reason)
        .map(|e| e.note)
        .collect()
}

fn head_container(host: &FakeHost) -> Value {
    heads(host)[0]["spec"]["containers"][0].clone()
}

#[test]
fn the_operator_creates_the_claim_once_and_mounts_it_on_the_head() {
    let host = gated(embedded(json!({"size": "2Gi", "subPath": "gcs"})), true);
    reconcile(&host).unwrap();
    let [claim] = claims(&host).try_into().unwrap();
    assert_eq!(name(&claim), CLAIM);
    assert_eq!(claim["metadata"]["namespace"], NS);
    assert_eq!(claim["metadata"]["labels"], json!({"ray.io/cluster": NAME}));
    let owner = &claim["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["uid"].clone(), owner["controller"].clone()),
        (json!("cluster-uid"), json!(true))
    );
    assert_eq!(
        claim["spec"],
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}})
    );
    let created: Vec<(String, String)> = host
        .events()
        .into_iter()
        .filter(|e| e.reason == "CreatedPVC")
        .map(|e| (e.action, e.note))
        .collect();
    assert_eq!(
        created,
        [("Create".into(), format!("Created GCS storage PVC {NS}/{CLAIM}"))]
    );

    let head = &heads(&host)[0];
    let ray = head_container(&host);
    assert_eq!(env_value(&ray, "RAY_gcs_storage").unwrap()["value"], "rocksdb");
    assert_eq!(
        env_value(&ray, "RAY_gcs_storage_path").unwrap()["value"],
        "/data/gcs"
    );
    assert_eq!(env_value(&ray, "RAY_REDIS_ADDRESS"), None);
    assert!(
        ray["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "gcs-storage", "mountPath": "/data/gcs", "subPath": "gcs"})),
        "{ray}"
    );
    assert!(
        head["spec"]["volumes"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "gcs-storage", "persistentVolumeClaim": {"claimName": CLAIM}})),
        "{head}"
    );
    assert_eq!(head["metadata"]["annotations"]["ray.io/ft-enabled"], "true");
    assert!(
        head["metadata"]["annotations"]
            .get("ray.io/external-storage-namespace")
            .is_none()
    );
    let worker = &workers(&host)[0]["spec"]["containers"][0];
    assert_eq!(
        env_value(worker, "RAY_gcs_rpc_server_reconnect_timeout_s").unwrap()["value"],
        "600"
    );

    // No Redis, so no clean-up finalizer; and nothing is written for the claim again.
    assert!(host.primary()["metadata"].get("finalizers").is_none());
    host.clear_writes();
    reconcile(&host).unwrap();
    assert!(
        host.writes()
            .iter()
            .all(|w| !format!("{w:?}").contains("PersistentVolumeClaim")),
        "{:?}",
        host.writes()
    );
    assert!(warnings(&host, "FailedToCreatePVC").is_empty());
}

#[test]
fn a_changed_size_class_or_access_mode_is_reported_not_applied() {
    let host = gated(embedded(json!({"size": "1Gi"})), true);
    reconcile(&host).unwrap();
    let mut cluster = host.primary();
    cluster["spec"]["gcsFaultToleranceOptions"]["storage"] = json!({
        "size": "1024Mi", "storageClassName": "fast", "accessModes": ["ReadWriteMany"]
    });
    host.set_primary(cluster);
    host.clear_writes();
    reconcile(&host).unwrap();
    let notes = warnings(&host, "FailedToCreatePVC");
    // 1024Mi is 1Gi: only the class and the access modes differ.
    assert_eq!(
        notes,
        [format!(
            "GCS storage PVC {NS}/{CLAIM} already exists and cannot be reconfigured in place (storageClassName \
             fast != current <default>; accessModes [\"ReadWriteMany\"] != current [\"ReadWriteOnce\"]); delete \
             the PVC to recreate it with the new settings"
        )]
    );
    assert_eq!(claims(&host)[0]["spec"]["accessModes"], json!(["ReadWriteOnce"]));
}

#[test]
fn a_claim_the_user_names_is_mounted_and_never_created() {
    let host = gated(embedded(json!({"claimName": "my-gcs"})), true);
    reconcile(&host).unwrap();
    assert!(claims(&host).is_empty());
    assert_eq!(
        warnings(&host, "FailedToCreatePVC"),
        [format!(
            "GcsFaultToleranceOptions.Storage.ClaimName \"my-gcs\" not found in namespace {NS}; the head Pod \
             will not start until it exists"
        )]
    );
    // The user's request names the claim, so the head may mount it.
    let head = &heads(&host)[0];
    assert!(
        head["spec"]["volumes"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "my-gcs"}})),
        "{head}"
    );

    let host = gated(embedded(json!({"claimName": "my-gcs"})), true);
    host.insert(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "my-gcs", "namespace": NS}, "spec": {"accessModes": ["ReadWriteMany"]}}));
    reconcile(&host).unwrap();
    assert!(warnings(&host, "FailedToCreatePVC").is_empty());
    assert_eq!(claims(&host).len(), 1);
}

#[test]
fn a_claim_of_that_name_the_cluster_does_not_control_stops_the_reconcile_with_the_reason() {
    let host = gated(embedded(json!({})), true);
    host.insert(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": CLAIM, "namespace": NS}, "spec": {}}));
    reconcile(&host).unwrap();
    let notes = warnings(&host, "FailedToCreatePVC");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("is not controlled by this RayCluster"),
        "{notes:?}"
    );
    assert!(heads(&host).is_empty());
}

fn refused(cluster: Value, on: bool, contains: &str) {
    let host = gated(cluster, on);
    let result = reconcile(&host);
    let Err(ReconcileError::InvalidObject(message)) = result else {
        panic!("expected InvalidObject, got {result:?}");
    };
    assert!(
        message.contains(contains),
        "{message:?} should contain {contains:?}"
    );
    assert!(claims(&host).is_empty());
    assert!(pods(&host).is_empty());
}

#[test]
fn kuberays_backend_rules_refuse_what_the_embedded_store_cannot_take() {
    refused(
        embedded(json!({})),
        false,
        "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled",
    );
    let mut c = embedded(json!({}));
    c["spec"]["gcsFaultToleranceOptions"]["redisAddress"] = json!("redis:6379");
    refused(
        c,
        true,
        "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'",
    );
    let mut c = embedded(json!({}));
    c["spec"]["gcsFaultToleranceOptions"]["externalStorageNamespace"] = json!("ns");
    refused(
        c,
        true,
        "cannot set GcsFaultToleranceOptions.ExternalStorageNamespace when backend is 'rocksdb'",
    );
    refused(
        embedded(json!({"claimName": "mine", "size": "1Gi"})),
        true,
        "ClaimName is mutually exclusive with size, storageClassName, and accessModes",
    );
    let mut c = embedded(json!({}));
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "RAY_gcs_storage_path", "value": "/x"}]);
    refused(
        c,
        true,
        "cannot set `RAY_gcs_storage` or `RAY_gcs_storage_path` env var",
    );
    let mut c = embedded(json!({}));
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "data", "mountPath": "/data/gcs"}]);
    refused(
        c,
        true,
        "cannot set a volume mount named \"gcs-storage\" or mounted at /data/gcs",
    );
    let mut c = embedded(json!({}));
    c["spec"]["headGroupSpec"]["template"]["spec"]["volumes"] =
        json!([{"name": "gcs-storage", "emptyDir": {}}]);
    refused(
        c,
        true,
        "cannot set a volume named \"gcs-storage\" in the head Pod",
    );
    refused(
        embedded(json!({"deletionPolicy": "Retain"})),
        true,
        "DeletionPolicy 'Retain' is not supported by kuberay-wasm",
    );
    let mut c = sample(1);
    c["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "redis:6379", "storage": {"size": "1Gi"}});
    refused(
        c,
        true,
        "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis'",
    );
}
