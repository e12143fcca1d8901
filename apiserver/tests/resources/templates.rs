//! Compute templates: ConfigMaps in KubeRay's layout, duplicates refused, unlabelled ConfigMaps invisible,
//! one list across namespaces.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api as KubeApi, PostParams};
use kuberay_apiserver::api::{self, compute_template_service_server::ComputeTemplateService};
use tonic::Code;

use crate::support::{Api, assert_refused, create_template, env, template};

#[tokio::test]
async fn templates_are_created_read_listed_and_deleted() {
    let env = env().await;
    let ns = env.namespace("api-templates").await.unwrap();
    let ns = ns.name();
    let other = env.namespace("api-templates-other").await.unwrap();
    let api = Api::new(env.client().await.unwrap());

    let created = create_template(&api, ns, template("small", 2, 0)).await;
    let expected = api::ComputeTemplate {
        namespace: ns.into(),
        memory_unit: "Gi".into(),
        ..template("small", 2, 0)
    };
    assert_eq!(created, expected);
    let gpu = create_template(&api, ns, template("gpu", 4, 1)).await;
    assert_eq!(gpu.tolerations.len(), 1);
    create_template(&api, other.name(), template("elsewhere", 1, 0)).await;

    // KubeRay's ConfigMap layout.
    let config_maps: KubeApi<ConfigMap> = KubeApi::namespaced(api.kube.clone(), ns);
    let stored = config_maps.get("small").await.unwrap();
    let labels = stored.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["ray.io/config-type"], "compute-template");
    assert_eq!(labels["ray.io/compute-template"], "small");
    let data = stored.data.unwrap_or_default();
    assert_eq!(
        (
            data["cpu"].as_str(),
            data["memory"].as_str(),
            data["memory_unit"].as_str()
        ),
        ("2", "2", "Gi")
    );

    let duplicate = api::CreateComputeTemplateRequest {
        compute_template: Some(template("small", 8, 0)),
        namespace: ns.into(),
    };
    let result = api.templates.create_compute_template(api.call(duplicate)).await;
    assert_refused(
        result,
        Code::AlreadyExists,
        "compute template \"small\" already exists",
    );

    let get = api::GetComputeTemplateRequest {
        name: "small".into(),
        namespace: ns.into(),
    };
    let read = api
        .templates
        .get_compute_template(api.call(get))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(read, expected);

    // A ConfigMap without the template label is not a template.
    let plain: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "plain"}, "data": {"cpu": "1", "memory": "1"},
    }))
    .unwrap();
    config_maps.create(&PostParams::default(), &plain).await.unwrap();
    let get = api::GetComputeTemplateRequest {
        name: "plain".into(),
        namespace: ns.into(),
    };
    let result = api.templates.get_compute_template(api.call(get)).await;
    assert_refused(result, Code::NotFound, "compute template \"plain\" not found");
    let delete = api::DeleteComputeTemplateRequest {
        name: "plain".into(),
        namespace: ns.into(),
    };
    assert_refused(
        api.templates.delete_compute_template(api.call(delete)).await,
        Code::NotFound,
        "plain",
    );
    assert!(
        config_maps.get_opt("plain").await.unwrap().is_some(),
        "the ConfigMap must survive"
    );

    let list = api::ListComputeTemplatesRequest { namespace: ns.into() };
    let listed = api
        .templates
        .list_compute_templates(api.call(list))
        .await
        .unwrap()
        .into_inner();
    let mut names: Vec<_> = listed.compute_templates.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["gpu", "small"]);

    let all = api
        .templates
        .list_all_compute_templates(api.call(api::ListAllComputeTemplatesRequest {}))
        .await;
    let all = all.unwrap().into_inner().compute_templates;
    for (namespace, name) in [(ns, "small"), (ns, "gpu"), (other.name(), "elsewhere")] {
        assert!(
            all.iter().any(|t| t.namespace == namespace && t.name == name),
            "{namespace}/{name} missing"
        );
    }
    assert!(!all.iter().any(|t| t.name == "plain"));

    let delete = api::DeleteComputeTemplateRequest {
        name: "small".into(),
        namespace: ns.into(),
    };
    api.templates
        .delete_compute_template(api.call(delete.clone()))
        .await
        .unwrap();
    assert_refused(
        api.templates.delete_compute_template(api.call(delete)).await,
        Code::NotFound,
        "small",
    );
    let get = api::GetComputeTemplateRequest {
        name: "small".into(),
        namespace: ns.into(),
    };
    assert_refused(
        api.templates.get_compute_template(api.call(get)).await,
        Code::NotFound,
        "small",
    );
}

#[tokio::test]
async fn invalid_templates_are_refused_before_kubernetes() {
    let env = env().await;
    let ns = env.namespace("api-templates-invalid").await.unwrap();
    let api = Api::new(env.client().await.unwrap());
    let request = api::CreateComputeTemplateRequest {
        compute_template: Some(template("zero", 0, 0)),
        namespace: ns.name().into(),
    };
    let result = api.templates.create_compute_template(api.call(request)).await;
    assert_refused(
        result,
        Code::InvalidArgument,
        "computeTemplate.cpu must be greater than 0",
    );
    let config_maps: KubeApi<ConfigMap> = KubeApi::namespaced(api.kube.clone(), ns.name());
    assert!(config_maps.get_opt("zero").await.unwrap().is_none());
}
