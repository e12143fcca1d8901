//! Services: `RayService` messages to and from `ray.io/v1` RayServices.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kuberay_crds::{AppStatus, RayService, RayServiceSpec};

use super::{Templates, cluster, labels, non_empty, time, unsorted};
use crate::{api, error::ApiResult};

/// The RayService KubeRay's apiserver creates for `service` (validated, namespace set); `stamp` is the
/// annotation (`ray.io/creation-timestamp` or `ray.io/update-timestamp`) with the server's time. The
/// head always opens the Serve ports.
pub(crate) fn to_ray_service(
    service: &api::RayService,
    templates: &Templates,
    stamp: (&str, &str),
) -> ApiResult<RayService> {
    let spec = cluster::required_spec(service.cluster_spec.as_ref())?;
    let ray_cluster_config = cluster::cluster_spec(&service.version, None, spec, templates, true)?;
    #[allow(
        deprecated,
        reason = "KubeRay still copies the deprecated thresholds to the RayService"
    )]
    let (service_threshold, deployment_threshold) = (
        service.service_unhealthy_second_threshold,
        service.deployment_unhealthy_second_threshold,
    );
    Ok(RayService {
        metadata: ObjectMeta {
            name: Some(service.name.clone()),
            namespace: Some(service.namespace.clone()),
            labels: Some(labels::managed_labels([(labels::USER, service.user.as_str())])),
            annotations: Some(BTreeMap::from([(stamp.0.to_owned(), stamp.1.to_owned())])),
            ..Default::default()
        },
        spec: RayServiceSpec {
            serve_config_v2: non_empty(&service.serve_config_v2),
            ray_cluster_config,
            service_unhealthy_second_threshold: (service_threshold > 0).then_some(service_threshold),
            deployment_unhealthy_second_threshold: (deployment_threshold > 0).then_some(deployment_threshold),
            ..Default::default()
        },
        status: None,
    })
}

/// The API's view of a RayService with `events` about it and its active cluster. `deleteAt` is only set
/// while the RayService is being deleted (KubeRay sends −1 seconds otherwise).
pub(crate) fn from_ray_service(service: &RayService, events: Vec<api::RayServiceEvent>) -> api::RayService {
    let meta = &service.metadata;
    let spec = &service.spec;
    #[allow(
        deprecated,
        reason = "the deprecated thresholds are still read back, as KubeRay does"
    )]
    api::RayService {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        user: labels::label(meta, labels::USER).to_owned(),
        version: spec.ray_cluster_config.ray_version.clone().unwrap_or_default(),
        serve_config_v2: spec.serve_config_v2.clone().unwrap_or_default(),
        service_unhealthy_second_threshold: spec.service_unhealthy_second_threshold.unwrap_or_default(),
        deployment_unhealthy_second_threshold: spec.deployment_unhealthy_second_threshold.unwrap_or_default(),
        cluster_spec: Some(cluster::from_cluster_spec(&spec.ray_cluster_config)),
        ray_service_status: Some(status(service, events)),
        created_at: time(meta.creation_timestamp.as_ref()),
        delete_at: time(meta.deletion_timestamp.as_ref()),
    }
}

fn status(service: &RayService, events: Vec<api::RayServiceEvent>) -> api::RayServiceStatus {
    let active = service
        .status
        .as_ref()
        .and_then(|s| s.active_service_status.clone())
        .unwrap_or_default();
    let cluster_status = active.ray_cluster_status.unwrap_or_default();
    api::RayServiceStatus {
        ray_service_events: events,
        ray_cluster_name: active.ray_cluster_name.unwrap_or_default(),
        ray_cluster_state: cluster_status
            .state
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        service_endpoint: unsorted(cluster_status.endpoints.as_ref()),
        serve_application_status: active
            .application_statuses
            .iter()
            .flatten()
            .map(|(name, app)| application(name, app))
            .collect(),
        ..Default::default()
    }
}

fn application(name: &str, app: &AppStatus) -> api::ServeApplicationStatus {
    api::ServeApplicationStatus {
        name: name.to_owned(),
        status: app.status.clone().unwrap_or_default(),
        message: app.message.clone().unwrap_or_default(),
        serve_deployment_status: app
            .serve_deployment_statuses
            .iter()
            .flatten()
            .map(|(deployment, d)| api::ServeDeploymentStatus {
                deployment_name: deployment.clone(),
                status: d.status.clone().unwrap_or_default(),
                message: d.message.clone().unwrap_or_default(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::fixtures::{self, map};

    const SERVE_CONFIG: &str = "applications:\n  - name: fruit\n    import_path: fruit.deployment_graph\n";

    fn service() -> api::RayService {
        api::RayService {
            name: "fruit".into(),
            namespace: "team-a".into(),
            user: "alice".into(),
            version: "2.9.0".into(),
            serve_config_v2: SERVE_CONFIG.into(),
            cluster_spec: Some(fixtures::cluster_spec()),
            ray_service_status: Some(api::RayServiceStatus::default()),
            ..Default::default()
        }
    }

    fn built() -> RayService {
        to_ray_service(
            &service(),
            &fixtures::templates(),
            (labels::CREATION_TIMESTAMP, "now"),
        )
        .unwrap_or_default()
    }

    #[test]
    fn ray_service_is_kuberays() {
        let rs = built();
        let labels = rs.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.len(), 3);
        assert_eq!(labels["ray.io/user"], "alice");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "kuberay-apiserver");
        assert_eq!(
            rs.metadata.annotations.clone().unwrap_or_default()["ray.io/creation-timestamp"],
            "now"
        );
        assert_eq!(rs.spec.serve_config_v2.as_deref(), Some(SERVE_CONFIG));
        assert_eq!(rs.spec.ray_cluster_config.ray_version.as_deref(), Some("2.9.0"));
        // The Serve ports are always open on a RayService's head.
        let head = rs
            .spec
            .ray_cluster_config
            .head_group_spec
            .template
            .spec
            .clone()
            .unwrap_or_default();
        let ports = head.containers[0].ports.clone().unwrap_or_default();
        assert!(
            ports
                .iter()
                .any(|p| p.name.as_deref() == Some("serve") && p.container_port == 8000)
        );
        assert!(
            ports
                .iter()
                .any(|p| p.name.as_deref() == Some("dashboard-agent") && p.container_port == 52365)
        );
    }

    #[test]
    fn round_trip_without_delete_time() {
        let back = from_ray_service(&built(), vec![]);
        assert_eq!(back, service());
        assert_eq!(back.delete_at, None);
    }

    #[test]
    fn status_and_events_are_read() {
        let mut rs = built();
        rs.status = serde_json::from_value(serde_json::json!({
            "activeServiceStatus": {
                "rayClusterName": "fruit-x1",
                "rayClusterStatus": {"state": "ready", "endpoints": {"serve": "8000"}},
                "applicationStatuses": {
                    "fruit": {
                        "status": "RUNNING", "message": "",
                        "serveDeploymentStatuses": {"MangoStand": {"status": "HEALTHY"}},
                    },
                },
            },
        }))
        .ok();
        let event = api::RayServiceEvent {
            id: "fruit.1".into(),
            ..Default::default()
        };
        let back = from_ray_service(&rs, vec![event.clone()]);
        let status = back.ray_service_status.unwrap_or_default();
        assert_eq!(status.ray_cluster_name, "fruit-x1");
        assert_eq!(status.ray_cluster_state, "ready");
        assert_eq!(status.service_endpoint, map(&[("serve", "8000")]));
        assert_eq!(status.ray_service_events, vec![event]);
        let app = &status.serve_application_status[0];
        assert_eq!((app.name.as_str(), app.status.as_str()), ("fruit", "RUNNING"));
        let deployment = &app.serve_deployment_status[0];
        assert_eq!(
            (deployment.deployment_name.as_str(), deployment.status.as_str()),
            ("MangoStand", "HEALTHY")
        );
    }
}
