//! The RayService's stable Services (KubeRay's `BuildHeadServiceForRayService` and `BuildServeService`):
//! `<name>-head-svc` in front of the ready cluster's head, and `<name>-serve-svc` (or the custom
//! `serveService`) in front of the Pods of that cluster whose Serve proxy is healthy
//! (`ray.io/serve=true`). A Service is written when it is missing or points at another cluster; switching
//! the selector is what moves the traffic during an upgrade.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Service, ServicePort, ServiceSpec},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use kuberay_crds::{
    RayCluster,
    constants::{labels, node_type},
};
use kuberay_plugin_sdk::{Host, HostError, Kind, TypedHost};
use kuberay_rules::{
    consts::{self as rules, action, crd},
    names,
    ports::head_service_ports,
    report::Report,
};

use crate::{consts::reason, context::Ctx};

/// The serve Service's name: the custom `serveService`'s, else `<name>-serve-svc`.
pub fn serve_service_name<H: Host>(ctx: &Ctx<'_, H>) -> String {
    ctx.spec()
        .serve_service
        .as_ref()
        .and_then(|s| s.metadata.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| names::serve_service_name(&ctx.name))
}

/// The cluster a Service's selector points at.
pub fn selected_cluster(service: &Service) -> Option<&str> {
    service
        .spec
        .as_ref()?
        .selector
        .as_ref()?
        .get(labels::RAY_CLUSTER)
        .map(String::as_str)
}

fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `<name>-head-svc`: the cluster's head Service under the RayService's name.
pub fn head_service<H: Host>(ctx: &Ctx<'_, H>, cluster: &RayCluster) -> Service {
    let cluster_name = cluster.metadata.name.clone().unwrap_or_default();
    let selector = string_map(&[
        (labels::RAY_CLUSTER, &cluster_name),
        (labels::RAY_NODE_TYPE, node_type::HEAD),
        (
            labels::RAY_IDENTIFIER,
            &names::identifier(&cluster_name, node_type::HEAD),
        ),
        (labels::KUBERNETES_APPLICATION_NAME, rules::APPLICATION_NAME),
        (labels::KUBERNETES_CREATED_BY, rules::COMPONENT_NAME),
    ]);
    let service_labels = string_map(&[
        (labels::RAY_ORIGINATED_FROM_CR_NAME, &ctx.name),
        (labels::RAY_ORIGINATED_FROM_CRD, crd::RAY_SERVICE),
        (labels::RAY_NODE_TYPE, node_type::HEAD),
        (
            labels::RAY_IDENTIFIER,
            &names::identifier(&ctx.name, node_type::HEAD),
        ),
    ]);
    let ports = head_service_ports(cluster)
        .into_iter()
        .map(|(name, port)| ServicePort {
            name: Some(name),
            port,
            app_protocol: Some(rules::DEFAULT_SERVICE_APP_PROTOCOL.into()),
            ..ServicePort::default()
        })
        .collect();
    let service_type = ctx.spec().ray_cluster_config.head_group_spec.service_type.clone();
    let headless = service_type
        .as_deref()
        .is_none_or(|t| t.is_empty() || t == "ClusterIP");
    Service {
        metadata: ObjectMeta {
            name: Some(names::default_head_service(&ctx.name)),
            labels: Some(service_labels),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(selector),
            ports: Some(ports),
            type_: service_type.filter(|t| !t.is_empty()),
            cluster_ip: headless.then(|| "None".to_string()),
            publish_not_ready_addresses: headless.then_some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

fn is_serving_port(name: &str) -> bool {
    name == rules::SERVING_PORT_NAME || name.starts_with(&format!("{}-", rules::SERVING_PORT_NAME))
}

/// The serve Service: the custom `serveService` (selector and our labels forced, serve ports merged) or
/// `<name>-serve-svc` with the head container's serve ports.
///
/// With `NewClusterWithIncrementalUpgrade` every cluster has its own serve Service, `<cluster>-serve-svc`,
/// named and labelled after the cluster (the HTTPRoute's backends), and a custom `serveService` is not used.
pub fn serve_service<H: Host>(ctx: &Ctx<'_, H>, cluster: &RayCluster) -> Result<Service, String> {
    let cluster_name = cluster.metadata.name.clone().unwrap_or_default();
    let incremental = crate::service::incremental(&ctx.service);
    let base = if incremental { &cluster_name } else { &ctx.name };
    let selector = string_map(&[(labels::RAY_CLUSTER, &cluster_name), (labels::RAY_SERVE, "true")]);
    let ours = string_map(&[
        (labels::RAY_ORIGINATED_FROM_CR_NAME, base),
        (labels::RAY_ORIGINATED_FROM_CRD, crd::RAY_SERVICE),
        (labels::RAY_SERVE, &format!("{base}-serve")),
    ]);
    let detected: Vec<ServicePort> = head_service_ports(cluster)
        .into_iter()
        .filter(|(name, _)| is_serving_port(name))
        .map(|(name, port)| ServicePort {
            name: Some(name),
            port,
            ..ServicePort::default()
        })
        .collect();
    let custom = ctx.spec().serve_service.clone().filter(|_| !incremental);
    if detected.is_empty() && custom.is_none() {
        return Err("Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') in the Ray \
                    head container; otherwise, the Kubernetes service for Ray Serve will not be created."
            .into());
    }
    let mut service = custom.unwrap_or_default();
    let user_ports = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    let spec = service.spec.get_or_insert_with(ServiceSpec::default);
    spec.selector = Some(selector);
    if !detected.is_empty() {
        let merged = detected
            .into_iter()
            .map(|auto| {
                user_ports
                    .iter()
                    .find(|u| u.name == auto.name)
                    .cloned()
                    .unwrap_or(auto)
            })
            .collect();
        spec.ports = Some(merged);
    }
    if spec.type_.as_deref().is_none_or(str::is_empty) {
        spec.type_ = ctx
            .spec()
            .ray_cluster_config
            .head_group_spec
            .service_type
            .clone()
            .filter(|t| !t.is_empty());
    }
    let meta = &mut service.metadata;
    meta.labels.get_or_insert_with(BTreeMap::new).extend(ours);
    meta.name = Some(if incremental {
        names::serve_service_name(&cluster_name)
    } else {
        serve_service_name(ctx)
    });
    meta.namespace = None;
    // With incremental upgrades each cluster's serve Service is controlled by that cluster (KubeRay's
    // `SetControllerReference(rayCluster, svc)`), so it goes with it; the host checks that the RayService
    // controls the cluster.
    meta.owner_references = incremental.then(|| vec![cluster_owner(cluster)]);
    meta.resource_version = None;
    meta.uid = None;
    service.status = None;
    Ok(service)
}

fn cluster_owner(cluster: &RayCluster) -> OwnerReference {
    OwnerReference {
        api_version: "ray.io/v1".into(),
        kind: "RayCluster".into(),
        name: cluster.metadata.name.clone().unwrap_or_default(),
        uid: cluster.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Writes `intent` unless the Service exists and already points at the same cluster.
pub fn reconcile<H: Host>(ctx: &Ctx<'_, H>, intent: &Service) -> Result<Service, HostError> {
    let name = intent.metadata.name.clone().unwrap_or_default();
    let existing: Option<Service> = ctx.host.get_as(&name)?;
    if let Some(existing) = &existing
        && selected_cluster(existing) == selected_cluster(intent)
    {
        return Ok(existing.clone());
    }
    let kind = Kind::of::<Service>();
    let key = ctx.key(&name);
    let report = if existing.is_some() {
        Report {
            action: action::UPDATE,
            done: reason::UPDATED_SERVICE,
            failed: reason::FAILED_TO_UPDATE_SERVICE,
            what: "the service",
            kind: &kind,
            name: &name,
            key: &key,
        }
    } else {
        Report {
            action: action::CREATE,
            done: reason::CREATED_SERVICE,
            failed: reason::FAILED_TO_CREATE_SERVICE,
            what: "the service",
            kind: &kind,
            name: &name,
            key: &key,
        }
    };
    report.run(ctx.host, || ctx.host.apply_as(intent))
}

/// Deletes one of the RayService's Services, reported as KubeRay does (`DeletedService` or
/// `FailedToDeleteService`).
pub fn delete<H: Host>(ctx: &Ctx<'_, H>, service: &Service) -> Result<(), HostError> {
    let name = service.metadata.name.clone().unwrap_or_default();
    let kind = Kind::of::<Service>();
    let key = ctx.key(&name);
    let report = Report {
        action: action::DELETE,
        done: reason::DELETED_SERVICE,
        failed: reason::FAILED_TO_DELETE_SERVICE,
        what: "the service",
        kind: &kind,
        name: &name,
        key: &key,
    };
    report.run(ctx.host, || ctx.host.delete_object(service))
}
