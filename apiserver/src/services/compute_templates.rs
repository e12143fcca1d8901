//! `proto.ComputeTemplateService`.

use tonic::{Request, Response, Status};

use crate::{
    api::{self, compute_template_service_server::ComputeTemplateService},
    context::context,
    convert::compute_template::from_config_map,
    resources::{ResourceManager, Scope},
    validate,
};

/// Compute templates, as the caller.
#[derive(Debug, Clone)]
pub struct ComputeTemplateServer {
    resources: ResourceManager,
}

impl ComputeTemplateServer {
    /// The service, acting through `resources`.
    pub fn new(resources: ResourceManager) -> Self {
        Self { resources }
    }
}

#[tonic::async_trait]
impl ComputeTemplateService for ComputeTemplateServer {
    async fn create_compute_template(
        &self,
        request: Request<api::CreateComputeTemplateRequest>,
    ) -> Result<Response<api::ComputeTemplate>, Status> {
        let ctx = context(&request)?;
        let template = validate::create_compute_template(request.into_inner())?;
        let created = self
            .resources
            .create_compute_template(&ctx.kube, &template)
            .await?;
        tracing::info!(user = ctx.who(), namespace = %template.namespace, name = %template.name, "created compute template");
        Ok(Response::new(from_config_map(&created)))
    }

    async fn get_compute_template(
        &self,
        request: Request<api::GetComputeTemplateRequest>,
    ) -> Result<Response<api::ComputeTemplate>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("Compute template", &request.namespace, &request.name)?;
        let template = self
            .resources
            .get_compute_template(&ctx.kube, &request.namespace, &request.name)
            .await?;
        Ok(Response::new(from_config_map(&template)))
    }

    async fn list_compute_templates(
        &self,
        request: Request<api::ListComputeTemplatesRequest>,
    ) -> Result<Response<api::ListComputeTemplatesResponse>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::namespace(&request.namespace)?;
        let templates = self
            .resources
            .list_compute_templates(&ctx.kube, Scope::Namespace(&request.namespace))
            .await?;
        Ok(Response::new(api::ListComputeTemplatesResponse {
            compute_templates: templates.iter().map(from_config_map).collect(),
        }))
    }

    async fn list_all_compute_templates(
        &self,
        request: Request<api::ListAllComputeTemplatesRequest>,
    ) -> Result<Response<api::ListAllComputeTemplatesResponse>, Status> {
        let ctx = context(&request)?;
        let templates = self
            .resources
            .list_compute_templates(&ctx.kube, Scope::AllNamespaces)
            .await?;
        Ok(Response::new(api::ListAllComputeTemplatesResponse {
            compute_templates: templates.iter().map(from_config_map).collect(),
        }))
    }

    async fn delete_compute_template(
        &self,
        request: Request<api::DeleteComputeTemplateRequest>,
    ) -> Result<Response<()>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("Compute template", &request.namespace, &request.name)?;
        self.resources
            .delete_compute_template(&ctx.kube, &request.namespace, &request.name)
            .await?;
        tracing::info!(user = ctx.who(), namespace = %request.namespace, name = %request.name, "deleted compute template");
        Ok(Response::new(()))
    }
}
