//! The RayService reconcile plugin: KubeRay's RayService controller (v1.7 behaviour) as a WebAssembly
//! component of kuberay-wasm. A RayService runs Ray Serve applications on a RayCluster it creates, puts
//! stable Services in front of it, and rolls a change of the cluster spec out on a new cluster that takes
//! the traffic only once every application runs there (`NewCluster`, blue/green), or takes it step by step
//! through a Gateway API HTTPRoute ([`incremental`], `NewClusterWithIncrementalUpgrade`).
//!
//! [`reconcile`] runs KubeRay's steps in order; each has its module: [`validation`], [`suspend`], the
//! [`cluster`]s (goal spec, hashes, in-place updates), the head Pods' serve label ([`proxy_health`]), the
//! Serve applications ([`serve`]), the [`services`], [`endpoints`], unused clusters ([`dangling`]) and the
//! [`status`] with its [`conditions`].
//!
//! **Nothing is kept in memory between reconciles.** KubeRay keeps two things in memory that a restart
//! loses; here both are derived from what is stored:
//! - *the Serve config last applied to each cluster*: the head is asked instead. Ray reports, for every
//!   application, the config it deployed (`deployed_app_config`); `serveConfigV2` is sent only when the head
//!   does not run it (an application missing, different, or extra, or no application at all). See [`serve`].
//! - *when an unused cluster is deleted*: `rayClusterDeletionDelaySeconds` after the later of the cluster's
//!   creation and the last transition of the RayService's `UpgradeInProgress` condition (the promotion that
//!   left the cluster unused). See [`dangling`].
//!
//! The name of a new cluster is written to `status.pendingServiceStatus.rayClusterName` before the cluster
//! is created (in the next reconcile), so an operator restart never creates two.

pub mod cluster;
pub mod conditions;
pub mod consts;
pub mod context;
pub mod dangling;
pub mod duration;
pub mod endpoints;
pub mod incremental;
pub mod proxy_health;
pub mod reconcile;
pub mod serve;
pub mod service;
pub mod services;
pub mod status;
pub mod suspend;
pub mod validation;

use k8s_openapi::api::{
    core::v1::{Pod, Service},
    discovery::v1::EndpointSlice,
};
use kuberay_crds::{RayCluster, RayService, constants::finalizers};
use kuberay_plugin_sdk::{
    Capability, Host, Kind, Outcome, Plugin, PluginMetadata, ReconcileError, Request,
    Verb::{Apply, ApplyStatus, Create, Delete, Finalize, Get, List, RecordEvent},
};

/// The plugin, as the host sees it.
pub struct RayServicePlugin;

impl Plugin for RayServicePlugin {
    fn check_config(config: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
        kuberay_rules::config::check(config)
    }

    fn metadata() -> PluginMetadata {
        let owned = [
            (Kind::of::<RayCluster>(), vec![Get, List, Create, Apply, Delete]),
            // `<name>-head-svc` and the serve Service.
            (Kind::of::<Service>(), vec![Get, List, Apply, Delete]),
            // `NewClusterWithIncrementalUpgrade`: `<name>-gateway` and `<name>-httproute` (deleted when the
            // strategy changes to another).
            (incremental::gateway_kind(), vec![Get, Create, Apply, Delete]),
            (incremental::route_kind(), vec![Get, Create, Apply, Delete]),
        ];
        let mut capabilities = vec![
            Capability::new(Kind::of::<RayService>(), &[ApplyStatus, Finalize, RecordEvent]),
            // The head Pods of its clusters: read, and their `ray.io/serve` label applied.
            Capability::new(Kind::of::<Pod>(), &[Get, List, Apply]),
            // `numServeEndpoints`.
            Capability::new(Kind::of::<EndpointSlice>(), &[Get, List]),
        ];
        capabilities.extend(
            owned
                .iter()
                .map(|(kind, verbs)| Capability::new(kind.clone(), verbs)),
        );
        PluginMetadata {
            name: "rayservice".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            reconciles: Kind::of::<RayService>(),
            owns: owned.into_iter().map(|(kind, _)| kind).collect(),
            capabilities,
            finalizer: Some(finalizers::RAY_SERVICE.into()),
            uses_ray_head: true,
        }
    }

    fn reconcile(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> {
        reconcile::reconcile(host, request)
    }

    fn cleanup(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> {
        reconcile::cleanup(host, request)
    }
}

kuberay_plugin_sdk::export_plugin!(RayServicePlugin);
