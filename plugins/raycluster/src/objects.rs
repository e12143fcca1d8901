//! The cluster's objects other than Pods, in KubeRay's order: the autoscaler's ServiceAccount, Role and
//! RoleBinding, the Ingress, and the head, headless and serve Services. Like KubeRay, the operator
//! creates each once and then leaves it alone (so edits by users or other controllers stick), except the
//! Ingress, which follows the spec.

use k8s_openapi::{
    Metadata, Resource,
    api::{
        core::v1::{Service, ServiceAccount},
        networking::v1::Ingress,
        rbac::v1::{Role, RoleBinding},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::constants::{annotations, labels};
use kuberay_plugin_sdk::subset;
use kuberay_plugin_sdk::{Event, Host, HostError, Kind};
use kuberay_rules::names;
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    autoscaler,
    cluster::{self, num_of_hosts},
    consts::{action, reason},
    context::{Ctx, Failure},
    ingress, service,
};

/// Applies `object` as a new object and records `created` (or `failed` when the API refuses).
fn create<H: Host, K>(
    ctx: &Ctx<'_, H>,
    object: &K,
    created: &str,
    failed: &str,
    what: &str,
) -> Result<(), Failure>
where
    K: Resource + Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned,
{
    let name = object.metadata().name.clone().unwrap_or_default();
    let key = format!("{}/{name}", ctx.id.namespace);
    match ctx.apply(object) {
        Ok(_) => {
            ctx.event(
                Event::normal(created, action::CREATE, format!("Created {what} {key}"))
                    .about(Kind::of::<K>(), &name),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                failed,
                action::CREATE,
                format!("Failed creating {what} {key}, {}", e.message()),
            ));
            Err(e.into())
        }
    }
}

/// The autoscaler's identity and permissions.
pub fn reconcile_autoscaler_rbac<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    let cluster = &ctx.cluster;
    if !cluster::autoscaling(&cluster.spec) {
        return Ok(());
    }
    let sa_name = autoscaler::service_account_name(cluster, &ctx.id);
    if ctx.get::<ServiceAccount>(&sa_name)?.is_none() {
        if autoscaler::user_service_account(cluster).is_some() {
            // A ServiceAccount the user named is theirs to create: one made by the operator would vanish
            // with this cluster, while RayService upgrades hand it to the next one.
            let message = format!(
                "If users specify ServiceAccountName for the head Pod, they need to create a ServiceAccount \
                 themselves. However, ServiceAccount {sa_name} is not found. Please create one. See the PR \
                 description of https://github.com/ray-project/kuberay/pull/1128 for more details."
            );
            ctx.event(Event::warning(
                reason::AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
                action::VALIDATE,
                format!("Failed to reconcile RayCluster {}. {message}", ctx.key()),
            ));
            return Err(Failure::from(HostError::NotFound(format!(
                "serviceaccounts \"{sa_name}\" not found"
            ))));
        }
        let sa = autoscaler::build_service_account(cluster, &ctx.id);
        create(
            ctx,
            &sa,
            reason::CREATED_SERVICE_ACCOUNT,
            reason::FAILED_TO_CREATE_SERVICE_ACCOUNT,
            "service account",
        )?;
    }
    if ctx.get::<Role>(&ctx.id.name)?.is_none() {
        let role = autoscaler::build_role(&ctx.id);
        create(
            ctx,
            &role,
            reason::CREATED_ROLE,
            reason::FAILED_TO_CREATE_ROLE,
            "role",
        )?;
    }
    if ctx.get::<RoleBinding>(&ctx.id.name)?.is_none() {
        let binding = autoscaler::build_role_binding(cluster, &ctx.id);
        create(
            ctx,
            &binding,
            reason::CREATED_ROLE_BINDING,
            reason::FAILED_TO_CREATE_ROLE_BINDING,
            "role binding",
        )?;
    }
    Ok(())
}

/// The dashboard Ingress, kept in line with the spec; an Ingress of that name that another owner controls
/// is reported and left alone.
pub fn reconcile_ingress<H: Host>(ctx: &Ctx<'_, H>, first_look: bool) -> Result<(), Failure> {
    if !ingress::enabled(&ctx.cluster) {
        return Ok(());
    }
    let desired = ingress::build(&ctx.cluster, &ctx.id);
    let name = names::ingress_name(&ctx.id.name);
    let key = format!("{}/{name}", ctx.id.namespace);
    let Some(live) = ctx.get_raw::<Ingress>(&name)? else {
        return create(
            ctx,
            &desired,
            reason::CREATED_INGRESS,
            reason::FAILED_TO_CREATE_INGRESS,
            "ingress",
        );
    };
    let live_meta: ObjectMeta = live
        .get("metadata")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default();
    if !ctx.controls(&live_meta) {
        if first_look {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_INGRESS,
                action::CREATE,
                format!("Ingress {key} already exists and is not owned by this RayCluster; not modifying it"),
            ));
        }
        return Ok(());
    }
    let desired_json = serde_json::to_value(&desired).map_err(|e| HostError::Invalid(e.to_string()))?;
    if subset::is_subset(&desired_json, &live) {
        return Ok(());
    }
    match ctx.apply(&desired) {
        Ok(_) => {
            ctx.event(Event::normal(
                reason::UPDATED_INGRESS,
                action::UPDATE,
                format!("Updated ingress {key}"),
            ));
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_UPDATE_INGRESS,
                action::UPDATE,
                format!("Failed updating ingress {key}, {}", e.message()),
            ));
            Err(e.into())
        }
    }
}

/// The head Service, found by its labels (its name may come from the user's template).
pub fn reconcile_head_service<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    let existing = ctx.list::<Service>(&service::head_service_selector(&ctx.id.name))?;
    match existing.len() {
        0 => {
            let desired = service::build_head_service(&ctx.cluster, &ctx.id);
            if desired
                .spec
                .as_ref()
                .and_then(|s| s.ports.as_ref())
                .is_none_or(Vec::is_empty)
            {
                return Err(Failure::pause("ray head service does not have any ports set up"));
            }
            create(
                ctx,
                &desired,
                reason::CREATED_SERVICE,
                reason::FAILED_TO_CREATE_SERVICE,
                "service",
            )
        }
        1 => Ok(()),
        n => {
            let names: Vec<String> = existing.iter().filter_map(|s| s.metadata.name.clone()).collect();
            Err(Failure::pause(format!("{n} head service found {names:?}")))
        }
    }
}

/// The headless Service that multi-host worker groups need.
pub fn reconcile_headless_service<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    let multi_host = ctx
        .cluster
        .spec
        .worker_group_specs
        .iter()
        .flatten()
        .any(|g| num_of_hosts(g) > 1);
    if !multi_host {
        return Ok(());
    }
    let selector = kuberay_rules::labels::selector(&[(labels::RAY_HEADLESS_WORKER_SERVICE, &ctx.id.name)]);
    if !ctx.list::<Service>(&selector)?.is_empty() {
        return Ok(());
    }
    let desired = service::build_headless_service(&ctx.id);
    create(
        ctx,
        &desired,
        reason::CREATED_SERVICE,
        reason::FAILED_TO_CREATE_SERVICE,
        "service",
    )
}

/// The serve Service, only with `ray.io/enable-serve-service: "true"` (KubeRay records no event for it).
pub fn reconcile_serve_service<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    if cluster::annotation(&ctx.cluster, annotations::RAY_ENABLE_SERVE_SERVICE) != Some("true") {
        return Ok(());
    }
    if ctx
        .get::<Service>(&names::serve_service_name(&ctx.id.name))?
        .is_some()
    {
        return Ok(());
    }
    let Some(desired) = service::build_serve_service(&ctx.cluster, &ctx.id) else {
        return Err(Failure::pause(
            "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') in the Ray head \
             container; otherwise, the Kubernetes service for Ray Serve will not be created.",
        ));
    };
    ctx.apply(&desired)?;
    Ok(())
}
