//! RayServices: created, read back as sent, paged, replaced keeping the object's metadata, deleted.

use kube::api::{Api as KubeApi, ListParams, Patch, PatchParams};
use kuberay_apiserver::api::{self, ray_serve_service_server::RayServeService};
use kuberay_crds::RayService;
use tonic::Code;

use crate::support::{Api, assert_refused, cluster_spec, create_template, env, template};

const SERVE_CONFIG: &str = "applications:\n  - name: fruit\n    import_path: fruit.deployment_graph\n";

fn service(name: &str) -> api::RayService {
    api::RayService {
        name: name.into(),
        user: "alice".into(),
        version: "2.9.0".into(),
        serve_config_v2: SERVE_CONFIG.into(),
        cluster_spec: Some(cluster_spec("head", "worker")),
        ..Default::default()
    }
}

/// A service as the API returns it: the one sent, with the server's namespace, creation time and an empty
/// status (no operator runs here).
fn as_read(sent: api::RayService, ns: &str, read: &api::RayService) -> api::RayService {
    api::RayService {
        namespace: ns.into(),
        created_at: read.created_at,
        ray_service_status: Some(api::RayServiceStatus::default()),
        ..sent
    }
}

async fn create(api: &Api, ns: &str, service: api::RayService) -> Result<api::RayService, tonic::Status> {
    let request = api::CreateRayServiceRequest {
        service: Some(service),
        namespace: ns.into(),
    };
    api.serve
        .create_ray_service(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

async fn get(api: &Api, ns: &str, name: &str) -> Result<api::RayService, tonic::Status> {
    let request = api::GetRayServiceRequest {
        name: name.into(),
        namespace: ns.into(),
    };
    api.serve
        .get_ray_service(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

async fn update(
    api: &Api,
    ns: &str,
    name: &str,
    service: api::RayService,
) -> Result<api::RayService, tonic::Status> {
    let request = api::UpdateRayServiceRequest {
        service: Some(service),
        namespace: ns.into(),
        name: name.into(),
    };
    api.serve
        .update_ray_service(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn services_round_trip_and_update() {
    let env = env().await;
    let ns = env.namespace("api-services").await.unwrap();
    let ns = ns.name();
    let api = Api::new(env.client().await.unwrap());
    create_template(&api, ns, template("head", 1, 0)).await;
    create_template(&api, ns, template("worker", 2, 0)).await;
    create_template(&api, ns, template("bigger", 4, 0)).await;

    let created = create(&api, ns, service("fruit")).await.unwrap();
    assert_eq!(created, as_read(service("fruit"), ns, &created));
    assert_eq!(created.delete_at, None);
    create(&api, ns, service("veggie")).await.unwrap();
    assert_refused(
        create(&api, ns, service("fruit")).await,
        Code::AlreadyExists,
        "fruit",
    );

    let raw: KubeApi<RayService> = KubeApi::namespaced(api.kube.clone(), ns);
    let before = raw.get("fruit").await.unwrap();
    let head = before
        .spec
        .ray_cluster_config
        .head_group_spec
        .template
        .spec
        .clone()
        .unwrap();
    assert!(
        head.containers[0]
            .ports
            .iter()
            .flatten()
            .any(|p| p.container_port == 8000)
    );
    // Something else (the operator, say) adds a finalizer; the update must keep it.
    let finalizer = serde_json::json!({"metadata": {"finalizers": ["example.com/keep"]}});
    raw.patch("fruit", &PatchParams::default(), &Patch::Merge(&finalizer))
        .await
        .unwrap();

    let mut changed = service("");
    changed.serve_config_v2 = SERVE_CONFIG.replace("fruit", "apple");
    if let Some(spec) = changed.cluster_spec.as_mut() {
        spec.worker_group_spec[0].compute_template = "bigger".into();
        spec.worker_group_spec[0].replicas = 2;
    }
    let updated = update(&api, ns, "fruit", changed.clone()).await.unwrap();
    let expected = as_read(
        api::RayService {
            name: "fruit".into(),
            ..changed
        },
        ns,
        &updated,
    );
    assert_eq!(updated, expected);
    let after = raw.get("fruit").await.unwrap();
    assert_ne!(after.metadata.resource_version, before.metadata.resource_version);
    assert_eq!(
        after.metadata.finalizers,
        Some(vec!["example.com/keep".to_owned()])
    );
    let annotations = after.metadata.annotations.clone().unwrap_or_default();
    assert!(annotations.contains_key("ray.io/update-timestamp"));
    assert!(annotations.contains_key("ray.io/creation-timestamp"));
    let worker = &after.spec.ray_cluster_config.worker_group_specs.unwrap()[0];
    let limits = worker.template.spec.as_ref().unwrap().containers[0]
        .resources
        .clone()
        .unwrap()
        .limits
        .unwrap();
    assert_eq!(limits["cpu"].0, "4");
    assert_eq!(get(&api, ns, "fruit").await.unwrap(), expected);

    assert_refused(
        update(&api, ns, "nothing", service("")).await,
        Code::NotFound,
        "RayService \"nothing\" not found",
    );
    assert_refused(
        update(&api, ns, "fruit", service("veggie")).await,
        Code::InvalidArgument,
        "differs",
    );

    let request = api::ListRayServicesRequest {
        namespace: ns.into(),
        page_token: String::new(),
        page_size: 1,
    };
    let first = api
        .serve
        .list_ray_services(api.call(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.services.len(), 1);
    assert!(!first.next_page_token.is_empty());
    let request = api::ListRayServicesRequest {
        namespace: ns.into(),
        page_token: first.next_page_token,
        page_size: 1,
    };
    let second = api
        .serve
        .list_ray_services(api.call(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.services.len(), 1);
    assert_eq!(second.next_page_token, "");
    let request = api::ListAllRayServicesRequest {
        page_token: String::new(),
        page_size: 0,
    };
    let all = api
        .serve
        .list_all_ray_services(api.call(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.services.iter().filter(|s| s.namespace == ns).count(), 2);

    // Deleting waits for no finalizer; the object is gone once they are.
    raw.patch(
        "fruit",
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    for name in ["fruit", "veggie"] {
        let request = api::DeleteRayServiceRequest {
            name: name.into(),
            namespace: ns.into(),
        };
        api.serve.delete_ray_service(api.call(request)).await.unwrap();
    }
    assert!(raw.list(&ListParams::default()).await.unwrap().items.is_empty());
    assert_refused(get(&api, ns, "fruit").await, Code::NotFound, "fruit");
}

#[tokio::test]
async fn a_service_with_a_missing_template_is_not_created() {
    let env = env().await;
    let ns = env.namespace("api-services-missing").await.unwrap();
    let ns = ns.name();
    let api = Api::new(env.client().await.unwrap());
    assert_refused(
        create(&api, ns, service("fruit")).await,
        Code::FailedPrecondition,
        "\"head\"",
    );
    let raw: KubeApi<RayService> = KubeApi::namespaced(api.kube.clone(), ns);
    assert!(raw.list(&ListParams::default()).await.unwrap().items.is_empty());
    let no_config = api::RayService {
        serve_config_v2: String::new(),
        ..service("fruit")
    };
    assert_refused(
        create(&api, ns, no_config).await,
        Code::InvalidArgument,
        "serveConfigV2 is empty",
    );
}
