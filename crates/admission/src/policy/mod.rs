//! The administrator's policy: which plugins run, what each may reconcile, own and do, and the content
//! rules its writes are held to. This module holds the policy as data; the rules that apply it to a
//! plugin's writes live in `admission`.
//!
//! - `file`: the policy file (`--policy`, else the built-in `host/deploy/policy.yaml`): [`Policy`];
//! - `grant`: a plugin's effective grant (its request intersected with its entry), [`Grant`], and load-time
//!   refusals.

pub mod file;
pub mod grant;
pub mod native;

pub use file::{Entry, Policy, PolicyError, Profile};
pub use grant::{Grant, LoadRefusal};
pub use grant::{check_grant, entry_for, grant_for_entry};
