//! The gRPC side: the API's services with the health service and server reflection (so `grpcurl` works
//! without the proto files), behind the request deadline and authentication. The REST gateway calls the
//! same core in process, so both protocols share every rule; only the gRPC port adds its own request logs
//! and metrics (the REST port logs its requests by REST route).

use std::{collections::HashSet, convert::Infallible, sync::Arc};

use axum::body::Body;
use tower::{ServiceBuilder, ServiceExt, util::BoxCloneSyncService};

use super::{deadline::DeadlineLayer, observe::RouteLabel};
use crate::{api, auth::AuthLayer};

/// The authenticated gRPC services as one cloneable service (what the gRPC port serves and the REST
/// gateway calls in process).
pub type Core =
    BoxCloneSyncService<http::Request<tonic::body::Body>, http::Response<tonic::body::Body>, Infallible>;

/// A service of the ports, over axum bodies.
pub type PortService = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// Health of the gRPC services as `grpc.health.v1` reports it: the API's services are SERVING while
/// the server runs, NOT_SERVING once it stops.
pub struct HealthReporter(tonic_health::server::HealthReporter);

impl HealthReporter {
    /// Marks every service as not serving (at shutdown).
    pub async fn stopping(&self) {
        for service in SERVICES {
            self.0
                .set_service_status(*service, tonic_health::ServingStatus::NotServing)
                .await;
        }
        self.0
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
    }
}

/// The fully qualified names of the API's services.
pub const SERVICES: &[&str] = &[
    "proto.ClusterService",
    "proto.ComputeTemplateService",
    "proto.RayJobService",
    "proto.RayJobSubmissionService",
    "proto.RayServeService",
];

/// Adds health and reflection to `routes` and puts authentication and the deadline in front.
pub async fn core(
    mut routes: tonic::service::RoutesBuilder,
    auth: AuthLayer,
    deadline: DeadlineLayer,
) -> anyhow::Result<(Core, HealthReporter)> {
    let (reporter, health) = tonic_health::server::health_reporter();
    for service in SERVICES {
        reporter
            .set_service_status(*service, tonic_health::ServingStatus::Serving)
            .await;
    }
    // The health service is described too, so that `grpcurl ... grpc.health.v1.Health/Check` works
    // without its proto file.
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    routes
        .add_service(health)
        .add_service(reflection)
        .add_service(reflection_alpha);
    let service = ServiceBuilder::new()
        .layer(deadline)
        .layer(auth)
        .service(routes.routes());
    Ok((BoxCloneSyncService::new(service), HealthReporter(reporter)))
}

/// The gRPC port's service: the core, with each response labelled by its method for metrics (methods
/// nobody serves are `unknown`, so labels stay bounded).
pub fn port_service(core: Core) -> PortService {
    let known: Arc<HashSet<String>> = Arc::new(known_methods());
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let request = request.map(tonic::body::Body::new);
        let label: Arc<str> = if known.contains(request.uri().path()) {
            request.uri().path().into()
        } else {
            "unknown".into()
        };
        let core = core.clone();
        async move {
            let mut response = core.oneshot(request).await?.map(Body::new);
            response.extensions_mut().insert(RouteLabel(label));
            Ok::<_, Infallible>(response)
        }
    });
    BoxCloneSyncService::new(service)
}

/// `/package.Service/Method` of every method of the API, health and reflection.
fn known_methods() -> HashSet<String> {
    let mut known = HashSet::new();
    if let Ok(pool) = prost_reflect::DescriptorPool::decode(api::FILE_DESCRIPTOR_SET) {
        for service in pool.services() {
            for method in service.methods() {
                known.insert(format!("/{}/{}", service.full_name(), method.name()));
            }
        }
    }
    known.insert("/grpc.health.v1.Health/Check".into());
    known.insert("/grpc.health.v1.Health/Watch".into());
    known.insert("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo".into());
    known.insert("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo".into());
    known
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };

    use super::*;
    use crate::{auth::Authenticator, metrics::Metrics};

    /// A client of an API server that is not there (reflection and health never reach it).
    fn unreachable_client() -> kube::Client {
        let url = "http://127.0.0.1:9".parse().unwrap_or_default();
        kube::Client::try_from(kube::Config::new(url)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn reflection_lists_the_api_and_the_health_service() {
        let auth = Authenticator::new(
            unreachable_client(),
            crate::auth::AuthMode::Kubernetes,
            vec![],
            Duration::ZERO,
            Metrics::new(),
        );
        let (core, _health) = core(
            tonic::service::RoutesBuilder::default(),
            AuthLayer::new(Arc::new(auth)),
            DeadlineLayer::new(Duration::from_secs(5)),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let mut client = ServerReflectionClient::new(core);
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut answers = client
            .server_reflection_info(futures::stream::iter([request]))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .into_inner();
        let answer = answers.message().await.ok().flatten();
        let Some(MessageResponse::ListServicesResponse(list)) = answer.and_then(|a| a.message_response)
        else {
            panic!("no list of services");
        };
        let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
        for service in SERVICES.iter().chain(&["grpc.health.v1.Health"]) {
            assert!(names.contains(service), "{service} not in {names:?}");
        }
    }
}
