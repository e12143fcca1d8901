//! `headGroupSpec.enableIngress`: an Ingress to the head's dashboard. The cluster's annotations are copied
//! onto it (that is how users configure their ingress controller), except the deprecated class annotation,
//! which becomes `ingressClassName` instead.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::networking::v1::{
        HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule, IngressServiceBackend,
        IngressSpec, ServiceBackendPort,
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::{IngressPathType, RayCluster, constants::labels, constants::node_type};
use kuberay_rules::names;

use crate::{
    cluster::Identity,
    consts::{APPLICATION_NAME, COMPONENT_NAME, DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT},
};

const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

pub fn enabled(cluster: &RayCluster) -> bool {
    cluster.spec.head_group_spec.enable_ingress == Some(true)
}

pub fn build(cluster: &RayCluster, id: &Identity) -> Ingress {
    let options = cluster.spec.head_group_spec.ingress_options.as_ref();
    let path_type = match options.and_then(|o| o.path_type) {
        Some(IngressPathType::Exact) => "Exact",
        Some(IngressPathType::ImplementationSpecific) => "ImplementationSpecific",
        Some(IngressPathType::Prefix) | None => "Prefix",
    };
    let path = options.and_then(|o| o.path.clone()).unwrap_or_else(|| "/".into());
    let dashboard_port = kuberay_rules::ports::head_service_ports(cluster)
        .get(DASHBOARD_PORT_NAME)
        .copied()
        .unwrap_or(DEFAULT_DASHBOARD_PORT);
    let cluster_annotations = cluster.metadata.annotations.clone().unwrap_or_default();
    let class = cluster_annotations.get(INGRESS_CLASS_ANNOTATION).cloned();
    let annotations: BTreeMap<String, String> = cluster_annotations
        .into_iter()
        .filter(|(k, _)| k != INGRESS_CLASS_ANNOTATION)
        .collect();
    let rule = IngressRule {
        host: options.and_then(|o| o.host.clone()),
        http: Some(HTTPIngressRuleValue {
            paths: vec![HTTPIngressPath {
                path: Some(path),
                path_type: path_type.into(),
                backend: IngressBackend {
                    service: Some(IngressServiceBackend {
                        name: names::head_service_name(&id.name, &cluster.spec),
                        port: Some(ServiceBackendPort {
                            number: Some(dashboard_port),
                            name: None,
                        }),
                    }),
                    resource: None,
                },
            }],
        }),
    };
    Ingress {
        metadata: ObjectMeta {
            name: Some(names::ingress_name(&id.name)),
            namespace: Some(id.namespace.clone()),
            labels: Some(BTreeMap::from([
                (labels::RAY_CLUSTER.to_string(), id.name.clone()),
                (
                    labels::RAY_IDENTIFIER.to_string(),
                    names::identifier(&id.name, node_type::HEAD),
                ),
                (
                    labels::KUBERNETES_APPLICATION_NAME.to_string(),
                    APPLICATION_NAME.to_string(),
                ),
                (
                    labels::KUBERNETES_CREATED_BY.to_string(),
                    COMPONENT_NAME.to_string(),
                ),
            ])),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(IngressSpec {
            ingress_class_name: class,
            rules: Some(vec![rule]),
            tls: options.and_then(|o| o.tls.clone()).filter(|t| !t.is_empty()),
            default_backend: None,
        }),
        status: None,
    }
}
