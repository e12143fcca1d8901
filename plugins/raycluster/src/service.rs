//! The Services of a cluster. The head Service is how workers, drivers and the dashboard reach the head;
//! it is headless by default (a cluster has one head Pod, so a virtual IP adds nothing) and publishes the
//! head before it is Ready, because workers must find the GCS while the head is still starting. The serve
//! Service exposes Ray Serve for clusters that serve directly, and the headless worker Service gives the
//! Pods of multi-host replicas DNS names for each other.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Service, ServicePort, ServiceSpec},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::{
    RayCluster,
    constants::{labels, node_type},
};
use kuberay_rules::{names, ports::head_service_ports};

use crate::{
    cluster::Identity,
    consts::{APPLICATION_NAME, COMPONENT_NAME, DEFAULT_SERVICE_APP_PROTOCOL, SERVING_PORT_NAME},
};

/// The labels of the head Service, which are also its selector.
pub fn head_service_labels(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::RAY_CLUSTER.to_string(), cluster.to_string()),
        (labels::RAY_NODE_TYPE.to_string(), node_type::HEAD.to_string()),
        (
            labels::RAY_IDENTIFIER.to_string(),
            names::identifier(cluster, node_type::HEAD),
        ),
        (
            labels::KUBERNETES_APPLICATION_NAME.to_string(),
            APPLICATION_NAME.to_string(),
        ),
        (
            labels::KUBERNETES_CREATED_BY.to_string(),
            COMPONENT_NAME.to_string(),
        ),
    ])
}

/// Selects the head Service among the cluster's Services.
pub fn head_service_selector(cluster: &str) -> String {
    kuberay_rules::labels::selector(&[
        (labels::RAY_CLUSTER, cluster),
        (labels::RAY_NODE_TYPE, node_type::HEAD),
        (
            labels::RAY_IDENTIFIER,
            &names::identifier(cluster, node_type::HEAD),
        ),
    ])
}

/// The head Service: the user's `headService` template if any (our labels, selector and ports merged
/// in), else KubeRay's headless Service. `headServiceAnnotations` win over the template's annotations.
pub fn build_head_service(cluster: &RayCluster, id: &Identity) -> Service {
    let spec = &cluster.spec;
    let mut selector = head_service_labels(&id.name);
    // A user-set `app.kubernetes.io/name` on the head template also names the Service's Pods.
    if let Some(app) = spec
        .head_group_spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .and_then(|l| l.get(labels::KUBERNETES_APPLICATION_NAME))
    {
        selector.insert(labels::KUBERNETES_APPLICATION_NAME.into(), app.clone());
    }
    let service_annotations = spec.head_service_annotations.clone().unwrap_or_default();
    let service_type = spec
        .head_group_spec
        .service_type
        .clone()
        .filter(|t| !t.is_empty());
    let app_protocol = DEFAULT_SERVICE_APP_PROTOCOL.to_string();
    let ports: Vec<ServicePort> = head_service_ports(cluster)
        .into_iter()
        .map(|(name, port)| ServicePort {
            name: Some(name),
            port,
            app_protocol: Some(app_protocol.clone()),
            ..ServicePort::default()
        })
        .collect();
    let name = names::head_service_name(&id.name, spec);

    if let Some(custom) = &spec.head_group_spec.head_service {
        let mut service = custom.clone();
        let meta = &mut service.metadata;
        meta.name = Some(name);
        meta.namespace = Some(id.namespace.clone());
        meta.labels
            .get_or_insert_with(BTreeMap::new)
            .extend(selector.clone());
        meta.annotations
            .get_or_insert_with(BTreeMap::new)
            .extend(service_annotations);
        let svc_spec = service.spec.get_or_insert_with(ServiceSpec::default);
        svc_spec.selector = Some(selector);
        svc_spec.ports.get_or_insert_with(Vec::new).extend(ports);
        if svc_spec.type_.as_deref().is_none_or(str::is_empty) {
            svc_spec.type_ = service_type;
        }
        return service;
    }

    // KubeRay's ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true gives the head Service a cluster IP.
    let headless =
        service_type.as_deref().is_none_or(|t| t == "ClusterIP") && !id.env.head_cluster_ip_service;
    Service {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(id.namespace.clone()),
            labels: Some(selector.clone()),
            annotations: (!service_annotations.is_empty()).then_some(service_annotations),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(selector),
            ports: Some(ports),
            type_: service_type,
            cluster_ip: headless.then(|| "None".to_string()),
            publish_not_ready_addresses: headless.then_some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The serve Service (annotation `ray.io/enable-serve-service: "true"`): the head's `serve` and `serve-*`
/// ports, selecting every Pod of the cluster. `None` when the head names no such port.
pub fn build_serve_service(cluster: &RayCluster, id: &Identity) -> Option<Service> {
    let ports: Vec<ServicePort> = head_service_ports(cluster)
        .into_iter()
        .filter(|(name, _)| name == SERVING_PORT_NAME || name.starts_with("serve-"))
        .map(|(name, port)| ServicePort {
            name: Some(name),
            port,
            ..ServicePort::default()
        })
        .collect();
    if ports.is_empty() {
        return None;
    }
    Some(Service {
        metadata: ObjectMeta {
            name: Some(names::serve_service_name(&id.name)),
            namespace: Some(id.namespace.clone()),
            labels: Some(BTreeMap::from([
                (labels::RAY_ORIGINATED_FROM_CR_NAME.to_string(), id.name.clone()),
                (
                    labels::RAY_ORIGINATED_FROM_CRD.to_string(),
                    "RayCluster".to_string(),
                ),
                (labels::RAY_SERVE.to_string(), format!("{}-serve", id.name)),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([(
                labels::RAY_CLUSTER.to_string(),
                id.name.clone(),
            )])),
            ports: Some(ports),
            type_: cluster
                .spec
                .head_group_spec
                .service_type
                .clone()
                .filter(|t| !t.is_empty()),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// The headless Service of multi-host worker groups: DNS for every worker, ready or not.
pub fn build_headless_service(id: &Identity) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(names::headless_service_name(&id.name)),
            namespace: Some(id.namespace.clone()),
            labels: Some(BTreeMap::from([(
                labels::RAY_HEADLESS_WORKER_SERVICE.to_string(),
                id.name.clone(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(BTreeMap::from([
                (labels::RAY_CLUSTER.to_string(), id.name.clone()),
                (labels::RAY_NODE_TYPE.to_string(), node_type::WORKER.to_string()),
            ])),
            type_: Some("ClusterIP".into()),
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
