//! The RayCronJob reconcile plugin: KubeRay's RayCronJob controller (v1.6 alpha behaviour) as a WebAssembly
//! component of kuberay-wasm. It creates a RayJob from `spec.jobTemplate` at every tick of `spec.schedule`
//! (five-field cron, in `spec.timeZone`), unless `spec.suspend` is set, and records the last tick in
//! `status.lastScheduleTime`.
//!
//! [`schedule`] reads the schedule and the time zone (the cron crate croner parses the pattern; the
//! time-zone database is compiled in), [`tick`] finds the next tick, [`validation`] is KubeRay's spec check,
//! [`child`] builds the RayJob of a tick, [`status`] reads and writes `lastScheduleTime`, and [`reconcile`]
//! puts them together. Each reconcile runs in a fresh instance: everything it knows comes from the
//! RayCronJob and the RayJobs that exist.

pub mod child;
pub mod consts;
pub mod reconcile;
pub mod schedule;
pub mod status;
pub mod tick;
pub mod validation;

use kuberay_crds::{RayCronJob, RayJob};
use kuberay_plugin_sdk::{
    Capability, Host, Kind, Outcome, Plugin, PluginMetadata, ReconcileError, Request,
    Verb::{ApplyStatus, Create, RecordEvent},
};

/// The plugin, as the host sees it.
pub struct RayCronJobPlugin;

impl Plugin for RayCronJobPlugin {
    fn check_config(config: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
        kuberay_rules::config::check(config)
    }

    fn metadata() -> PluginMetadata {
        PluginMetadata {
            name: "raycronjob".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            reconciles: Kind::of::<RayCronJob>(),
            // Owning its RayJobs brings the RayCronJob back when one of them changes or goes.
            owns: vec![Kind::of::<RayJob>()],
            capabilities: vec![
                Capability::new(Kind::of::<RayCronJob>(), &[ApplyStatus, RecordEvent]),
                // Only created: a RayJob is never changed or deleted by its RayCronJob.
                Capability::new(Kind::of::<RayJob>(), &[Create]),
            ],
            finalizer: None,
            uses_ray_head: false,
        }
    }

    fn reconcile(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> {
        reconcile::reconcile(host, request)
    }
}

kuberay_plugin_sdk::export_plugin!(RayCronJobPlugin);
