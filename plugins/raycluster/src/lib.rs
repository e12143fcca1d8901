//! The RayCluster reconcile plugin: KubeRay's RayCluster controller (v1.7 behaviour) as a WebAssembly
//! component of kuberay-wasm. It turns a `ray.io/v1` RayCluster into a head Pod, worker Pods, Services and,
//! with autoscaling, the autoscaler's RBAC, and reports the cluster's status, all through the SDK's
//! [`Host`](kuberay_plugin_sdk::Host) so the same code runs natively in the tests.
//!
//! The modules follow the concepts of the controller: [`validation`], the objects it builds ([`pod`],
//! [`service`], [`ingress`], [`autoscaler`], [`redis_cleanup`]'s Job), the decisions it takes
//! ([`scaling`], [`suspend`], [`upgrade`]) and what it reports ([`status`]). [`reconcile`] runs them.

pub mod auth;
pub mod autoscaler;
pub mod batch;
pub mod cluster;
pub mod conditions;
pub mod consts;
pub mod context;
pub mod gcs_storage;
pub mod ingress;
pub mod mtls;
pub mod multi_host;
pub mod network_policy;
pub mod objects;
pub mod pod;
pub mod pod_state;
pub mod pods;
pub mod probes;
pub use kuberay_rules::quantity;
pub mod ray_start;
pub mod reconcile;
pub mod redis_cleanup;
pub mod resources;
pub mod scaling;
pub mod service;
pub mod status;
pub mod suspend;
pub mod upgrade;
pub mod validation;
pub use kuberay_rules::version;
pub mod worker_pods;

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount},
    networking::v1::{Ingress, NetworkPolicy},
    rbac::v1::{Role, RoleBinding},
};
use kuberay_crds::{RayCluster, constants::finalizers};
use kuberay_plugin_sdk::{
    Capability, Host, Kind, Outcome, Plugin, PluginMetadata, ReconcileError, Request,
    Verb::{Apply, ApplyStatus, Create, Delete, Finalize, Get, List, RecordEvent},
};
use kuberay_rules::batch_scheduler::{scheduler_plugins, volcano};

/// The plugin, as the host sees it.
pub struct RayClusterPlugin;

impl Plugin for RayClusterPlugin {
    fn check_config(config: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
        kuberay_rules::config::check(config)
    }

    fn metadata() -> PluginMetadata {
        let owned = [
            (Kind::of::<Pod>(), vec![Get, List, Create, Apply, Delete]),
            (Kind::of::<Service>(), vec![Get, List, Apply]),
            (Kind::of::<ServiceAccount>(), vec![Get, Apply]),
            (Kind::of::<Role>(), vec![Get, Apply]),
            (Kind::of::<RoleBinding>(), vec![Get, Apply]),
            (Kind::of::<Ingress>(), vec![Get, Apply]),
            // Only with the RayClusterNetworkPolicy gate on (taken out of the operator's policy otherwise).
            (Kind::of::<NetworkPolicy>(), vec![Get, List, Apply, Delete]),
            (Kind::of::<Job>(), vec![Get, List, Apply]),
            // The embedded GCS store's claim, only with the GCSFaultToleranceEmbeddedStorage gate on.
            (Kind::of::<PersistentVolumeClaim>(), vec![Get, Create]),
            // The generated token of `authOptions.mode: token` without `secretName` (created), and the owner
            // reference of a Secret cert-manager issued for `tlsOptions` to its Certificate (applied).
            (Kind::of::<Secret>(), vec![Get, Create, Apply]),
            // The PodGroups of `batchScheduler: volcano` and `scheduler-plugins` (the operator takes them out of
            // its policy unless it runs with that scheduler).
            (volcano::kind(), vec![Get, Create, Apply]),
            (scheduler_plugins::kind(), vec![Get, Create]),
            // cert-manager's Issuers and Certificates of `tlsOptions`, only with the RayClusterMTLS gate on.
            (mtls::issuer_kind(), vec![Get, Create]),
            (mtls::certificate_kind(), vec![Get, Create, Apply]),
        ];
        let mut capabilities = vec![Capability::new(
            Kind::of::<RayCluster>(),
            &[ApplyStatus, Finalize, RecordEvent],
        )];
        capabilities.extend(
            owned
                .iter()
                .map(|(kind, verbs)| Capability::new(kind.clone(), verbs)),
        );
        PluginMetadata {
            name: "raycluster".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            reconciles: Kind::of::<RayCluster>(),
            owns: owned.into_iter().map(|(kind, _)| kind).collect(),
            capabilities,
            finalizer: Some(finalizers::GCS_FT_REDIS_CLEANUP.into()),
            uses_ray_head: false,
        }
    }

    fn reconcile(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> {
        reconcile::reconcile(host, request)
    }

    fn cleanup(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> {
        reconcile::cleanup(host, request)
    }
}

kuberay_plugin_sdk::export_plugin!(RayClusterPlugin);
