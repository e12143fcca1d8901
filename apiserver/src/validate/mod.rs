//! The checks a request passes before anything reaches Kubernetes: KubeRay's rules (required fields, pull
//! policies, replica counts, CPU and memory of templates) and the ones KubeRay leaves to a failure later
//! (names the objects could not have, a body namespace that contradicts the path, values no Pod could
//! use). Every failure is [`ApiError::InvalidArgument`] with a message that names the field by its JSON
//! name.

mod spec;
mod syntax;

use crate::{
    api,
    convert::compute_template::memory_quantity,
    error::{ApiError, ApiResult},
};

pub(crate) use syntax::{is_qualified_name, is_quantity};

/// Longest RayCluster name: KubeRay's, so that every Service name derived from it stays a valid label.
const MAX_CLUSTER_NAME: usize = 53;
/// Longest RayJob and RayService name: their clusters get a 6-character suffix.
const MAX_JOB_NAME: usize = 47;
const MAX_SERVICE_NAME: usize = 47;

pub(crate) fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::InvalidArgument(message.into())
}

/// The namespace of a request path.
pub(crate) fn namespace(namespace: &str) -> ApiResult<()> {
    if namespace.is_empty() {
        return Err(invalid("namespace is empty"));
    }
    if !syntax::is_dns1123_label(namespace) {
        return Err(invalid(format!(
            "namespace {namespace:?} is not a valid namespace name"
        )));
    }
    Ok(())
}

/// The namespace and name of a request path that names one object of the kind KubeRay's messages call
/// `what` (`Cluster`, `Compute template`, `job`, `ray service`). An empty name is refused first, with
/// KubeRay's message: a path ending in a slash (`GET .../clusters/`) asks for the object named "".
pub(crate) fn object_ref(what: &str, namespace_: &str, name: &str) -> ApiResult<()> {
    if name.is_empty() {
        return Err(invalid(format!(
            "{what} name is empty. Please specify a valid value."
        )));
    }
    namespace(namespace_)?;
    path_name(&format!("{what} name"), name)
}

/// A name from a request path, of an object to read or delete: one that an object can have (a DNS-1123
/// subdomain, as every kind this API reads requires). It then travels to Kubernetes as exactly one path
/// segment; a name with `#`, `?`, `/` or control characters could otherwise turn a read into a list or
/// another request, or not be sendable at all.
pub(crate) fn path_name(field: &str, name: &str) -> ApiResult<()> {
    if name.is_empty() {
        return Err(invalid(format!("{field} is empty")));
    }
    if !syntax::is_dns1123_subdomain(name) {
        return Err(invalid(format!(
            "{field} {name:?} is not a valid Kubernetes object name: at most 253 lower-case letters, digits, \
             '-' or '.', starting and ending with a letter or digit"
        )));
    }
    Ok(())
}

/// A page size: 0 (everything) or more.
pub(crate) fn page_size(field: &str, size: i64) -> ApiResult<()> {
    if size < 0 {
        return Err(invalid(format!("{field} must not be negative (got {size})")));
    }
    Ok(())
}

/// Takes the path's namespace into a body whose own namespace is empty or the same.
fn adopt_namespace(what: &str, body: &mut String, path: &str) -> ApiResult<()> {
    namespace(path)?;
    if !body.is_empty() && body != path {
        return Err(invalid(format!(
            "{what}.namespace {body:?} differs from the namespace of the request path {path:?}"
        )));
    }
    path.clone_into(body);
    Ok(())
}

fn required<T>(field: &str, value: Option<T>) -> ApiResult<T> {
    value.ok_or_else(|| invalid(format!("{field} is required")))
}

/// A name that must be a DNS-1035 label of at most `max` characters, as the kind requires.
fn object_name(field: &str, kind: &str, name: &str, max: usize) -> ApiResult<()> {
    if name.is_empty() {
        return Err(invalid(format!("{field} is empty")));
    }
    if name.len() > max || !syntax::is_dns1035_label(name) {
        return Err(invalid(format!(
            "{field} {name:?} is not a valid {kind} name: it must consist of lower-case letters, digits and \
             '-', start with a letter, end with a letter or digit, and have at most {max} characters"
        )));
    }
    Ok(())
}

/// `user` is stored as the `ray.io/user` label.
fn user(field: &str, user: &str) -> ApiResult<()> {
    if user.is_empty() {
        return Err(invalid(format!("{field} is empty")));
    }
    label_value(field, user)
}

fn label_value(field: &str, value: &str) -> ApiResult<()> {
    if !syntax::is_label_value(value) {
        return Err(invalid(format!(
            "{field} {value:?} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', \
             starting and ending with a letter or digit"
        )));
    }
    Ok(())
}

/// Validates a CreateCluster request and returns its cluster in the path's namespace.
pub(crate) fn create_cluster(request: api::CreateClusterRequest) -> ApiResult<api::Cluster> {
    let mut cluster = required("cluster", request.cluster)?;
    adopt_namespace("cluster", &mut cluster.namespace, &request.namespace)?;
    self::cluster(&cluster)?;
    Ok(cluster)
}

/// A cluster to create.
pub(crate) fn cluster(cluster: &api::Cluster) -> ApiResult<()> {
    object_name("cluster.name", "RayCluster", &cluster.name, MAX_CLUSTER_NAME)?;
    user("cluster.user", &cluster.user)?;
    label_value("cluster.version", &cluster.version)?;
    if api::cluster::Environment::try_from(cluster.environment).is_err() {
        return Err(invalid(format!(
            "cluster.environment {} is not a known environment",
            cluster.environment
        )));
    }
    spec::annotations("cluster.annotations", &cluster.annotations)?;
    if let Some(envs) = &cluster.envs {
        spec::environment("cluster.envs", envs)?;
    }
    let cluster_spec = required("cluster.clusterSpec", cluster.cluster_spec.as_ref())?;
    spec::cluster_spec("cluster.clusterSpec", cluster_spec, &cluster.version)
}

/// Validates a CreateComputeTemplate request and returns its template in the path's namespace.
pub(crate) fn create_compute_template(
    request: api::CreateComputeTemplateRequest,
) -> ApiResult<api::ComputeTemplate> {
    let mut template = required("computeTemplate", request.compute_template)?;
    adopt_namespace("computeTemplate", &mut template.namespace, &request.namespace)?;
    compute_template(&template)?;
    Ok(template)
}

/// A compute template to create.
pub(crate) fn compute_template(template: &api::ComputeTemplate) -> ApiResult<()> {
    let name = &template.name;
    if name.is_empty() {
        return Err(invalid("computeTemplate.name is empty"));
    }
    // The name is a ConfigMap's and the value of the `ray.io/compute-template` label.
    if name.len() > 63 || !syntax::is_dns1123_subdomain(name) {
        return Err(invalid(format!(
            "computeTemplate.name {name:?} is not a valid template name: at most 63 lower-case letters, \
             digits, '-' or '.', starting and ending with a letter or digit"
        )));
    }
    usable_template(template).map_err(|problem| invalid(format!("computeTemplate.{problem}")))?;
    for (i, toleration) in template.tolerations.iter().enumerate() {
        spec::toleration(&format!("computeTemplate.tolerations[{i}]"), toleration)?;
    }
    Ok(())
}

/// What makes a template unusable for sizing Pods (also checked on stored templates, which may have been
/// edited): the problem, starting with the field's name.
pub(crate) fn usable_template(template: &api::ComputeTemplate) -> Result<(), String> {
    if template.cpu == 0 {
        return Err("cpu must be greater than 0".into());
    }
    if template.memory == 0 {
        return Err("memory must be greater than 0".into());
    }
    let unit = &template.memory_unit;
    if !unit.is_empty() && !syntax::MEMORY_UNITS.contains(&unit.as_str()) {
        return Err(format!(
            "memoryUnit {unit:?} is not a memory unit (one of {})",
            syntax::MEMORY_UNITS.join(", ")
        ));
    }
    if !is_quantity(&memory_quantity(template)) {
        return Err(format!(
            "memory {:?} is not a quantity",
            memory_quantity(template)
        ));
    }
    if !template.gpu_accelerator.is_empty() && !is_qualified_name(&template.gpu_accelerator) {
        return Err(format!(
            "gpuAccelerator {:?} is not a resource name",
            template.gpu_accelerator
        ));
    }
    if let Some(name) = template.extended_resources.keys().find(|k| !is_qualified_name(k)) {
        return Err(format!("extendedResources: {name:?} is not a resource name"));
    }
    Ok(())
}

/// Validates a CreateRayJob request and returns its job in the path's namespace.
pub(crate) fn create_job(request: api::CreateRayJobRequest) -> ApiResult<api::RayJob> {
    let mut job = required("job", request.job)?;
    adopt_namespace("job", &mut job.namespace, &request.namespace)?;
    self::job(&job)?;
    Ok(job)
}

/// A job to create. With a `clusterSelector` the job runs on an existing cluster and its cluster spec is
/// not checked (as KubeRay does).
pub(crate) fn job(job: &api::RayJob) -> ApiResult<()> {
    object_name("job.name", "RayJob", &job.name, MAX_JOB_NAME)?;
    user("job.user", &job.user)?;
    label_value("job.version", &job.version)?;
    if job.entrypoint.trim().is_empty() {
        return Err(invalid("job.entrypoint is empty"));
    }
    spec::annotations("job.metadata", &job.metadata)?;
    spec::job_settings(job)?;
    if !job.cluster_selector.is_empty() {
        let selected = job
            .cluster_selector
            .get(kuberay_crds::constants::labels::RAY_CLUSTER);
        if selected.is_none_or(String::is_empty) {
            return Err(invalid(format!(
                "job.clusterSelector must name the cluster under the key {:?}",
                kuberay_crds::constants::labels::RAY_CLUSTER
            )));
        }
        return Ok(());
    }
    let cluster_spec = required(
        "job.clusterSpec (or job.clusterSelector)",
        job.cluster_spec.as_ref(),
    )?;
    spec::cluster_spec("job.clusterSpec", cluster_spec, &job.version)
}

/// Validates a CreateRayService request and returns its service in the path's namespace.
pub(crate) fn create_service(request: api::CreateRayServiceRequest) -> ApiResult<api::RayService> {
    let mut service = required("service", request.service)?;
    adopt_namespace("service", &mut service.namespace, &request.namespace)?;
    self::service(&service)?;
    Ok(service)
}

/// Validates an UpdateRayService request and returns its service, named and placed as the path says.
pub(crate) fn update_service(request: api::UpdateRayServiceRequest) -> ApiResult<api::RayService> {
    if request.name.is_empty() {
        return Err(invalid("name is empty"));
    }
    let mut service = required("service", request.service)?;
    adopt_namespace("service", &mut service.namespace, &request.namespace)?;
    if !service.name.is_empty() && service.name != request.name {
        return Err(invalid(format!(
            "service.name {:?} differs from the name of the request path {:?}",
            service.name, request.name
        )));
    }
    service.name = request.name;
    self::service(&service)?;
    Ok(service)
}

/// A service to create or replace.
pub(crate) fn service(service: &api::RayService) -> ApiResult<()> {
    object_name("service.name", "RayService", &service.name, MAX_SERVICE_NAME)?;
    user("service.user", &service.user)?;
    label_value("service.version", &service.version)?;
    spec::serve_config(&service.serve_config_v2)?;
    let cluster_spec = required("service.clusterSpec", service.cluster_spec.as_ref())?;
    spec::cluster_spec("service.clusterSpec", cluster_spec, &service.version)
}

#[cfg(test)]
mod tests;
