//! kuberay-wasm: a KubeRay-compatible Kubernetes operator whose reconcile logic runs in sandboxed
//! WebAssembly components.
//!
//! The public API is what the binary, the tests, the benchmarks and the API server use: [`run`] and
//! [`run_with_metrics`] with an [`OperatorConfig`], [`metrics::Metrics`], [`policy::Policy`] and the
//! [`sandbox`]'s `Sandbox` (loading and calling a plugin outside the operator). Everything else is internal.
//!
//! Layout, from the plugin outwards:
//!
//! - [`host_api`]: the port between the sandbox and the world, [`host_api::HostApi`]: the calls one
//!   reconcile may make, implemented by `plugin_host` against the cluster and in memory by `plugin run`,
//!   the tests and the benchmarks; it imports none of the modules below;
//! - [`sandbox`]: wasmtime, plugin loading and reloading, limits and grants (and the threat model);
//!   `sandbox/call.rs` runs one plugin call and `sandbox/gate.rs` checks every host call against the grant
//!   and budgets before handing it to the host API ([`host_api::HostApi`]); `sandbox/wit.rs`
//!   converts the WIT types;
//! - `plugin_host`: the host API one reconcile's plugin sees, built from the Kubernetes bridge and the Ray
//!   bridge side by side, one concept per file: its objects, which Ray clusters it may reach, its events and
//!   its log lines;
//! - `admission`: the one path of every write a plugin asks for: the rules (names, namespace, ownership and
//!   adoption, provenance and content, Pod Security) are the [`kuberay_admission`] crate's, shared with the
//!   in-memory hosts; here, their lookups in the Kubernetes bridge and the commit (fence, write, metrics,
//!   overlay);
//! - `kubernetes`: the Kubernetes bridge: discovery, watch caches, read-your-writes, event recorders,
//!   namespaces' Pod Security levels;
//! - `raybridge`: the Ray bridge: sending to Ray heads (HTTP to them is [`kuberay_rayhead`]'s, shared with
//!   the API server), finding them through the Kubernetes bridge;
//! - [`reconcileplugin`]: plugins named by `ReconcilePlugin` resources: OCI artifacts pulled, verified,
//!   loaded and swapped in by every replica, status and Events written by the leader;
//! - [`policy`] (`kuberay_admission::policy`): the administrator's policy as data: which plugins run, their
//!   grants, their content rules;
//! - `controller`: the reconcile queues;
//! - [`leadership`]: leader election on a Lease, and the fence every write of the host passes;
//! - `operator`: wiring, configuration and shutdown; `server` and [`metrics`]: observability;
//!   [`telemetry`]: logging;
//! - [`kuberay_flags`]: what KubeRay's operator flags mean here (Go's address forms, feature gates, the flags
//!   refused at start);
//! - [`authoring`]: the plugin authoring kit (`kuberay-wasm plugin new` and `plugin run`, one reconcile
//!   offline with admission's rules against an in-memory cluster, and [`authoring::CheckedHost`], the same
//!   judgement as the host of a plugin's native tests).

pub(crate) mod admission;
pub mod authoring;
pub(crate) mod controller;
pub mod host_api;
pub mod kuberay_config;
pub mod kuberay_env;
pub mod kuberay_flags;
pub(crate) mod kubernetes;
pub mod leadership;
pub mod metrics;
mod operator;
pub(crate) mod plugin_host;
pub(crate) mod plugin_watch;
pub(crate) mod raybridge;
pub mod reconcileplugin;
pub mod sandbox;
pub(crate) mod server;
pub mod telemetry;

#[cfg(test)]
mod layers;

pub use kuberay_admission::policy;
pub use kubernetes::rate_limit::ApiRateLimit;
pub use operator::{
    DEFAULT_COMPILE_MEMORY_MIB, DEFAULT_PLUGIN_MEMORY_MIB, DEFAULT_PLUGIN_TIMEOUT, KubeRayArgs,
    LeaderElectionArgs, OperatorArgs, OperatorConfig, OperatorError, ResourceArgs, run, run_with_metrics,
};
