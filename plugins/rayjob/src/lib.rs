//! The RayJob reconcile plugin: KubeRay's RayJob controller (v1.7 behaviour) as a WebAssembly component of
//! kuberay-wasm. It runs a Ray job on a RayCluster it creates (or one `clusterSelector` names), submits it in
//! one of KubeRay's four ways, follows it through Ray's Jobs API, and cleans up after it, all through the
//! SDK's [`Host`](kuberay_plugin_sdk::Host) so the same code runs natively in the tests.
//!
//! [`reconcile`] drives the `jobDeploymentStatus` state machine, one module per state in [`states`]; what
//! the states act on has its own module: the [`cluster`], the [`submitter`] (Job or sidecar), the RayJob's
//! head [`service`], the [`dashboard`], the [`deadlines`], [`retry`], [`deletion`] after the job, and the
//! finalizer's [`cleanup`]. [`status`] is the only writer of the status.

pub mod batch;
pub mod cleanup;
pub mod cluster;
pub mod consts;
pub mod context;
pub mod dashboard;
pub mod deadlines;
pub mod deletion;
pub mod reconcile;
pub mod retry;
pub mod service;
pub mod spec;
pub mod states;
pub mod status;
pub mod submitter;
pub mod validation;

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Pod, Service},
};
use kuberay_crds::{RayCluster, RayJob, constants::finalizers};
use kuberay_plugin_sdk::{
    Capability, Host, Kind, Outcome, Plugin, PluginMetadata, ReconcileError, Request,
    Verb::{Apply, ApplyStatus, Create, Delete, Finalize, Get, List, RecordEvent},
};
use kuberay_rules::batch_scheduler::volcano;

/// The plugin, as the host sees it.
pub struct RayJobPlugin;

impl Plugin for RayJobPlugin {
    fn check_config(config: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
        kuberay_rules::config::check(config)
    }

    fn metadata() -> PluginMetadata {
        // What a RayJob creates and owns (KubeRay's controller owns the same three kinds).
        let owned = [
            // Created once; `DeleteWorkers` applies its worker groups; deleted after the job.
            (Kind::of::<RayCluster>(), vec![Get, Create, Apply, Delete]),
            // The RayJob's head Service.
            (Kind::of::<Service>(), vec![Get, Apply]),
            // The K8sJobMode submitter.
            (Kind::of::<Job>(), vec![Get, Create, Delete]),
        ];
        let mut capabilities = vec![
            Capability::new(
                Kind::of::<RayJob>(),
                &[ApplyStatus, Finalize, RecordEvent, Delete],
            ),
            // The SidecarMode submitter's state is in the head Pod's container statuses.
            Capability::new(Kind::of::<Pod>(), &[List]),
            // Volcano's PodGroup of the RayJob (`batchScheduler: volcano`), not watched, as KubeRay's.
            Capability::new(volcano::kind(), &[Get, Create, Apply]),
        ];
        capabilities.extend(
            owned
                .iter()
                .map(|(kind, verbs)| Capability::new(kind.clone(), verbs)),
        );
        PluginMetadata {
            name: "rayjob".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            reconciles: Kind::of::<RayJob>(),
            owns: owned.into_iter().map(|(kind, _)| kind).collect(),
            capabilities,
            finalizer: Some(finalizers::RAY_JOB_STOP_JOB.into()),
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

kuberay_plugin_sdk::export_plugin!(RayJobPlugin);
