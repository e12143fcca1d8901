//! The RayJob's own head Service, `<rayjob>-head-svc`: a stable name for the dashboard of whichever cluster
//! runs the job now (a retry brings a new cluster). It is the cluster's head Service under another name and
//! labels, so it is derived from that Service as the cluster's controller built it; it is written when it
//! is missing or still points at another cluster, and left alone otherwise (as KubeRay does).

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Service, ServicePort, ServiceSpec},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::{
    RayCluster,
    constants::{labels, node_type},
};
use kuberay_plugin_sdk::{Event, Host, Kind, LogLevel, ReconcileError, TypedHost};
use kuberay_rules::names;

use crate::{
    consts::{action, crd, reason},
    context::Ctx,
    spec,
};

/// The RayJob's Service for `cluster`, from the cluster's own head Service.
pub fn build(job_name: &str, cluster_head: &Service) -> Service {
    let source = cluster_head.spec.clone().unwrap_or_default();
    let ports = source.ports.map(|ports| {
        ports
            .into_iter()
            .map(|p| ServicePort {
                // Node ports belong to the cluster's Service; asking for the same ones would collide.
                node_port: None,
                ..p
            })
            .collect()
    });
    let headless = source.cluster_ip.as_deref() == Some("None");
    Service {
        metadata: ObjectMeta {
            name: Some(names::default_head_service(job_name)),
            labels: Some(BTreeMap::from([
                (labels::RAY_ORIGINATED_FROM_CR_NAME.into(), job_name.into()),
                (labels::RAY_ORIGINATED_FROM_CRD.into(), crd::RAY_JOB.into()),
                (labels::RAY_NODE_TYPE.into(), node_type::HEAD.into()),
                (
                    labels::RAY_IDENTIFIER.into(),
                    names::check_label(&format!("{job_name}-{}", node_type::HEAD)),
                ),
            ])),
            annotations: cluster_head
                .metadata
                .annotations
                .clone()
                .filter(|a| !a.is_empty()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: source.selector,
            ports,
            type_: source.type_,
            cluster_ip: headless.then(|| "None".to_string()),
            publish_not_ready_addresses: source.publish_not_ready_addresses,
            external_traffic_policy: source.external_traffic_policy,
            load_balancer_source_ranges: source.load_balancer_source_ranges,
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

fn selected_cluster(service: &Service) -> Option<&str> {
    service
        .spec
        .as_ref()?
        .selector
        .as_ref()?
        .get(labels::RAY_CLUSTER)
        .map(String::as_str)
}

/// Points the RayJob's head Service at `cluster` (not in clusterSelector mode: that cluster is not the
/// RayJob's to expose).
pub fn reconcile<H: Host>(ctx: &Ctx<'_, H>, cluster: &RayCluster) -> Result<(), ReconcileError> {
    if spec::uses_cluster_selector(ctx.spec()) {
        return Ok(());
    }
    let cluster_name = cluster.metadata.name.as_deref().unwrap_or_default();
    let Some(cluster_head) = ctx.get::<Service>(&names::cluster_head_service(cluster))? else {
        ctx.log(
            LogLevel::Info,
            &format!("the head Service of RayCluster {cluster_name} does not exist yet"),
        );
        return Ok(());
    };
    let name = names::default_head_service(&ctx.name);
    let existing = ctx.get::<Service>(&name)?;
    let update = match &existing {
        Some(current) if selected_cluster(current) == Some(cluster_name) => return Ok(()),
        Some(_) => true,
        None => false,
    };
    let desired = build(&ctx.name, &cluster_head);
    let key = ctx.key(&name);
    let (ok_reason, failed_reason, verb, act) = if update {
        (
            reason::UPDATED_SERVICE,
            reason::FAILED_TO_UPDATE_SERVICE,
            "update",
            action::UPDATE,
        )
    } else {
        (
            reason::CREATED_SERVICE,
            reason::FAILED_TO_CREATE_SERVICE,
            "create",
            action::CREATE,
        )
    };
    match ctx.host.apply_as(&desired) {
        Ok(_) => {
            let done = if update { "Updated" } else { "Created" };
            ctx.event(
                Event::normal(ok_reason, act, format!("{done} the service {key}"))
                    .about(Kind::of::<Service>(), &name),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                failed_reason,
                act,
                format!("Failed to {verb} the service {key}, {}", e.message()),
            ));
            Err(e.into())
        }
    }
}
