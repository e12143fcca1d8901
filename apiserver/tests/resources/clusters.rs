//! Clusters: what the API creates is accepted by the API server and reads back as sent; pages, events,
//! missing templates and unlabelled RayClusters.

use std::collections::BTreeSet;

use k8s_openapi::{api::events::v1::Event, apimachinery::pkg::apis::meta::v1::MicroTime, jiff};
use kube::api::{Api as KubeApi, ListParams, PostParams};
use kuberay_apiserver::api::{self, cluster_service_server::ClusterService};
use kuberay_crds::RayCluster;
use tonic::Code;

use crate::support::{Api, assert_refused, cluster, cluster_spec, create_template, env, template};

async fn create(api: &Api, ns: &str, cluster: api::Cluster) -> Result<api::Cluster, tonic::Status> {
    let request = api::CreateClusterRequest {
        cluster: Some(cluster),
        namespace: ns.into(),
    };
    api.clusters
        .create_cluster(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

async fn get(api: &Api, ns: &str, name: &str) -> Result<api::Cluster, tonic::Status> {
    let request = api::GetClusterRequest {
        name: name.into(),
        namespace: ns.into(),
    };
    api.clusters
        .get_cluster(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

async fn delete(api: &Api, ns: &str, name: &str) -> Result<(), tonic::Status> {
    let request = api::DeleteClusterRequest {
        name: name.into(),
        namespace: ns.into(),
    };
    api.clusters
        .delete_cluster(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

async fn page(api: &Api, ns: &str, limit: i64, token: &str) -> api::ListClustersResponse {
    let request = api::ListClustersRequest {
        namespace: ns.into(),
        r#continue: token.into(),
        limit,
    };
    api.clusters
        .list_cluster(api.call(request))
        .await
        .unwrap()
        .into_inner()
}

/// An event about `name` (of the RayCluster with `uid`), written as a controller writes it.
async fn record_event(api: &Api, ns: &str, name: &str, uid: &str, reason: &str) {
    let event: Event = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("{name}.{}", reason.to_lowercase())},
        "reportingController": "kuberay-wasm.io/tests",
        "reportingInstance": "tests",
        "action": "Testing",
        "reason": reason,
        "note": format!("{reason} happened"),
        "type": "Normal",
        "regarding": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": name, "namespace": ns, "uid": uid},
    }))
    .unwrap();
    let event = Event {
        event_time: Some(MicroTime(jiff::Timestamp::now())),
        ..event
    };
    KubeApi::<Event>::namespaced(api.kube.clone(), ns)
        .create(&PostParams::default(), &event)
        .await
        .unwrap();
}

#[tokio::test]
async fn clusters_round_trip_with_pages_and_events() {
    let env = env().await;
    let ns = env.namespace("api-clusters").await.unwrap();
    let ns = ns.name();
    let api = Api::new(env.client().await.unwrap());
    create_template(&api, ns, template("head", 1, 0)).await;
    create_template(&api, ns, template("worker", 2, 1)).await;

    for name in ["c1", "c2", "c3"] {
        let sent = cluster(name, cluster_spec("head", "worker"));
        let created = create(&api, ns, sent.clone()).await.unwrap();
        assert!(created.created_at.is_some());
        let expected = api::Cluster {
            namespace: ns.into(),
            created_at: created.created_at,
            ..sent
        };
        assert_eq!(created, expected, "{name} reads back as it was sent");
    }

    // What is stored is KubeRay's RayCluster.
    let raw: KubeApi<RayCluster> = KubeApi::namespaced(api.kube.clone(), ns);
    let stored = raw.get("c1").await.unwrap();
    let labels = stored.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "kuberay-apiserver");
    assert_eq!(labels["ray.io/cluster-name"], "c1");
    assert_eq!(labels["ray.io/environment"], "DEV");
    assert!(
        stored
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("ray.io/creation-timestamp")
    );
    let workers = stored.spec.worker_group_specs.unwrap_or_default();
    let worker = &workers[0].template.spec.as_ref().unwrap().containers[0];
    let limits = worker.resources.clone().unwrap().limits.unwrap();
    assert_eq!(
        (limits["cpu"].0.as_str(), limits["nvidia.com/gpu"].0.as_str()),
        ("2", "1")
    );

    // Events about the cluster, not about an earlier cluster of the same name.
    let uid = stored.metadata.uid.clone().unwrap();
    record_event(&api, ns, "c1", &uid, "Provisioned").await;
    record_event(
        &api,
        ns,
        "c1",
        "0b7a7c9e-0000-0000-0000-000000000000",
        "FromAnEarlierLife",
    )
    .await;
    let read = get(&api, ns, "c1").await.unwrap();
    let reasons: Vec<_> = read.events.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(reasons, ["Provisioned"]);
    assert!(
        read.events[0].name.starts_with("c1-c1."),
        "{}",
        read.events[0].name
    );
    assert_eq!(read.events[0].message, "Provisioned happened");
    assert!(read.events[0].first_timestamp.is_some());

    // Two pages of two and one.
    let first = page(&api, ns, 2, "").await;
    assert_eq!(first.clusters.len(), 2);
    assert!(!first.r#continue.is_empty());
    let second = page(&api, ns, 2, &first.r#continue).await;
    assert_eq!(second.clusters.len(), 1);
    assert_eq!(second.r#continue, "");
    let names: BTreeSet<_> = first
        .clusters
        .iter()
        .chain(&second.clusters)
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(names, BTreeSet::from(["c1".into(), "c2".into(), "c3".into()]));
    let listed = page(&api, ns, 0, "").await;
    assert_eq!(listed.clusters.len(), 3);
    let c1 = listed.clusters.iter().find(|c| c.name == "c1").unwrap();
    assert_eq!(c1.events.len(), 1, "listed clusters come with their events");

    // All namespaces, a page at a time.
    let mut token = String::new();
    let mut everywhere = Vec::new();
    loop {
        let request = api::ListAllClustersRequest {
            r#continue: token,
            limit: 2,
        };
        let page = api
            .clusters
            .list_all_clusters(api.call(request))
            .await
            .unwrap()
            .into_inner();
        assert!(page.clusters.len() <= 2);
        everywhere.extend(page.clusters);
        if page.r#continue.is_empty() {
            break;
        }
        token = page.r#continue;
    }
    assert_eq!(everywhere.iter().filter(|c| c.namespace == ns).count(), 3);

    delete(&api, ns, "c1").await.unwrap();
    assert_refused(
        get(&api, ns, "c1").await,
        Code::NotFound,
        "RayCluster \"c1\" not found",
    );
    assert_refused(delete(&api, ns, "c1").await, Code::NotFound, "c1");
    assert_refused(
        create(&api, ns, cluster("c2", cluster_spec("head", "worker"))).await,
        Code::AlreadyExists,
        "c2",
    );
}

#[tokio::test]
async fn a_missing_template_refuses_the_cluster_and_leaves_nothing_behind() {
    let env = env().await;
    let ns = env.namespace("api-missing-template").await.unwrap();
    let ns = ns.name();
    let api = Api::new(env.client().await.unwrap());
    create_template(&api, ns, template("head", 1, 0)).await;

    let result = create(&api, ns, cluster("lost", cluster_spec("head", "nowhere"))).await;
    assert_refused(
        result,
        Code::FailedPrecondition,
        "compute template \"nowhere\" (used by worker group \"workers\")",
    );
    let result = create(&api, ns, cluster("lost", cluster_spec("gone", "nowhere"))).await;
    assert_refused(
        result,
        Code::FailedPrecondition,
        "\"gone\" (used by the head group)",
    );

    let raw: KubeApi<RayCluster> = KubeApi::namespaced(api.kube.clone(), ns);
    assert!(raw.list(&ListParams::default()).await.unwrap().items.is_empty());
    assert!(page(&api, ns, 0, "").await.clusters.is_empty());

    // Bad input never gets as far as Kubernetes.
    let mut bad = cluster("bad", cluster_spec("head", "head"));
    bad.cluster_spec.as_mut().unwrap().worker_group_spec[0].max_replicas = 0;
    assert_refused(
        create(&api, ns, bad).await,
        Code::InvalidArgument,
        "maxReplicas must be greater than 0",
    );
    let elsewhere = api::Cluster {
        namespace: "default".into(),
        ..cluster("x", cluster_spec("head", "head"))
    };
    assert_refused(
        create(&api, ns, elsewhere).await,
        Code::InvalidArgument,
        "differs from the namespace",
    );
}

#[tokio::test]
async fn unlabelled_clusters_are_invisible() {
    let env = env().await;
    let ns = env.namespace("api-unlabelled").await.unwrap();
    let ns = ns.name();
    let api = Api::new(env.client().await.unwrap());
    let hidden: RayCluster = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "hidden", "labels": {"app.kubernetes.io/managed-by": "someone-else"}},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"}
        ]}}}},
    }))
    .unwrap();
    let raw: KubeApi<RayCluster> = KubeApi::namespaced(api.kube.clone(), ns);
    raw.create(&PostParams::default(), &hidden).await.unwrap();

    assert!(page(&api, ns, 0, "").await.clusters.is_empty());
    assert_refused(
        get(&api, ns, "hidden").await,
        Code::NotFound,
        "RayCluster \"hidden\" not found",
    );
    assert_refused(delete(&api, ns, "hidden").await, Code::NotFound, "hidden");
    assert!(
        raw.get_opt("hidden").await.unwrap().is_some(),
        "the RayCluster must survive"
    );
}
