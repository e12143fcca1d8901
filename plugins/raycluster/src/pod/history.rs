//! `spec.historyServerOptions` with the `RayClusterHistoryServer` gate on (KubeRay's
//! `BuildCollectorContainer`): every Ray Pod gets the collector sidecar, which ships Ray's logs and events
//! to the history server's storage; the Ray container and the collector share Ray's log directory, and
//! Ray is told to export its events to the collector.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, ResourceRequirements},
    apimachinery::pkg::api::resource::Quantity,
};
use kuberay_crds::{CollectorOptions, RayCluster, constants::labels};

use super::env::{field, push, push_if_absent, value};
use crate::{auth, cluster::Identity, ray_start::NodeType};

pub use kuberay_rules::consts::history::{COLLECTOR_CONTAINER_NAME, env};

/// The port the collector receives Ray's events on.
const EVENTS_PORT: &str = "8084";

/// Ray's event types exported to the collector, KubeRay's default list.
pub const DEFAULT_EXPOSABLE_EVENT_TYPES: &str = "TASK_DEFINITION_EVENT,TASK_LIFECYCLE_EVENT,\
ACTOR_TASK_DEFINITION_EVENT,TASK_PROFILE_EVENT,DRIVER_JOB_DEFINITION_EVENT,DRIVER_JOB_LIFECYCLE_EVENT,\
ACTOR_DEFINITION_EVENT,ACTOR_LIFECYCLE_EVENT,NODE_DEFINITION_EVENT,NODE_LIFECYCLE_EVENT";

/// The collector options of a cluster whose Pods get the collector: the gate on and the options set.
pub fn collector_options<'c>(cluster: &'c RayCluster, id: &Identity) -> Option<&'c CollectorOptions> {
    if !id.gates.history_server {
        return None;
    }
    cluster
        .spec
        .history_server_options
        .as_ref()?
        .collector_options
        .as_ref()
}

fn default_resources() -> ResourceRequirements {
    let list = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(memory.into())),
        ])
    };
    ResourceRequirements {
        limits: Some(list("200m", "256Mi")),
        requests: Some(list("50m", "64Mi")),
        ..ResourceRequirements::default()
    }
}

/// The collector sidecar of a head or worker Pod (with the token of `authOptions.mode: token`, since it
/// queries the dashboard).
pub fn collector(
    cluster: &RayCluster,
    id: &Identity,
    options: &CollectorOptions,
    node: NodeType,
    fqdn: &str,
) -> Container {
    let mut container = Container {
        name: COLLECTOR_CONTAINER_NAME.into(),
        image: Some(options.image.clone().unwrap_or_default()),
        image_pull_policy: Some(
            options
                .image_pull_policy
                .clone()
                .unwrap_or_else(|| "IfNotPresent".into()),
        ),
        resources: Some(options.resources.clone().unwrap_or_else(default_resources)),
        ..Container::default()
    };
    let role = if node == NodeType::Head { "Head" } else { "Worker" };
    push(&mut container, field(env::POD_IP, "status.podIP"));
    push(&mut container, value(env::RAY_CLUSTER_NAME, &id.name));
    push(&mut container, value(env::RAY_CLUSTER_NAMESPACE, &id.namespace));
    push(&mut container, value(env::RAY_ROLE, role));
    push(&mut container, value(env::EVENTS_PORT, EVENTS_PORT));
    if !fqdn.is_empty() {
        push(&mut container, value(env::FQ_RAY_IP, fqdn));
    }
    let cluster_labels = cluster.metadata.labels.as_ref();
    let label = |key: &str| cluster_labels.and_then(|l| l.get(key)).filter(|v| !v.is_empty());
    if let Some(kind) = label(labels::RAY_ORIGINATED_FROM_CRD) {
        push(&mut container, value(env::OWNER_KIND, kind));
    }
    if let Some(name) = label(labels::RAY_ORIGINATED_FROM_CR_NAME) {
        push(&mut container, value(env::OWNER_NAME, name));
    }
    let user_env = options.env.clone().unwrap_or_default();
    if node == NodeType::Head && !user_env.iter().any(|e| e.name == env::RAY_DASHBOARD_ADDRESS) {
        push(
            &mut container,
            value(env::RAY_DASHBOARD_ADDRESS, "http://localhost:8265"),
        );
    }
    container.env.get_or_insert_with(Vec::new).extend(user_env);
    if auth::enabled(&cluster.spec) {
        auth::configure_container(&mut container, &id.name, &cluster.spec);
    }
    container
}

/// Whether the Pod has a collector container (by name, as KubeRay looks for it).
pub fn has_collector(containers: &[Container]) -> bool {
    containers.iter().any(|c| c.name == COLLECTOR_CONTAINER_NAME)
}

/// The Ray container's settings that export Ray's events to the collector, unless the user set them.
pub fn set_ray_container_env(ray: &mut Container) {
    for (name, default) in [
        (env::RAY_ENABLE_RAY_EVENT, "true"),
        (env::RAY_ENABLE_CORE_WORKER_RAY_EVENT_TO_AGGREGATOR, "true"),
        (env::EVENTS_EXPORT_ADDR, "http://localhost:8084/v1/events"),
        (env::EXPOSABLE_EVENT_TYPES, DEFAULT_EXPOSABLE_EVENT_TYPES),
        (
            env::PUBLISHER_EXPOSABLE_EVENT_TYPES,
            DEFAULT_EXPOSABLE_EVENT_TYPES,
        ),
    ] {
        push_if_absent(ray, value(name, default));
    }
}
