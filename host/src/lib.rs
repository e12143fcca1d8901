//! kuberay-wasm: a KubeRay-compatible Kubernetes operator whose reconcile logic runs in sandboxed
//! WebAssembly components.
//!
//! - [`sandbox`]: wasmtime, plugin loading and reloading, limits and grants (and the threat model); its
//!   `call` runs one plugin call and checks every host call against the grant before handing it on;
//! - `plugin_host`: the host API one reconcile's plugin sees (the sandbox's `HostApi`), built from the
//!   Kubernetes bridge and the Ray bridge side by side: its objects (namespace, owner, name and content
//!   rules), which Ray clusters it may reach, its events and its log lines;
//! - [`kubernetes`]: the Kubernetes bridge: discovery, watch caches, read-your-writes, skipped no-op
//!   applies, event recorders, and the ownership and naming rules the plugin host applies;
//! - `raybridge`: the Ray bridge: sending to Ray heads (HTTP to them is [`kuberay_rayhead`]'s, shared with
//!   the API server), finding them through the Kubernetes bridge;
//! - [`policy`]: the administrator's policy: which plugins run, their grants, what their objects may contain;
//! - [`controller`]: the reconcile queues;
//! - [`operator`]: wiring, configuration and shutdown; [`server`] and [`metrics`]: observability.

pub mod controller;
pub mod kubernetes;
pub mod metrics;
pub mod operator;
pub(crate) mod plugin_host;
pub mod policy;
pub(crate) mod raybridge;
pub mod sandbox;
pub mod server;
pub mod telemetry;

pub use operator::{OperatorConfig, run, run_with_metrics};
