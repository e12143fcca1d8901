//! `proto.RayJobService`.

use tonic::{Request, Response, Status};

use crate::{
    api::{self, ray_job_service_server::RayJobService},
    context::context,
    convert::job::from_ray_job,
    resources::{Page, ResourceManager, Scope},
    validate,
};

/// RayJobs, as the caller.
#[derive(Debug, Clone)]
pub struct RayJobServer {
    resources: ResourceManager,
}

impl RayJobServer {
    /// The service, acting through `resources`.
    pub fn new(resources: ResourceManager) -> Self {
        Self { resources }
    }

    async fn list(
        &self,
        kube: &kube::Client,
        scope: Scope<'_>,
        limit: i64,
        continue_token: String,
    ) -> Result<(Vec<api::RayJob>, String), Status> {
        validate::page_size("limit", limit)?;
        let page = Page {
            limit,
            continue_token,
        };
        let listed = self.resources.list_jobs(kube, scope, &page).await?;
        Ok((
            listed.items.iter().map(from_ray_job).collect(),
            listed.continue_token,
        ))
    }
}

#[tonic::async_trait]
impl RayJobService for RayJobServer {
    async fn create_ray_job(
        &self,
        request: Request<api::CreateRayJobRequest>,
    ) -> Result<Response<api::RayJob>, Status> {
        let ctx = context(&request)?;
        let job = validate::create_job(request.into_inner())?;
        let created = self.resources.create_job(&ctx.kube, &job).await?;
        tracing::info!(user = ctx.who(), namespace = %job.namespace, name = %job.name, "created RayJob");
        Ok(Response::new(from_ray_job(&created)))
    }

    async fn get_ray_job(
        &self,
        request: Request<api::GetRayJobRequest>,
    ) -> Result<Response<api::RayJob>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("job", &request.namespace, &request.name)?;
        let job = self
            .resources
            .get_job(&ctx.kube, &request.namespace, &request.name)
            .await?;
        Ok(Response::new(from_ray_job(&job)))
    }

    async fn list_ray_jobs(
        &self,
        request: Request<api::ListRayJobsRequest>,
    ) -> Result<Response<api::ListRayJobsResponse>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::namespace(&request.namespace)?;
        let (jobs, continue_token) = self
            .list(
                &ctx.kube,
                Scope::Namespace(&request.namespace),
                request.limit,
                request.r#continue,
            )
            .await?;
        Ok(Response::new(api::ListRayJobsResponse {
            jobs,
            r#continue: continue_token,
        }))
    }

    async fn list_all_ray_jobs(
        &self,
        request: Request<api::ListAllRayJobsRequest>,
    ) -> Result<Response<api::ListAllRayJobsResponse>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        let (jobs, continue_token) = self
            .list(&ctx.kube, Scope::AllNamespaces, request.limit, request.r#continue)
            .await?;
        Ok(Response::new(api::ListAllRayJobsResponse {
            jobs,
            r#continue: continue_token,
        }))
    }

    async fn delete_ray_job(
        &self,
        request: Request<api::DeleteRayJobRequest>,
    ) -> Result<Response<()>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("job", &request.namespace, &request.name)?;
        self.resources
            .delete_job(&ctx.kube, &request.namespace, &request.name)
            .await?;
        tracing::info!(user = ctx.who(), namespace = %request.namespace, name = %request.name, "deleted RayJob");
        Ok(Response::new(()))
    }
}
