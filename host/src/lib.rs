//! kuberay-wasm: a KubeRay-compatible Kubernetes operator whose reconcile logic runs in sandboxed
//! WebAssembly components.
//!
//! - [`sandbox`]: wasmtime, plugin loading and reloading, limits and grants (and the threat model);
//! - [`kubernetes`]: what a plugin's Kubernetes calls do: caches, read-your-writes, owner and namespace rules,
//!   and which Ray heads a plugin may reach (HTTP to them is [`kuberay_rayhead`]'s, shared with the API server);
//! - [`policy`]: the administrator's policy: which plugins run, their grants, what their objects may contain;
//! - [`controller`]: the reconcile queues;
//! - [`operator`]: wiring, configuration and shutdown; [`server`] and [`metrics`]: observability.

pub mod controller;
pub mod kubernetes;
pub mod metrics;
pub mod operator;
pub mod policy;
pub mod sandbox;
pub mod server;
pub mod telemetry;

pub use operator::{OperatorConfig, run, run_with_metrics};
