//! Acting as the caller: a user without RBAC rights gets the API server's refusal (403 with its message),
//! and a user who may read clusters but not events still gets the clusters, without events.

use k8s_openapi::api::{
    events::v1::Event,
    rbac::v1::{Role, RoleBinding},
};
use kube::api::{Api as KubeApi, PostParams};
use kuberay_apiserver::api::{
    self, cluster_service_server::ClusterService, compute_template_service_server::ComputeTemplateService,
};
use tonic::Code;

use crate::support::{Api, assert_refused, cluster, cluster_spec, create_template, env, template};

#[tokio::test]
async fn a_user_without_rights_gets_the_api_servers_refusal() {
    let env = env().await;
    let ns = env.namespace("api-alice").await.unwrap();
    let ns = ns.name();
    let alice = Api::new(env.client_as("alice").await.unwrap());

    let request = api::CreateComputeTemplateRequest {
        compute_template: Some(template("small", 1, 0)),
        namespace: ns.into(),
    };
    let result = alice.templates.create_compute_template(alice.call(request)).await;
    assert_refused(
        result,
        Code::PermissionDenied,
        "User \"alice\" cannot create resource \"configmaps\"",
    );

    let request = api::ListClustersRequest {
        namespace: ns.into(),
        r#continue: String::new(),
        limit: 0,
    };
    let result = alice.clusters.list_cluster(alice.call(request)).await;
    assert_refused(
        result,
        Code::PermissionDenied,
        "User \"alice\" cannot list resource \"rayclusters\"",
    );

    let result = alice
        .clusters
        .list_all_clusters(alice.call(api::ListAllClustersRequest::default()))
        .await;
    assert_refused(result, Code::PermissionDenied, "at the cluster scope");

    let result = alice
        .templates
        .list_all_compute_templates(alice.call(api::ListAllComputeTemplatesRequest {}))
        .await;
    assert_refused(
        result,
        Code::PermissionDenied,
        "cannot list resource \"configmaps\"",
    );

    // Creating a cluster reads its templates first, as alice.
    let request = api::CreateClusterRequest {
        cluster: Some(cluster("c", cluster_spec("head", "head"))),
        namespace: ns.into(),
    };
    let result = alice.clusters.create_cluster(alice.call(request)).await;
    assert_refused(
        result,
        Code::PermissionDenied,
        "User \"alice\" cannot get resource \"configmaps\"",
    );

    let request = api::DeleteClusterRequest {
        name: "c".into(),
        namespace: ns.into(),
    };
    let result = alice.clusters.delete_cluster(alice.call(request)).await;
    assert_refused(
        result,
        Code::PermissionDenied,
        "cannot get resource \"rayclusters\"",
    );
}

#[tokio::test]
async fn a_user_who_may_not_read_events_still_gets_the_cluster() {
    let env = env().await;
    let ns = env.namespace("api-no-events").await.unwrap();
    let ns = ns.name();
    let admin = Api::new(env.client().await.unwrap());
    create_template(&admin, ns, template("head", 1, 0)).await;
    let request = api::CreateClusterRequest {
        cluster: Some(cluster("c", cluster_spec("head", "head"))),
        namespace: ns.into(),
    };
    admin.clusters.create_cluster(admin.call(request)).await.unwrap();
    let event: Event = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "c.1"},
        "eventTime": "2024-05-01T10:00:00.000000Z",
        "reportingController": "kuberay-wasm.io/tests", "reportingInstance": "tests", "action": "Testing",
        "reason": "Seen", "type": "Normal",
        "regarding": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "c", "namespace": ns},
    }))
    .unwrap();
    KubeApi::<Event>::namespaced(admin.kube.clone(), ns)
        .create(&PostParams::default(), &event)
        .await
        .unwrap();
    let get = || api::GetClusterRequest {
        name: "c".into(),
        namespace: ns.into(),
    };
    let as_admin = admin
        .clusters
        .get_cluster(admin.call(get()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(as_admin.events.len(), 1);

    let role: Role = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "read-clusters"},
        "rules": [{"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "list"]}],
    }))
    .unwrap();
    KubeApi::<Role>::namespaced(admin.kube.clone(), ns)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "alice-reads-clusters"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-clusters"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    }))
    .unwrap();
    KubeApi::<RoleBinding>::namespaced(admin.kube.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();

    let alice = Api::new(env.client_as("alice").await.unwrap());
    // RBAC changes reach the authorizer within moments; retry briefly.
    let mut read = None;
    for _ in 0..50 {
        match alice.clusters.get_cluster(alice.call(get())).await {
            Ok(response) => {
                read = Some(response.into_inner());
                break;
            }
            Err(status) if status.code() == Code::PermissionDenied => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(status) => panic!("{status:?}"),
        }
    }
    let read = read.expect("alice can read the cluster once the Role is bound");
    assert_eq!(read.name, "c");
    assert!(read.events.is_empty(), "alice may not list events");
    let request = api::ListClustersRequest {
        namespace: ns.into(),
        r#continue: String::new(),
        limit: 0,
    };
    let listed = alice
        .clusters
        .list_cluster(alice.call(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.clusters.len(), 1);
}
