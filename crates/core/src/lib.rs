//! The vocabulary the operator and its plugins share: kinds, the host's errors, what a plugin declares
//! about itself, label selectors, the ownership rules of a plugin's writes and the test of a write that
//! changes nothing (`subset`).
//!
//! It sits below everything else in the workspace: the plugin SDK re-exports it (plugins never name this
//! crate), and the host, the admission rules and the test hosts use the same types and the same rules.

#![forbid(unsafe_code)]

mod error;
mod kind;
mod metadata;
pub mod ownership;
pub mod selector;
pub mod subset;
pub mod syntax;
mod wit;

pub use error::{HostError, ReconcileError};
pub use kind::Kind;
pub use metadata::{Capability, PluginMetadata, Verb};
pub use wit::{WIT_VERSION, wit_compatible};

/// The result of a call to the host.
pub type HostResult<T> = Result<T, HostError>;
