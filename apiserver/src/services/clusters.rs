//! `proto.ClusterService`.

use tonic::{Request, Response, Status};

use super::cluster_message;
use crate::{
    api::{self, cluster_service_server::ClusterService},
    context::context,
    resources::{EventIndex, Page, ResourceManager, Scope},
    validate,
};

/// Clusters, as the caller.
#[derive(Debug, Clone)]
pub struct ClusterServer {
    resources: ResourceManager,
}

impl ClusterServer {
    /// The service, acting through `resources`.
    pub fn new(resources: ResourceManager) -> Self {
        Self { resources }
    }
}

#[tonic::async_trait]
impl ClusterService for ClusterServer {
    async fn create_cluster(
        &self,
        request: Request<api::CreateClusterRequest>,
    ) -> Result<Response<api::Cluster>, Status> {
        let ctx = context(&request)?;
        let cluster = validate::create_cluster(request.into_inner())?;
        let created = self.resources.create_cluster(&ctx.kube, &cluster).await?;
        tracing::info!(user = ctx.who(), namespace = %cluster.namespace, name = %cluster.name, "created RayCluster");
        // A cluster just created has no events yet.
        Ok(Response::new(cluster_message(&created, &EventIndex::default())))
    }

    async fn get_cluster(
        &self,
        request: Request<api::GetClusterRequest>,
    ) -> Result<Response<api::Cluster>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("Cluster", &request.namespace, &request.name)?;
        let cluster = self
            .resources
            .get_cluster(&ctx.kube, &request.namespace, &request.name)
            .await?;
        let clusters = [cluster];
        let events = self.resources.cluster_events(&ctx.kube, &clusters).await;
        Ok(Response::new(cluster_message(&clusters[0], &events)))
    }

    async fn list_cluster(
        &self,
        request: Request<api::ListClustersRequest>,
    ) -> Result<Response<api::ListClustersResponse>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::namespace(&request.namespace)?;
        validate::page_size("limit", request.limit)?;
        let (clusters, continue_token) = self
            .list(
                &ctx.kube,
                Scope::Namespace(&request.namespace),
                request.limit,
                request.r#continue,
            )
            .await?;
        Ok(Response::new(api::ListClustersResponse {
            clusters,
            r#continue: continue_token,
        }))
    }

    async fn list_all_clusters(
        &self,
        request: Request<api::ListAllClustersRequest>,
    ) -> Result<Response<api::ListAllClustersResponse>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::page_size("limit", request.limit)?;
        let (clusters, continue_token) = self
            .list(&ctx.kube, Scope::AllNamespaces, request.limit, request.r#continue)
            .await?;
        Ok(Response::new(api::ListAllClustersResponse {
            clusters,
            r#continue: continue_token,
        }))
    }

    async fn delete_cluster(
        &self,
        request: Request<api::DeleteClusterRequest>,
    ) -> Result<Response<()>, Status> {
        let ctx = context(&request)?;
        let request = request.into_inner();
        validate::object_ref("Cluster", &request.namespace, &request.name)?;
        self.resources
            .delete_cluster(&ctx.kube, &request.namespace, &request.name)
            .await?;
        tracing::info!(user = ctx.who(), namespace = %request.namespace, name = %request.name, "deleted RayCluster");
        Ok(Response::new(()))
    }
}

impl ClusterServer {
    /// One page of clusters with their events, and the next page's token.
    async fn list(
        &self,
        kube: &kube::Client,
        scope: Scope<'_>,
        limit: i64,
        continue_token: String,
    ) -> Result<(Vec<api::Cluster>, String), Status> {
        let page = Page {
            limit,
            continue_token,
        };
        let listed = self.resources.list_clusters(kube, scope, &page).await?;
        let events = self.resources.cluster_events(kube, &listed.items).await;
        let clusters = listed.items.iter().map(|c| cluster_message(c, &events)).collect();
        Ok((clusters, listed.continue_token))
    }
}
