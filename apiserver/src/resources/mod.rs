//! The resource manager: the v1 API's operations on Kubernetes objects, done with the caller's client
//! ([`crate::context::CallContext::kube`]), so the API server's RBAC decides what each user may do.
//!
//! - Only objects labelled `app.kubernetes.io/managed-by=kuberay-apiserver` (compute templates:
//!   `ray.io/config-type=compute-template`) are visible: lists select on the label, and getting or deleting
//!   an object without it is NotFound.
//! - Every compute template a cluster, job or service refers to is read before anything is created; a
//!   missing one is refused (FailedPrecondition, HTTP 400) and nothing is left behind.
//! - Pages map to the Kubernetes list's `limit` and `continue` (0 lists everything).
//! - Events are read in as few calls as possible and never make a call fail.

mod events;
mod objects;
mod templates;

use std::sync::Arc;

use k8s_openapi::{Resource as _, api::core::v1::ConfigMap, jiff};
use kube::Client;
use kuberay_crds::{RayCluster, RayJob, RayService};

pub use events::EventIndex;
use events::EventQuery;

use crate::{
    api,
    convert::{self, labels},
    error::ApiResult,
    validate,
};

/// Where the server's time comes from (the timestamp annotations); tests use a fixed one.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> jiff::Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> jiff::Timestamp {
        jiff::Timestamp::now()
    }
}

/// Which namespaces a list covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// One namespace.
    Namespace(&'a str),
    /// One cluster-wide list.
    AllNamespaces,
}

/// A page of a list: `limit` objects (0: all of them) after the `continue_token` of the previous page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// Objects per page; 0 lists all of them.
    pub limit: i64,
    /// The token of the previous page; empty for the first.
    pub continue_token: String,
}

/// One page of objects and the token of the next ("" on the last page).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<K> {
    pub items: Vec<K>,
    /// Pass as [`Page::continue_token`] for the next page; empty on the last page.
    pub continue_token: String,
}

/// The v1 API's operations on Kubernetes objects. Each takes the caller's client.
#[derive(Clone)]
pub struct ResourceManager {
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ResourceManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceManager").finish_non_exhaustive()
    }
}

impl Default for ResourceManager {
    fn default() -> Self {
        Self::new(Arc::new(SystemClock))
    }
}

/// The compute template `name` of `namespace` as `kube` reads it; NotFound if there is no ConfigMap of
/// that name with the template label.
pub async fn read_compute_template(
    kube: &Client,
    namespace: &str,
    name: &str,
) -> ApiResult<api::ComputeTemplate> {
    let config_map: ConfigMap = objects::get(kube, namespace, name).await?;
    Ok(convert::compute_template::from_config_map(&config_map))
}

impl ResourceManager {
    /// A manager whose timestamp annotations come from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self { clock }
    }

    fn now(&self) -> String {
        convert::go_time_string(self.clock.now())
    }

    // Compute templates.

    /// Creates the ConfigMap of `template` (in its namespace); AlreadyExists if the name is taken.
    pub async fn create_compute_template(
        &self,
        kube: &Client,
        template: &api::ComputeTemplate,
    ) -> ApiResult<ConfigMap> {
        validate::compute_template(template)?;
        objects::create(kube, &convert::compute_template::to_config_map(template)).await
    }

    /// The template `name`; NotFound if there is no ConfigMap of that name with the template label.
    pub async fn get_compute_template(
        &self,
        kube: &Client,
        namespace: &str,
        name: &str,
    ) -> ApiResult<ConfigMap> {
        objects::get(kube, namespace, name).await
    }

    /// Every template in `scope`, with one list call (also across namespaces).
    pub async fn list_compute_templates(&self, kube: &Client, scope: Scope<'_>) -> ApiResult<Vec<ConfigMap>> {
        Ok(objects::list(kube, scope, &Page::default()).await?.items)
    }

    /// Deletes the template's ConfigMap (clusters built from it keep their resources).
    pub async fn delete_compute_template(&self, kube: &Client, namespace: &str, name: &str) -> ApiResult<()> {
        objects::delete::<ConfigMap>(kube, namespace, name).await
    }

    // Clusters.

    /// Creates the RayCluster of `cluster` (in its namespace) after reading its compute templates.
    pub async fn create_cluster(&self, kube: &Client, cluster: &api::Cluster) -> ApiResult<RayCluster> {
        validate::cluster(cluster)?;
        let spec = convert::cluster::required_spec(cluster.cluster_spec.as_ref())?;
        let templates = templates::resolve(kube, &cluster.namespace, spec).await?;
        let object = convert::cluster::to_ray_cluster(cluster, &templates, &self.now())?;
        objects::create(kube, &object).await
    }

    /// The managed RayCluster `name`; NotFound if it does not exist or is not managed by the API.
    pub async fn get_cluster(&self, kube: &Client, namespace: &str, name: &str) -> ApiResult<RayCluster> {
        objects::get(kube, namespace, name).await
    }

    /// One page of the managed RayClusters in `scope`.
    pub async fn list_clusters(
        &self,
        kube: &Client,
        scope: Scope<'_>,
        page: &Page,
    ) -> ApiResult<Listed<RayCluster>> {
        objects::list(kube, scope, page).await
    }

    /// Deletes the managed RayCluster `name` (its Pods and Services go with it).
    pub async fn delete_cluster(&self, kube: &Client, namespace: &str, name: &str) -> ApiResult<()> {
        objects::delete::<RayCluster>(kube, namespace, name).await
    }

    /// The events about `clusters` (one list call per namespace, or one for a single cluster).
    pub async fn cluster_events(&self, kube: &Client, clusters: &[RayCluster]) -> EventIndex {
        let objects = clusters.iter().map(|c| (namespace_of(c), name_of(c)));
        events::read(kube, EventQuery::for_objects(RayCluster::KIND, objects)).await
    }

    // Jobs.

    /// Creates the RayJob of `job` (in its namespace) after reading the compute templates of its cluster.
    /// A job that selects an existing cluster gets no cluster spec.
    pub async fn create_job(&self, kube: &Client, job: &api::RayJob) -> ApiResult<RayJob> {
        validate::job(job)?;
        let mut job = job.clone();
        if !job.cluster_selector.is_empty() {
            job.cluster_spec = None;
        }
        let templates = match &job.cluster_spec {
            Some(spec) => templates::resolve(kube, &job.namespace, spec).await?,
            None => convert::Templates::new(),
        };
        objects::create(kube, &convert::job::to_ray_job(&job, &templates)?).await
    }

    /// The managed RayJob `name`; NotFound if it does not exist or is not managed by the API.
    pub async fn get_job(&self, kube: &Client, namespace: &str, name: &str) -> ApiResult<RayJob> {
        objects::get(kube, namespace, name).await
    }

    /// One page of the managed RayJobs in `scope`.
    pub async fn list_jobs(&self, kube: &Client, scope: Scope<'_>, page: &Page) -> ApiResult<Listed<RayJob>> {
        objects::list(kube, scope, page).await
    }

    /// Deletes the managed RayJob `name`.
    pub async fn delete_job(&self, kube: &Client, namespace: &str, name: &str) -> ApiResult<()> {
        objects::delete::<RayJob>(kube, namespace, name).await
    }

    // Services.

    /// Creates the RayService of `service` (in its namespace) after reading its compute templates.
    pub async fn create_service(&self, kube: &Client, service: &api::RayService) -> ApiResult<RayService> {
        let object = self
            .build_service(kube, service, labels::CREATION_TIMESTAMP)
            .await?;
        objects::create(kube, &object).await
    }

    /// Replaces the spec of the managed RayService `service.name` with `service`'s, keeping the existing
    /// object's metadata (its resourceVersion, so a concurrent change is a conflict, and its finalizers,
    /// owner references and creation annotation) and stamping `ray.io/update-timestamp`.
    pub async fn update_service(&self, kube: &Client, service: &api::RayService) -> ApiResult<RayService> {
        let current: RayService = objects::get(kube, &service.namespace, &service.name).await?;
        let new = self
            .build_service(kube, service, labels::UPDATE_TIMESTAMP)
            .await?;
        let mut metadata = current.metadata;
        metadata
            .labels
            .get_or_insert_default()
            .extend(new.metadata.labels.unwrap_or_default());
        metadata
            .annotations
            .get_or_insert_default()
            .extend(new.metadata.annotations.unwrap_or_default());
        let replacement = RayService {
            metadata,
            spec: new.spec,
            status: None,
        };
        objects::replace(kube, &replacement).await
    }

    async fn build_service(
        &self,
        kube: &Client,
        service: &api::RayService,
        stamp: &str,
    ) -> ApiResult<RayService> {
        validate::service(service)?;
        let spec = convert::cluster::required_spec(service.cluster_spec.as_ref())?;
        let templates = templates::resolve(kube, &service.namespace, spec).await?;
        convert::service::to_ray_service(service, &templates, (stamp, &self.now()))
    }

    /// The managed RayService `name`; NotFound if it does not exist or is not managed by the API.
    pub async fn get_service(&self, kube: &Client, namespace: &str, name: &str) -> ApiResult<RayService> {
        objects::get(kube, namespace, name).await
    }

    /// One page of the managed RayServices in `scope`.
    pub async fn list_services(
        &self,
        kube: &Client,
        scope: Scope<'_>,
        page: &Page,
    ) -> ApiResult<Listed<RayService>> {
        objects::list(kube, scope, page).await
    }

    /// Deletes the managed RayService `name`.
    pub async fn delete_service(&self, kube: &Client, namespace: &str, name: &str) -> ApiResult<()> {
        objects::delete::<RayService>(kube, namespace, name).await
    }

    /// The events about `services` and about their active clusters.
    pub async fn service_events(&self, kube: &Client, services: &[RayService]) -> EventIndex {
        let objects = services.iter().map(|s| (namespace_of(s), name_of(s)));
        let mut queries = EventQuery::for_objects(RayService::KIND, objects);
        let clusters = services
            .iter()
            .filter_map(|s| Some((namespace_of(s), active_cluster(s)?)));
        queries.extend(EventQuery::for_objects(RayCluster::KIND, clusters));
        events::read(kube, queries).await
    }
}

fn namespace_of<K: kube::Resource>(object: &K) -> &str {
    object.meta().namespace.as_deref().unwrap_or_default()
}

fn name_of<K: kube::Resource>(object: &K) -> &str {
    object.meta().name.as_deref().unwrap_or_default()
}

/// The cluster that serves a RayService's traffic, if any.
pub(crate) fn active_cluster(service: &RayService) -> Option<&str> {
    service
        .status
        .as_ref()?
        .active_service_status
        .as_ref()?
        .ray_cluster_name
        .as_deref()
        .filter(|n| !n.is_empty())
}
