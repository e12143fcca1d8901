//! The generated CRDs on a real API server: they install, accept every `ray.io` object of KubeRay's samples,
//! refuse what KubeRay's CRDs refuse, apply KubeRay's defaults, and let server-side apply merge status
//! conditions. Also the check that keeps `src/crd/kubernetes.json` in step with the API server.
//!
//! Needs root and the control-plane binaries in `.local/` (see README.md); the first test starts a private
//! control plane for this binary, or uses a running `make cluster`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

use std::path::{Path, PathBuf};

use k8s_openapi::{NamespaceResourceScope, Resource};
use kube::{
    Api, Client,
    api::{DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams},
    discovery::ApiResource,
};
use kuberay_crds::{RayCluster, RayCronJob, RayJob, RayService, crd};
use kuberay_testenv::TestEnv;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// The shared environment with the CRDs installed.
async fn env() -> &'static TestEnv {
    let env = match TestEnv::shared().await {
        Ok(env) => env,
        Err(e) => panic!("test environment unavailable: {e}"),
    };
    env.install_crds().await.unwrap();
    env
}

fn dynamic_api(client: Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    let plural = format!("{}s", kind.to_lowercase());
    let gvk = GroupVersionKind::gvk("ray.io", "v1", kind);
    Api::namespaced_with(client, ns, &ApiResource::from_gvk_with_plural(&gvk, &plural))
}

fn samples() -> Vec<(String, Value)> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kuberay-samples");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    let mut docs = Vec::new();
    for file in files {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value: Value = serde::Deserialize::deserialize(doc).unwrap();
            if value["apiVersion"] == "ray.io/v1" {
                docs.push((name.clone(), value));
            }
        }
    }
    docs
}

/// The sample with a name unique in the namespace (samples share names, some only have a `generateName`)
/// and without a namespace of its own.
fn prepared(index: usize, mut doc: Value) -> Value {
    let metadata = doc["metadata"].as_object_mut().unwrap();
    metadata.remove("namespace");
    let name = metadata
        .remove("name")
        .or_else(|| metadata.remove("generateName"))
        .unwrap();
    let name = name.as_str().unwrap().trim_end_matches('-');
    metadata.insert("name".into(), json!(format!("s{index:02}-{name}")));
    doc
}

#[tokio::test]
async fn every_sample_object_is_accepted() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("crds-samples").await.unwrap();
    let mut refused = Vec::new();
    let mut created = 0;
    for (index, (file, doc)) in samples().into_iter().enumerate() {
        let kind = doc["kind"].as_str().unwrap().to_owned();
        let object: DynamicObject = serde_json::from_value(prepared(index, doc)).unwrap();
        match dynamic_api(client.clone(), ns.name(), &kind)
            .create(&PostParams::default(), &object)
            .await
        {
            Ok(_) => created += 1,
            Err(e) => refused.push(format!("{file} ({kind}): {e}")),
        }
    }
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
    assert!(created > 80, "only {created} objects");

    // What the API server stored (defaults applied) reads into the typed API, through kube's blanket impl.
    async fn read_all<K>(client: &Client, ns: &str) -> usize
    where
        K: Resource<Scope = NamespaceResourceScope>
            + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(client.clone(), ns);
        api.list(&ListParams::default()).await.unwrap().items.len()
    }
    let read = read_all::<RayCluster>(&client, ns.name()).await
        + read_all::<RayJob>(&client, ns.name()).await
        + read_all::<RayService>(&client, ns.name()).await
        + read_all::<RayCronJob>(&client, ns.name()).await;
    assert_eq!(read, created);
}

/// Every sample again, but read into our types and written by them: what the operator will send.
#[tokio::test]
async fn every_sample_object_written_by_the_types_is_accepted() {
    async fn create<K>(client: &Client, ns: &str, doc: Value) -> Result<(), String>
    where
        K: Resource<Scope = NamespaceResourceScope>
            + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>
            + Clone
            + Serialize
            + DeserializeOwned
            + std::fmt::Debug,
    {
        let object: K = serde_json::from_value(doc).map_err(|e| e.to_string())?;
        let api: Api<K> = Api::namespaced(client.clone(), ns);
        let created = api
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| e.to_string())?;
        let name = created.metadata().name.clone().unwrap();
        api.get(&name).await.map(drop).map_err(|e| e.to_string())
    }
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("crds-typed").await.unwrap();
    let mut refused = Vec::new();
    for (index, (file, doc)) in samples().into_iter().enumerate() {
        let doc = prepared(index, doc);
        let result = match doc["kind"].as_str().unwrap() {
            "RayCluster" => create::<RayCluster>(&client, ns.name(), doc).await,
            "RayJob" => create::<RayJob>(&client, ns.name(), doc).await,
            "RayService" => create::<RayService>(&client, ns.name(), doc).await,
            "RayCronJob" => create::<RayCronJob>(&client, ns.name(), doc).await,
            other => Err(format!("unexpected kind {other}")),
        };
        if let Err(e) = result {
            refused.push(format!("{file}: {e}"));
        }
    }
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

fn cluster_spec() -> Value {
    json!({
        "rayVersion": "2.60.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{
                "name": "ray-head", "image": "rayproject/ray", "ports": [{"containerPort": 6379}],
            }]}},
        },
        "workerGroupSpecs": [{
            "groupName": "small",
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray"}]}},
        }],
    })
}

fn object(kind: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

/// `spec` with `value` put at the JSON pointer `path`.
fn with(mut spec: Value, path: &str, value: Value) -> Value {
    let (parent, key) = path.rsplit_once('/').unwrap();
    let parent = spec.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}"));
    match parent {
        Value::Object(map) => {
            map.insert(key.into(), value);
        }
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = value,
        other => panic!("cannot set {key} in {other}"),
    }
    spec
}

fn assert_invalid(result: Result<DynamicObject, kube::Error>, what: &str, expected: &[&str]) {
    match result {
        Err(kube::Error::Api(e)) if e.code == 422 => {
            for text in expected {
                assert!(
                    e.message.contains(text),
                    "{what}: {text:?} not in {:?}",
                    e.message
                );
            }
        }
        Err(e) => panic!("{what}: expected 422, got {e}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

#[tokio::test]
async fn invalid_objects_are_refused() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("crds-invalid").await.unwrap();
    let clusters = dynamic_api(client.clone(), ns.name(), "RayCluster");
    let jobs = dynamic_api(client.clone(), ns.name(), "RayJob");
    let services = dynamic_api(client.clone(), ns.name(), "RayService");
    let cronjobs = dynamic_api(client.clone(), ns.name(), "RayCronJob");
    let pp = PostParams::default();
    let job = |extra: Value| {
        merged(
            json!({"entrypoint": "python -c 'print(1)'", "rayClusterSpec": cluster_spec()}),
            extra,
        )
    };
    let mut two_heads = cluster_spec();
    two_heads
        .pointer_mut("/headGroupSpec/template/spec/containers")
        .and_then(Value::as_array_mut)
        .unwrap()
        .push(json!({"name": "ray-head", "image": "busybox"}));

    let cases: Vec<(&str, &Api<DynamicObject>, DynamicObject, Vec<&str>)> = vec![
        (
            "RayCluster without headGroupSpec",
            &clusters,
            object("RayCluster", "no-head", json!({"workerGroupSpecs": []})),
            vec!["headGroupSpec", "Required value"],
        ),
        (
            "replicas as a string",
            &clusters,
            object(
                "RayCluster",
                "r",
                with(cluster_spec(), "/workerGroupSpecs/0/replicas", json!("three")),
            ),
            vec!["replicas", "integer"],
        ),
        (
            "worker group without groupName",
            &clusters,
            object(
                "RayCluster",
                "g",
                with(cluster_spec(), "/workerGroupSpecs/0/groupName", Value::Null),
            ),
            vec!["groupName", "Required value"],
        ),
        (
            "unknown upgrade strategy",
            &clusters,
            object(
                "RayCluster",
                "u",
                with(cluster_spec(), "/upgradeStrategy", json!({"type": "Sideways"})),
            ),
            vec!["upgradeStrategy.type", "Unsupported value"],
        ),
        (
            "unknown auth mode",
            &clusters,
            object(
                "RayCluster",
                "a",
                with(cluster_spec(), "/authOptions", json!({"mode": "password"})),
            ),
            vec!["authOptions.mode", "Unsupported value"],
        ),
        (
            "foreign managedBy (CEL)",
            &clusters,
            object(
                "RayCluster",
                "m",
                with(cluster_spec(), "/managedBy", json!("example.com/other")),
            ),
            vec![
                "managedBy",
                "must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
            ],
        ),
        (
            "malformed quantity in a Pod template",
            &clusters,
            object(
                "RayCluster",
                "q",
                with(
                    cluster_spec(),
                    "/headGroupSpec/template/spec/containers/0/resources",
                    json!({"limits": {"cpu": "lots"}}),
                ),
            ),
            vec!["limits.cpu", "should match"],
        ),
        (
            "two containers with one name (list-type map)",
            &clusters,
            object("RayCluster", "d", two_heads),
            vec!["containers", "Duplicate value"],
        ),
        (
            "RayJob with both deletionStrategy forms (CEL)",
            &jobs,
            object(
                "RayJob",
                "both",
                job(json!({"deletionStrategy": {
                    "onSuccess": {"policy": "DeleteCluster"},
                    "onFailure": {"policy": "DeleteNone"},
                    "deletionRules": [{"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}}],
                }})),
            ),
            vec!["cannot be used together within the same deletionStrategy"],
        ),
        (
            "RayJob with only onSuccess (CEL)",
            &jobs,
            object(
                "RayJob",
                "half",
                job(json!({"deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}})),
            ),
            vec!["requires either BOTH onSuccess and onFailure"],
        ),
        (
            "deletion condition on both statuses (CEL)",
            &jobs,
            object(
                "RayJob",
                "cond",
                job(json!({"deletionStrategy": {"deletionRules": [{
                    "policy": "DeleteSelf",
                    "condition": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"},
                }]}})),
            ),
            vec!["JobStatus and JobDeploymentStatus cannot be used together"],
        ),
        (
            "deletion rule on a non-terminal job status",
            &jobs,
            object(
                "RayJob",
                "running",
                job(json!({"deletionStrategy": {"deletionRules": [{
                    "policy": "DeleteSelf", "condition": {"jobStatus": "RUNNING"},
                }]}})),
            ),
            vec!["jobStatus", "Unsupported value"],
        ),
        (
            "empty deletionRules",
            &jobs,
            object(
                "RayJob",
                "empty",
                job(json!({"deletionStrategy": {"deletionRules": []}})),
            ),
            vec!["deletionRules"],
        ),
        (
            "preRunningDeadlineSeconds 0",
            &jobs,
            object("RayJob", "deadline", job(json!({"preRunningDeadlineSeconds": 0}))),
            vec!["preRunningDeadlineSeconds", "greater than or equal to 1"],
        ),
        (
            "RayService without rayClusterConfig",
            &services,
            object(
                "RayService",
                "nocluster",
                json!({"serveConfigV2": "applications: []"}),
            ),
            vec!["rayClusterConfig", "Required value"],
        ),
        (
            "negative rayClusterDeletionDelaySeconds",
            &services,
            object(
                "RayService",
                "delay",
                json!({"rayClusterConfig": cluster_spec(), "rayClusterDeletionDelaySeconds": -1}),
            ),
            vec!["rayClusterDeletionDelaySeconds"],
        ),
        (
            "incremental upgrade without gatewayClassName",
            &services,
            object(
                "RayService",
                "gateway",
                json!({"rayClusterConfig": cluster_spec(), "upgradeStrategy": {
                    "type": "NewClusterWithIncrementalUpgrade",
                    "clusterUpgradeOptions": {"stepSizePercent": 10, "intervalSeconds": 30},
                }}),
            ),
            vec!["gatewayClassName", "Required value"],
        ),
        (
            "RayCronJob with an empty timeZone",
            &cronjobs,
            object(
                "RayCronJob",
                "tz",
                json!({"schedule": "* * * * *", "timeZone": "", "jobTemplate": job(json!({}))}),
            ),
            vec!["timeZone"],
        ),
        (
            "RayCronJob without schedule",
            &cronjobs,
            object("RayCronJob", "nosched", json!({"jobTemplate": job(json!({}))})),
            vec!["schedule", "Required value"],
        ),
    ];
    for (what, api, object, expected) in cases {
        assert_invalid(api.create(&pp, &object).await, what, &expected);
    }
}

/// `base` with the fields of `extra` added.
fn merged(mut base: Value, extra: Value) -> Value {
    if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
        base.extend(extra);
    }
    base
}

#[tokio::test]
async fn immutable_fields_cannot_change() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("crds-immutable").await.unwrap();
    let clusters = dynamic_api(client, ns.name(), "RayCluster");
    let spec = with(cluster_spec(), "/managedBy", json!("ray.io/kuberay-operator"));
    let spec = with(
        spec,
        "/gcsFaultToleranceOptions",
        json!({"backend": "redis", "redisAddress": "redis:6379"}),
    );
    clusters
        .create(&PostParams::default(), &object("RayCluster", "c", spec))
        .await
        .unwrap();

    let patch = |patch: Value| {
        let clusters = clusters.clone();
        async move {
            clusters
                .patch("c", &PatchParams::default(), &Patch::Merge(patch))
                .await
        }
    };
    assert_invalid(
        patch(json!({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}})).await,
        "managedBy changed",
        &["the managedBy field is immutable"],
    );
    assert_invalid(
        patch(json!({"spec": {"gcsFaultToleranceOptions": {"backend": "rocksdb"}}})).await,
        "GCS backend changed",
        &["gcsFaultToleranceOptions.backend is immutable"],
    );
    // Other changes still go through.
    patch(json!({"spec": {"suspend": true}})).await.unwrap();
}

#[tokio::test]
async fn kuberay_defaults_apply() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("crds-defaults").await.unwrap();
    let pp = PostParams::default();

    let spec = with(cluster_spec(), "/networkPolicy", json!({}));
    let cluster = dynamic_api(client.clone(), ns.name(), "RayCluster")
        .create(&pp, &object("RayCluster", "c", spec))
        .await
        .unwrap();
    let group = &cluster.data["spec"]["workerGroupSpecs"][0];
    assert_eq!(group["replicas"], 0);
    assert_eq!(group["minReplicas"], 0);
    assert_eq!(group["maxReplicas"], i32::MAX);
    assert_eq!(group["numOfHosts"], 1);
    assert_eq!(group["priority"], 0);
    assert_eq!(cluster.data["spec"]["networkPolicy"]["mode"], "DenyAll");
    // Defaults of the embedded Kubernetes types, as in a Pod.
    let port = &cluster.data["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"][0];
    assert_eq!(port["protocol"], "TCP");

    let job = dynamic_api(client.clone(), ns.name(), "RayJob")
        .create(
            &pp,
            &object(
                "RayJob",
                "j",
                json!({"entrypoint": "echo hi", "rayClusterSpec": cluster_spec(), "deletionStrategy": {
                    "deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}],
                }}),
            ),
        )
        .await
        .unwrap();
    let spec = &job.data["spec"];
    assert_eq!(spec["backoffLimit"], 0);
    assert_eq!(spec["submissionMode"], "K8sJobMode");
    assert_eq!(spec["ttlSecondsAfterFinished"], 0);
    assert_eq!(
        spec["deletionStrategy"]["deletionRules"][0]["condition"]["ttlSeconds"],
        0
    );

    let service = dynamic_api(client, ns.name(), "RayService")
        .create(
            &pp,
            &object(
                "RayService",
                "s",
                json!({"rayClusterConfig": cluster_spec(), "upgradeStrategy": {
                    "type": "NewClusterWithIncrementalUpgrade",
                    "clusterUpgradeOptions": {"stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio"},
                }}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        service.data["spec"]["upgradeStrategy"]["clusterUpgradeOptions"]["maxSurgePercent"],
        100
    );
}

/// Two field managers own one condition each; server-side apply keeps both, because `conditions` is a list
/// of type map keyed by `type`. An atomic list would let the second apply replace the first's condition.
#[tokio::test]
async fn status_conditions_merge_under_server_side_apply() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("crds-ssa").await.unwrap();
    let api: Api<RayCluster> = Api::namespaced(client, ns.name());
    let cluster: RayCluster =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "spec": cluster_spec()})).unwrap();
    api.create(&PostParams::default(), &cluster).await.unwrap();

    let condition = |type_: &str, reason: &str| {
        json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "status": {"conditions": [{
                "type": type_, "status": "True", "reason": reason, "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }]},
        })
    };
    let apply = |manager: &'static str, patch: Value| {
        let api = api.clone();
        async move {
            api.patch_status("c", &PatchParams::apply(manager).force(), &Patch::Apply(patch))
                .await
        }
    };
    apply(
        "first",
        condition(kuberay_crds::conditions::HEAD_POD_READY, "HeadPodRunningAndReady"),
    )
    .await
    .unwrap();
    let merged = apply(
        "second",
        condition(
            kuberay_crds::conditions::RAY_CLUSTER_PROVISIONED,
            "AllPodRunningAndReadyFirstTime",
        ),
    )
    .await
    .unwrap();
    let mut types: Vec<String> = merged
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .map(|c| c.type_)
        .collect();
    types.sort();
    assert_eq!(types, ["HeadPodReady", "RayClusterProvisioned"]);

    // The condition schema of metav1.Condition holds: a reason must be a CamelCase identifier.
    let err = apply("third", condition("Other", "not a reason"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 422 && e.message.contains("reason")),
        "{err}"
    );
}

/// `src/crd/kubernetes.json` holds what this API server publishes about the Kubernetes types the CRDs embed.
/// With `KUBERAY_CRDS_BLESS=1` the test writes the file instead (then run `make crds`).
#[tokio::test]
async fn kubernetes_facts_match_the_api_server() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let mut documents = Vec::new();
    for path in ["/openapi/v3/api/v1", "/openapi/v3/apis/networking.k8s.io/v1"] {
        let request = http::Request::get(path).body(Vec::new()).unwrap();
        documents.push(client.request::<Value>(request).await.unwrap());
    }
    let facts = crd::kubernetes_facts(&documents).unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/crd/kubernetes.json");
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    if committed != facts {
        if std::env::var("KUBERAY_CRDS_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&file, serde_json::to_string_pretty(&facts).unwrap() + "\n").unwrap();
        } else {
            panic!(
                "{} differs from what the API server publishes; rerun with KUBERAY_CRDS_BLESS=1, then `make crds`",
                file.display()
            );
        }
    }
}

/// KubeRay's deprecated `ray.io/v1alpha1` is served for RayCluster, RayJob and RayService, without a
/// conversion: an object written in one version reads the same in the other; RayCronJob has no `v1alpha1`.
#[tokio::test]
async fn v1alpha1_is_served_as_kuberay_serves_it() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("crds-v1alpha1").await.unwrap();
    let api = |version: &str, kind: &str| {
        let gvk = GroupVersionKind::gvk("ray.io", version, kind);
        let plural = format!("{}s", kind.to_lowercase());
        Api::<DynamicObject>::namespaced_with(
            client.clone(),
            ns.name(),
            &ApiResource::from_gvk_with_plural(&gvk, &plural),
        )
    };
    let mut old = object("RayCluster", "old-client", cluster_spec());
    old.types.as_mut().unwrap().api_version = "ray.io/v1alpha1".into();
    api("v1alpha1", "RayCluster")
        .create(&PostParams::default(), &old)
        .await
        .unwrap();
    let read = api("v1", "RayCluster").get("old-client").await.unwrap();
    assert_eq!(read.types.unwrap().api_version, "ray.io/v1");
    assert_eq!(read.data["spec"]["workerGroupSpecs"][0]["groupName"], "small");

    api("v1", "RayCluster")
        .create(
            &PostParams::default(),
            &object("RayCluster", "new-client", cluster_spec()),
        )
        .await
        .unwrap();
    let listed = api("v1alpha1", "RayCluster")
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut names: Vec<String> = listed
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["new-client", "old-client"]);
    assert!(
        listed
            .items
            .iter()
            .all(|o| o.types.as_ref().unwrap().api_version == "ray.io/v1alpha1")
    );
    for kind in ["RayJob", "RayService"] {
        api("v1alpha1", kind).list(&ListParams::default()).await.unwrap();
    }
    let cronjobs = api("v1alpha1", "RayCronJob").list(&ListParams::default()).await;
    assert!(
        matches!(cronjobs, Err(kube::Error::Api(ref e)) if e.code == 404),
        "{cronjobs:?}"
    );
}
