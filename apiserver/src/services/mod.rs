//! The gRPC services of clusters, compute templates, jobs and Ray Serve services. Each call takes the
//! caller's context, validates the request, lets the [`ResourceManager`] act as the caller and converts
//! the result. REST requests reach them the same way, through the gateway.
//!
//! The server mounts them with [`Services::routes`] (or [`Services::add_to`] on its own
//! `RoutesBuilder`); the job-submission service is separate.

mod clusters;
mod compute_templates;
mod jobs;
mod serve;

use std::sync::Arc;

use kube::Resource as _;
use kuberay_crds::{RayCluster, RayService};
use tonic::service::{Routes, RoutesBuilder};

pub use clusters::ClusterServer;
pub use compute_templates::ComputeTemplateServer;
pub use jobs::RayJobServer;
pub use serve::RayServeServer;

use crate::{
    api::{
        self, cluster_service_server::ClusterServiceServer,
        compute_template_service_server::ComputeTemplateServiceServer,
        ray_job_service_server::RayJobServiceServer, ray_serve_service_server::RayServeServiceServer,
    },
    convert,
    resources::{Clock, EventIndex, ResourceManager, SystemClock, active_cluster},
};

/// The four services, sharing one resource manager (and its clock).
#[derive(Debug, Clone, Default)]
pub struct Services {
    resources: ResourceManager,
}

impl Services {
    /// Services whose timestamps come from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            resources: ResourceManager::new(clock),
        }
    }

    /// Services on the system clock.
    pub fn system() -> Self {
        Self::new(Arc::new(SystemClock))
    }

    pub fn clusters(&self) -> ClusterServiceServer<ClusterServer> {
        ClusterServiceServer::new(ClusterServer::new(self.resources.clone()))
    }

    pub fn compute_templates(&self) -> ComputeTemplateServiceServer<ComputeTemplateServer> {
        ComputeTemplateServiceServer::new(ComputeTemplateServer::new(self.resources.clone()))
    }

    pub fn jobs(&self) -> RayJobServiceServer<RayJobServer> {
        RayJobServiceServer::new(RayJobServer::new(self.resources.clone()))
    }

    pub fn serve(&self) -> RayServeServiceServer<RayServeServer> {
        RayServeServiceServer::new(RayServeServer::new(self.resources.clone()))
    }

    /// Adds the four services to `builder`.
    pub fn add_to<'a>(&self, builder: &'a mut RoutesBuilder) -> &'a mut RoutesBuilder {
        builder
            .add_service(self.clusters())
            .add_service(self.compute_templates())
            .add_service(self.jobs())
            .add_service(self.serve())
    }

    /// The four services as routes of their own.
    pub fn routes(&self) -> Routes {
        let mut builder = RoutesBuilder::default();
        self.add_to(&mut builder);
        builder.routes()
    }
}

/// The API's view of `cluster` with its events from `events`.
fn cluster_message(cluster: &RayCluster, events: &EventIndex) -> api::Cluster {
    let meta = cluster.meta();
    let (namespace, name) = (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    );
    let events = events
        .about(namespace, &RayCluster::kind(&()), name, meta.uid.as_deref())
        .into_iter()
        .map(|e| convert::events::cluster_event(name, e))
        .collect();
    convert::cluster::from_ray_cluster(cluster, events)
}

/// The API's view of `service` with the events about it and its active cluster.
fn service_message(service: &RayService, events: &EventIndex) -> api::RayService {
    let meta = service.meta();
    let (namespace, name) = (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    );
    let mut about = events.about(namespace, &RayService::kind(&()), name, meta.uid.as_deref());
    if let Some(cluster) = active_cluster(service) {
        about.extend(events.about(namespace, &RayCluster::kind(&()), cluster, None));
    }
    let events = about
        .into_iter()
        .map(|e| convert::events::service_event(name, e))
        .collect();
    convert::service::from_ray_service(service, events)
}
