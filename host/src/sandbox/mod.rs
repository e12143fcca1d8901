//! The sandbox: where plugins run.
//!
//! # Threat model
//!
//! A plugin is untrusted code. It may loop, trap, allocate without bound, print without end, return
//! nonsense, or try to reach what it was not granted. The sandbox guarantees that:
//!
//! - it runs only inside wasmtime, with WASI that has no files, environment, arguments, sockets or name
//!   lookups; its only ways out are the `kuberay:plugin` imports;
//! - every import call is checked against the plugin's grant (what it asked for intersected with the
//!   administrator's policy entry for its file, see [`crate::policy`]) and then, in the plugin host,
//!   against the reconciled object (its namespace, its owner references) and the policy's content rules;
//! - each call gets a fresh Store: nothing survives from one reconcile to the next, so a plugin cannot leak
//!   data between objects or accumulate state;
//! - a call is bounded in memory (one cap on the sum of all its linear memories, and caps on table elements
//!   and on the number of instances, memories and tables, so it cannot take more than its share of the
//!   instance pool) and in time (epoch interruption yields every tick and a timeout drops the whole call,
//!   host calls included);
//! - the host-side work it causes is bounded (see `budget.rs`): the size of every string it passes, the
//!   number of host calls, writes, written bytes and events per call and the length of lists; past a limit
//!   the call is stopped and reported as `PluginLimitExceeded`; across calls, its written bytes and events
//!   are metered per plugin (a burst, then a steady rate);
//! - its log lines and output are escaped (no line breaks, control characters or terminal escapes reach the
//!   log raw) and rate-limited per plugin (see `log_guard.rs`).
//!
//! - compiling its component is bounded: static limits on its size, modules and functions before anything is
//!   compiled, then a child process with an address-space limit and a wall-clock timeout (see `compile.rs`);
//!   and only files the policy lists are compiled at all.
//!
//! Not covered: a plugin that is granted a capability can use it fully within those rules (for example delete
//! every Pod its object owns); the operator's own RBAC is the outer bound. Compiled artifacts in the on-disk
//! cache are trusted (see `compile_cache.rs`).

pub(crate) mod bindings;
pub(crate) mod call;
mod compile;
pub(crate) mod compile_cache;
mod engine;
pub(crate) mod gate;
mod host_api_denied;
mod limits;
pub(crate) mod log_guard;
pub(crate) mod plugin;
pub(crate) mod registry;
mod stdio;
mod wit;

pub use call::{CallFailure, CallLimits, Export};
pub use compile::{
    ChildCompiler, ChildError, CompileLimits, MAX_COMPONENT_BYTES, MAX_CORE_MODULES, MAX_FUNCTION_BYTES,
    MAX_FUNCTIONS, compile_child,
};
pub use gate::CallContext;
pub(crate) use kuberay_admission::budget::{self, MAX_EVENT_NOTE_BYTES, TokenBucket};
pub use kuberay_admission::budget::{CallBudget, RateBudget};
pub use plugin::{LoadError, LoadedPlugin};
pub(crate) use registry::PluginSlot;
pub use registry::{Sandbox, SandboxConfig, SandboxError, base_config, default_base_config};
