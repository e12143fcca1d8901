//! Reading and writing the objects the API manages, the same way for every kind: only objects carrying
//! the kind's label are visible (an unlabelled one is "not found", never an error), and every Kubernetes
//! error keeps the API server's meaning and message.

use std::fmt::Debug;

use k8s_openapi::{NamespaceResourceScope, api::core::v1::ConfigMap};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, ListParams, PostParams, Preconditions},
};
use kuberay_crds::{RayCluster, RayJob, RayService};
use serde::{Serialize, de::DeserializeOwned};

use super::{Listed, Page, Scope};
use crate::{
    convert::labels,
    error::{ApiError, ApiResult},
};

/// A kind the API manages.
pub(crate) trait Managed:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
    /// How messages name the kind.
    const NOUN: &'static str;
    /// The label `(key, value)` that makes an object of this kind visible to the API.
    const LABEL: (&'static str, &'static str);
}

impl Managed for RayCluster {
    const NOUN: &'static str = "RayCluster";
    const LABEL: (&'static str, &'static str) = (labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
}

impl Managed for RayJob {
    const NOUN: &'static str = "RayJob";
    const LABEL: (&'static str, &'static str) = (labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
}

impl Managed for RayService {
    const NOUN: &'static str = "RayService";
    const LABEL: (&'static str, &'static str) = (labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
}

impl Managed for ConfigMap {
    const NOUN: &'static str = "compute template";
    const LABEL: (&'static str, &'static str) = (labels::CONFIG_TYPE, labels::CONFIG_TYPE_TEMPLATE);
}

fn namespaced<K: Managed>(client: &Client, namespace: &str) -> Api<K> {
    Api::namespaced(client.clone(), namespace)
}

/// Whether the API shows `object`.
pub(crate) fn visible<K: Managed>(object: &K) -> bool {
    labels::has_label(object.meta(), K::LABEL.0, K::LABEL.1)
}

pub(crate) fn not_found<K: Managed>(namespace: &str, name: &str) -> ApiError {
    ApiError::NotFound(format!(
        "{} {name:?} not found in namespace {namespace:?}",
        K::NOUN
    ))
}

/// The object, if it exists and is visible.
pub(crate) async fn find<K: Managed>(client: &Client, namespace: &str, name: &str) -> ApiResult<Option<K>> {
    let found = namespaced::<K>(client, namespace)
        .get_opt(name)
        .await
        .map_err(|e| ApiError::kube(&format!("reading {} {namespace}/{name}", K::NOUN), e))?;
    Ok(found.filter(visible))
}

/// The object; NotFound when it does not exist or is not visible.
pub(crate) async fn get<K: Managed>(client: &Client, namespace: &str, name: &str) -> ApiResult<K> {
    find(client, namespace, name)
        .await?
        .ok_or_else(|| not_found::<K>(namespace, name))
}

/// One page of the visible objects in `scope`, with the token of the next page ("" on the last one).
pub(crate) async fn list<K: Managed>(client: &Client, scope: Scope<'_>, page: &Page) -> ApiResult<Listed<K>> {
    let (api, where_) = match scope {
        Scope::Namespace(namespace) => (
            namespaced::<K>(client, namespace),
            format!("in namespace {namespace}"),
        ),
        Scope::AllNamespaces => (Api::<K>::all(client.clone()), "in all namespaces".to_owned()),
    };
    let mut params = ListParams::default().labels(&format!("{}={}", K::LABEL.0, K::LABEL.1));
    if page.limit < 0 {
        return Err(ApiError::InvalidArgument(format!(
            "the page size must not be negative (got {})",
            page.limit
        )));
    }
    if page.limit > 0 {
        params = params.limit(u32::try_from(page.limit).unwrap_or(u32::MAX));
    }
    if !page.continue_token.is_empty() {
        params = params.continue_token(&page.continue_token);
    }
    let list = api.list(&params).await.map_err(|e| match e {
        kube::Error::Api(status) if status.code == 410 => ApiError::FailedPrecondition(format!(
            "listing {}s {where_}: the continue token has expired; list again from the first page",
            K::NOUN
        )),
        e => ApiError::kube(&format!("listing {}s {where_}", K::NOUN), e),
    })?;
    Ok(Listed {
        continue_token: list.metadata.continue_.unwrap_or_default(),
        items: list.items,
    })
}

/// Creates `object`; AlreadyExists (409) if the name is taken.
pub(crate) async fn create<K: Managed>(client: &Client, object: &K) -> ApiResult<K> {
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    namespaced::<K>(client, &namespace)
        .create(&PostParams::default(), object)
        .await
        .map_err(
            |e| match ApiError::kube(&format!("creating {} {namespace}/{name}", K::NOUN), e) {
                ApiError::AlreadyExists(_) => ApiError::AlreadyExists(format!(
                    "{} {name:?} already exists in namespace {namespace:?}",
                    K::NOUN
                )),
                other => other,
            },
        )
}

/// Replaces `object` (its resourceVersion says which version it replaces).
pub(crate) async fn replace<K: Managed>(client: &Client, object: &K) -> ApiResult<K> {
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    namespaced::<K>(client, &namespace)
        .replace(&name, &PostParams::default(), object)
        .await
        .map_err(|e| ApiError::kube(&format!("replacing {} {namespace}/{name}", K::NOUN), e))
}

/// Deletes the object if it is visible; only the very object that was checked is deleted (a UID
/// precondition), never one recreated meanwhile without the label.
pub(crate) async fn delete<K: Managed>(client: &Client, namespace: &str, name: &str) -> ApiResult<()> {
    let object: K = get(client, namespace, name).await?;
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: object.uid(),
            resource_version: None,
        }),
        ..Default::default()
    };
    match namespaced::<K>(client, namespace).delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(not_found::<K>(namespace, name)),
        Err(e) => Err(ApiError::kube(
            &format!("deleting {} {namespace}/{name}", K::NOUN),
            e,
        )),
    }
}
