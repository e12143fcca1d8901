//! The SDK for kuberay-wasm reconcile plugins.
//!
//! A plugin decides what one Kubernetes kind needs. Its logic is ordinary Rust written against the [`Host`]
//! trait (read objects, create, apply, delete, report), which keeps it testable natively with
//! [`testing::FakeHost`]; [`export_plugin!`] turns a [`Plugin`] into a WebAssembly component for
//! `cargo build --target wasm32-wasip2`, where the host trait is backed by the operator.
//!
//! Plugins that talk to Ray use [`RayHead`]: typed calls of the dashboard's Jobs and Serve APIs over
//! [`Host::ray`], which check Ray's status codes and read its answers the way KubeRay's client does. They
//! work over any [`RayTransport`], so native code with its own way to a head reuses them.
//!
//! ```text
//! struct Mine;
//! impl kuberay_plugin_sdk::Plugin for Mine {
//!     fn metadata() -> PluginMetadata { /* kind, owned kinds, capabilities */ }
//!     fn reconcile(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> { /* ... */ }
//! }
//! kuberay_plugin_sdk::export_plugin!(Mine);
//! ```

#![forbid(unsafe_code)]

mod document;
mod event;
mod host;
mod plugin;
pub mod ray;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod typed;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod guest;

/// Exports a [`Plugin`] as a WebAssembly component; natively (unit tests, benchmarks) there is nothing to
/// export, so the macro expands to nothing and plugin crates build for both targets unchanged.
#[cfg(not(target_arch = "wasm32"))]
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {};
}

pub use document::Document;
pub use event::{Event, EventType};
pub use host::{Host, LogLevel};
pub use plugin::{Outcome, Plugin, Request};
pub use ray::{PortRole, RayError, RayHead, RayRequest, RayResponse, RayTarget, RayTransport};
pub use typed::TypedHost;

/// The vocabulary shared with the operator (`kuberay-core`), re-exported: plugins name only this crate.
pub use kuberay_core::{
    Capability, HostError, HostResult, Kind, PluginMetadata, ReconcileError, Verb, WIT_VERSION, ownership,
    selector, subset, syntax, wit_compatible,
};

/// Re-exported so plugins use the same versions as the SDK.
pub use {k8s_openapi, serde_json};
