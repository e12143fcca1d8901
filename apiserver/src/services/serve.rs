//! `proto.RayServeService`.

use tonic::{Request, Response, Status};

use super::service_message;
use crate::{
    api::{self, ray_serve_service_server::RayServeService},
    context::context,
    resources::{Page, ResourceManager, Scope},
    validate,
};

/// RayServices, as the caller.
#[derive(Debug, Clone)]
pub struct RayServeServer {
    resources: ResourceManager,
}

impl RayServeServer {
    /// The service, acting through `resources`.
    pub fn new(resources: ResourceManager) -> Self {
        Self { resources }
    }

    /// One page of services with their events, and the next page's token.
    async fn list(
        &self,
        kube: &kube::Client,
        scope: Scope<'_>,
        page_size: i32,
        page_token: String,
    ) -> Result<(Vec<api::RayService>, String), Status> {
        validate::page_size("pageSize", page_size.into())?;
        let page = Page {
            limit: page_size.into(),
            continue_token: page_token,
        };
        let listed = self.resources.list_services(kube, scope, &page).await?;
        let events = self.resources.service_events(kube, &listed.items).await;
        let services = listed.items.iter().map(|s| service_message(s, &events)).collect();
        Ok((services, listed.continue_token))
    }

    /// The answer to a create or an update: the service with the events there are.
    async fn answer(&self, kube: &kube::Client, service: kuberay_crds::RayService) -> api::RayService {
        let services = [service];
        let events = self.resources.service_events(kube, &services).await;
        service_message(&services[0], &events)
    }
}

#[tonic::async_trait]
impl RayServeService for RayServeServer {
    async fn create_ray_service(
        &self,
        request: Request<api::CreateRayServiceRequest>,
    ) -> Result<Response<api::RayService>, Status> {
        let ctx = context(&request)?;
        let service = validate::create_service(request.into_inner())?;
        let created = self.resources.create_service(&ctx.kube, &service).await?;
        tracing::info!(user = ctx.who(), namespace = %service.namespace, name = %service.name, "created RayService");
        Ok(Response::new(self.answer(&ctx.kube, created).await))
    }

    async fn update_ray_service(
        &self,
        request: Request<api::UpdateRayServiceRequest>,
    ) -> Result<Response<api::RayService>, Status> {
        let ctx = context(&request)?;
        let service = validate::update_service(request.into_inner())?;
        let updated = self.resources.update_service(&ctx.kube, &service).await?;
        tracing::info!(user = ctx.who(), namespace = %service.namespace, name = %service.name, "updated RayService");
        Ok(Response::new(self.answer(&ctx.kube, updated).await))
    }

    async fn get_ray_service(
        &self,
        request: Request<api::GetRayServiceRequest>,
    ) -> Result<Response<api::RayService>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("ray service", &request.namespace, &request.name)?;
        let service = self
            .resources
            .get_service(&ctx.kube, &request.namespace, &request.name)
            .await?;
        Ok(Response::new(self.answer(&ctx.kube, service).await))
    }

    async fn list_ray_services(
        &self,
        request: Request<api::ListRayServicesRequest>,
    ) -> Result<Response<api::ListRayServicesResponse>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::namespace(&request.namespace)?;
        let (services, next_page_token) = self
            .list(
                &ctx.kube,
                Scope::Namespace(&request.namespace),
                request.page_size,
                request.page_token,
            )
            .await?;
        Ok(Response::new(api::ListRayServicesResponse {
            services,
            total_size: 0,
            next_page_token,
        }))
    }

    async fn list_all_ray_services(
        &self,
        request: Request<api::ListAllRayServicesRequest>,
    ) -> Result<Response<api::ListAllRayServicesResponse>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        let (services, next_page_token) = self
            .list(
                &ctx.kube,
                Scope::AllNamespaces,
                request.page_size,
                request.page_token,
            )
            .await?;
        Ok(Response::new(api::ListAllRayServicesResponse {
            services,
            total_size: 0,
            next_page_token,
        }))
    }

    async fn delete_ray_service(
        &self,
        request: Request<api::DeleteRayServiceRequest>,
    ) -> Result<Response<()>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("ray service", &request.namespace, &request.name)?;
        self.resources
            .delete_service(&ctx.kube, &request.namespace, &request.name)
            .await?;
        tracing::info!(user = ctx.who(), namespace = %request.namespace, name = %request.name, "deleted RayService");
        Ok(Response::new(()))
    }
}
