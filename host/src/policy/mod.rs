//! The administrator's policy: which plugins run, what each may reconcile, own and do, and what the objects
//! it writes may contain.
//!
//! - `file`: the policy file (`--policy`, else the built-in `host/deploy/policy.yaml`): [`Policy`];
//! - `grant`: a plugin's effective grant (its request intersected with its entry), [`Grant`], and load-time
//!   refusals;
//! - `content` and `pod_security`: what a created or applied object may contain;
//! - `guard`: those rules applied in the plugin host (`crate::plugin_host`), with the ownership checks that
//!   need the cluster.
//!
//! A refusal is decided here or in the plugin host and returned as `HostError::Forbidden`; it is logged and
//! counted once, where the host call ends (`sandbox::call`), with labels the policy bounds.

pub(crate) mod content;
pub(crate) mod file;
pub(crate) mod grant;
pub(crate) mod guard;
pub(crate) mod pod_security;

pub use file::{Entry, Policy, PolicyError};
pub use grant::{Grant, LoadRefusal};
pub(crate) use grant::{entry_for, grant_for};
