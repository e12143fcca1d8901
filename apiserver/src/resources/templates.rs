//! Compute templates: ConfigMaps with the `ray.io/config-type=compute-template` label. A ConfigMap without
//! it is not a template, whatever its name.

use std::collections::BTreeMap;

use futures::future::try_join_all;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;

use super::objects;
use crate::{
    api,
    convert::{Templates, compute_template},
    error::{ApiError, ApiResult},
    validate,
};

/// The groups of `spec` by the template they use, head first, each template once.
fn references(spec: &api::ClusterSpec) -> BTreeMap<&str, Vec<String>> {
    let mut refs: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    if let Some(head) = &spec.head_group_spec {
        refs.entry(&head.compute_template)
            .or_default()
            .push("the head group".to_owned());
    }
    for worker in &spec.worker_group_spec {
        refs.entry(&worker.compute_template)
            .or_default()
            .push(format!("worker group {:?}", worker.group_name));
    }
    refs
}

/// Reads every template `spec` refers to, before anything is created. A template that is missing (or not
/// usable) is a FailedPrecondition naming it and the groups that use it; nothing is created then.
pub(crate) async fn resolve(
    client: &Client,
    namespace: &str,
    spec: &api::ClusterSpec,
) -> ApiResult<Templates> {
    let refs = references(spec);
    let reads = refs
        .keys()
        .map(|name| objects::find::<ConfigMap>(client, namespace, name));
    let found = try_join_all(reads).await?;
    let mut templates = Templates::new();
    let mut problems = Vec::new();
    for ((name, users), config_map) in refs.iter().zip(found) {
        let users = users.join(", ");
        let Some(config_map) = config_map else {
            problems.push(format!(
                "compute template {name:?} (used by {users}) does not exist in namespace {namespace:?}"
            ));
            continue;
        };
        let template = compute_template::from_config_map(&config_map);
        match validate::usable_template(&template) {
            Ok(()) => {
                templates.insert((*name).to_owned(), template);
            }
            Err(problem) => problems.push(format!(
                "compute template {name:?} (used by {users}) is not usable: {problem}"
            )),
        }
    }
    if problems.is_empty() {
        Ok(templates)
    } else {
        Err(ApiError::FailedPrecondition(problems.join("; ")))
    }
}
