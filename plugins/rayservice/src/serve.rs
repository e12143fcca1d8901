//! Serve applications on one cluster (KubeRay's `reconcileServe`): once the head is ready, read what the
//! head runs, deploy `serveConfigV2` when the head does not run it, and report the applications.
//!
//! KubeRay remembers the config it last sent to each cluster in memory and re-sends after a restart. This
//! plugin asks the head instead: Ray reports, per application, the part of the config it deployed
//! (`deployed_app_config`), so the config is sent only when an application of `serveConfigV2` is missing,
//! differs from what Ray deployed, or the head runs an application the config no longer has, or when the
//! head runs no application at all (it restarted without GCS fault tolerance). A restarted operator finds
//! the config deployed and sends nothing.

use std::collections::BTreeMap;

use kuberay_crds::{AppStatus, RayCluster, ServeDeploymentStatus, constants::conditions as types};
use kuberay_plugin_sdk::subset::is_subset;
use kuberay_plugin_sdk::{
    Event, Host, LogLevel, RayHead,
    ray::serve::{ApplicationStatus, ServeDetails},
};
use kuberay_rules::consts::action;
use serde_json::Value;

use crate::{
    consts::{DEFAULT_SERVE_APP_NAME, reason},
    context::Ctx,
};

/// What the Serve API says about one cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeState {
    /// Every application is `RUNNING` (and there is at least one).
    pub ready: bool,
    pub applications: Option<BTreeMap<String, AppStatus>>,
    /// The Serve config the head runs (its applications as Ray reports them deployed, the rest from
    /// `serveConfigV2`), for a later `target_capacity` change that must not change the applications.
    pub running: Option<Value>,
}

/// How `serveConfigV2` is deployed to one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submit {
    /// Whether the config may be (re)deployed; an incremental upgrade leaves the cluster being phased out
    /// as it is.
    pub allowed: bool,
    /// Serve's `target_capacity` sent with the config (incremental upgrades).
    pub target_capacity: Option<i32>,
}

impl Default for Submit {
    fn default() -> Self {
        Self {
            allowed: true,
            target_capacity: None,
        }
    }
}

/// Whether the cluster's `HeadPodReady` condition is true.
pub fn head_ready(cluster: &RayCluster) -> bool {
    cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == types::HEAD_POD_READY && c.status == "True")
        })
}

/// Reconciles the Serve applications of `cluster`; an error means the head could not be asked or did not
/// take the config.
pub fn reconcile<H: Host>(
    ctx: &Ctx<'_, H>,
    cluster: &RayCluster,
    submit: Submit,
) -> Result<ServeState, String> {
    if !head_ready(cluster) {
        return Ok(ServeState::default());
    }
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let head = RayHead::new(ctx.host, name.as_str());
    let details = head.serve_details().map_err(|e| {
        format!(
            "failed to get Serve application statuses from the dashboard of RayCluster {}: {e}",
            ctx.key(&name)
        )
    })?;
    let mut state = ServeState {
        ready: details.all_running(),
        applications: Some(statuses(&details)),
        running: None,
    };
    let Some(mut config) = desired_config(ctx)? else {
        return Ok(state);
    };
    if let (Some(target), Some(map)) = (submit.target_capacity, config.as_object_mut()) {
        map.insert("target_capacity".into(), Value::from(target));
    }
    match needs_submit(&config, &details) {
        Some(why) if submit.allowed => {
            ctx.log(
                LogLevel::Info,
                &format!("deploying serveConfigV2 to RayCluster {name}: {why}"),
            );
            deploy(ctx, &head, &name, &config)?;
        }
        Some(_) => {
            let deployed: Vec<Value> = details
                .applications
                .values()
                .filter_map(|a| a.deployed_app_config.clone())
                .collect();
            if let Some(map) = config.as_object_mut() {
                map.insert("applications".into(), Value::Array(deployed));
            }
        }
        None => {}
    }
    state.running = Some(config);
    Ok(state)
}

/// `serveConfigV2` as JSON, or `None` when there is none to deploy.
fn desired_config<H: Host>(ctx: &Ctx<'_, H>) -> Result<Option<Value>, String> {
    let Some(text) = ctx
        .spec()
        .serve_config_v2
        .as_deref()
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(None);
    };
    match serde_yaml::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(Some(Value::Object(map))),
        Ok(_) => Err(invalid(ctx, "serveConfigV2 is not a YAML mapping".into())),
        Err(e) => Err(invalid(ctx, format!("serveConfigV2 is not valid YAML: {e}"))),
    }
}

fn invalid<H: Host>(ctx: &Ctx<'_, H>, message: String) -> String {
    ctx.event(&Event::warning(
        reason::FAILED_TO_UPDATE_SERVE_APPLICATIONS,
        action::UPDATE,
        format!(
            "Failed to update serve applications of RayService {}: {message}",
            ctx.key(&ctx.name)
        ),
    ));
    message
}

fn deploy<H: Host>(
    ctx: &Ctx<'_, H>,
    head: &RayHead<'_, H>,
    cluster: &str,
    config: &Value,
) -> Result<(), String> {
    match head.deploy_serve(config) {
        Ok(()) => {
            ctx.event(&Event::normal(
                reason::UPDATED_SERVE_APPLICATIONS,
                action::UPDATE,
                format!(
                    "Updated serve applications to the RayCluster {}",
                    ctx.key(cluster)
                ),
            ));
            Ok(())
        }
        Err(e) => {
            let message = format!(
                "Failed to update serve applications to the RayCluster {}: fail to create / update Serve \
                 applications: {e}",
                ctx.key(cluster)
            );
            ctx.event(&Event::warning(
                reason::FAILED_TO_UPDATE_SERVE_APPLICATIONS,
                action::UPDATE,
                message.clone(),
            ));
            Err(message)
        }
    }
}

/// Why the config must be sent, or `None` when the head already runs it.
pub fn needs_submit(config: &Value, details: &ServeDetails) -> Option<String> {
    if details.applications.is_empty() {
        return Some(
            "No Serve application found in the RayCluster. A possible reason is that the head Pod crashed and \
             GCS FT was not enabled."
                .into(),
        );
    }
    let wanted: BTreeMap<String, &Value> = config
        .get("applications")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|app| (app_name(app), app))
        .collect();
    for (name, app) in &wanted {
        let Some(running) = details.applications.get(name) else {
            return Some(format!("application {name} is not deployed"));
        };
        if let Some(deployed) = &running.deployed_app_config
            && !is_subset(app, deployed)
        {
            return Some(format!("application {name} differs from the deployed config"));
        }
    }
    if let Some(extra) = details.applications.keys().find(|n| !wanted.contains_key(*n)) {
        return Some(format!("application {extra} is no longer in serveConfigV2"));
    }
    None
}

fn app_name(app: &Value) -> String {
    app.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_SERVE_APP_NAME)
        .to_string()
}

/// Application and deployment statuses as the RayService reports them.
fn statuses(details: &ServeDetails) -> BTreeMap<String, AppStatus> {
    details
        .applications
        .iter()
        .map(|(name, app)| {
            let name = if name.is_empty() {
                DEFAULT_SERVE_APP_NAME.to_string()
            } else {
                name.clone()
            };
            let deployments = app
                .deployments
                .iter()
                .map(|(d, deployment)| {
                    let status = ServeDeploymentStatus {
                        status: Some(deployment.status.clone()),
                        message: deployment.message.clone().filter(|m| !m.is_empty()),
                    };
                    (d.clone(), status)
                })
                .collect();
            let status = AppStatus {
                serve_deployment_statuses: Some(deployments),
                status: Some(app.status.clone()),
                message: app.message.clone().filter(|m| !m.is_empty()),
            };
            (name, status)
        })
        .collect()
}

/// Whether every application reported is `RUNNING`.
pub fn all_running(applications: &BTreeMap<String, AppStatus>) -> bool {
    !applications.is_empty()
        && applications
            .values()
            .all(|a| a.status.as_deref() == Some(ApplicationStatus::RUNNING))
}
