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
#[derive(Debug, Clone)]
pub struct Services {
    resources: ResourceManager,
    /// The largest request message each service decodes.
    max_message_size: usize,
}

impl Default for Services {
    fn default() -> Self {
        Self::system()
    }
}

impl Services {
    /// Services whose timestamps come from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            resources: ResourceManager::new(clock),
            max_message_size: 4 << 20,
        }
    }

    /// Services that refuse request messages larger than `bytes`.
    #[must_use]
    pub fn with_max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Services on the system clock.
    pub fn system() -> Self {
        Self::new(Arc::new(SystemClock))
    }

    /// `proto.ClusterService`, ready to mount.
    pub fn clusters(&self) -> ClusterServiceServer<ClusterServer> {
        ClusterServiceServer::new(ClusterServer::new(self.resources.clone()))
            .max_decoding_message_size(self.max_message_size)
    }

    /// `proto.ComputeTemplateService`, ready to mount.
    pub fn compute_templates(&self) -> ComputeTemplateServiceServer<ComputeTemplateServer> {
        ComputeTemplateServiceServer::new(ComputeTemplateServer::new(self.resources.clone()))
            .max_decoding_message_size(self.max_message_size)
    }

    /// `proto.RayJobService`, ready to mount.
    pub fn jobs(&self) -> RayJobServiceServer<RayJobServer> {
        RayJobServiceServer::new(RayJobServer::new(self.resources.clone()))
            .max_decoding_message_size(self.max_message_size)
    }

    /// `proto.RayServeService`, ready to mount.
    pub fn serve(&self) -> RayServeServiceServer<RayServeServer> {
        RayServeServiceServer::new(RayServeServer::new(self.resources.clone()))
            .max_decoding_message_size(self.max_message_size)
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

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;
    use crate::{api::cluster_service_server::ClusterService, context::CallContext};

    /// A client of an API server that is not there: any call that reaches Kubernetes fails.
    fn unreachable_client() -> kube::Client {
        let url = "http://127.0.0.1:9".parse().unwrap_or_default();
        let mut config = kube::Config::new(url);
        config.connect_timeout = Some(std::time::Duration::from_millis(200));
        kube::Client::try_from(config).unwrap_or_else(|e| panic!("{e}"))
    }

    fn with_context<T>(message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.extensions_mut().insert(CallContext {
            caller: None,
            kube: unreachable_client(),
        });
        request
    }

    #[tokio::test]
    async fn requests_are_validated_before_anything_reaches_kubernetes() {
        let server = ClusterServer::new(ResourceManager::default());
        let mut cluster = convert::fixtures::cluster();
        cluster.name = "Not_A_Name".into();
        let request = api::CreateClusterRequest {
            cluster: Some(cluster),
            namespace: "team-a".into(),
        };
        let status = server.create_cluster(with_context(request)).await.err();
        assert_eq!(status.map(|s| s.code()), Some(Code::InvalidArgument));
        let request = api::GetClusterRequest {
            name: String::new(),
            namespace: "team-a".into(),
        };
        let status = server.get_cluster(with_context(request)).await.err();
        assert_eq!(status.map(|s| s.code()), Some(Code::InvalidArgument));
    }

    #[tokio::test]
    async fn an_unreachable_api_server_is_unavailable_and_a_missing_context_internal() {
        let server = ClusterServer::new(ResourceManager::default());
        let get = || api::GetClusterRequest {
            name: "demo".into(),
            namespace: "team-a".into(),
        };
        let status = server.get_cluster(with_context(get())).await.err();
        assert_eq!(
            status.as_ref().map(tonic::Status::code),
            Some(Code::Unavailable),
            "{status:?}"
        );
        let status = server.get_cluster(tonic::Request::new(get())).await.err();
        assert_eq!(status.map(|s| s.code()), Some(Code::Internal));
    }

    /// The `grpc-status` of an (empty) unary call to `path` through `routes`.
    async fn grpc_status(routes: &Routes, path: &str) -> Option<String> {
        use tower::ServiceExt as _;
        let empty_message = bytes::Bytes::from_static(&[0, 0, 0, 0, 0]);
        let request = http::Request::post(path)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(http_body_util::Full::new(empty_message))
            .ok()?;
        let response = routes.clone().oneshot(request).await.ok()?;
        let status = response.headers().get("grpc-status")?.to_str().ok()?;
        Some(status.to_owned())
    }

    #[tokio::test]
    async fn the_four_services_mount_together() {
        let routes = Services::system().routes();
        // Mounted: the call reaches the service, which finds no call context (Internal, 13).
        for path in [
            "/proto.ClusterService/GetCluster",
            "/proto.ComputeTemplateService/ListAllComputeTemplates",
            "/proto.RayJobService/ListAllRayJobs",
            "/proto.RayServeService/ListAllRayServices",
        ] {
            assert_eq!(grpc_status(&routes, path).await.as_deref(), Some("13"), "{path}");
        }
        // The job-submission service is not among them (Unimplemented, 12).
        let path = "/proto.RayJobSubmissionService/ListJobDetails";
        assert_eq!(grpc_status(&routes, path).await.as_deref(), Some("12"));
    }
}
