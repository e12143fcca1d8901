//! Support for the tests of the install artifacts in `deploy/` (the Helm chart and the kustomize manifests):
//! running `helm` and `kustomize` (built from their Go modules by `make deploy-tools`), reading what they
//! render, and comparing RBAC rules as sets of single permissions.
//!
//! - `tools`: where the binaries are (a test fails without them): [`Tools`];
//! - `manifests`: multi-document YAML as JSON values, and picking objects out of it;
//! - `rules`: RBAC rules expanded to [`Permission`]s, and the rule sources of each routing mode;
//! - `can_i`: the table of `kubectl auth can-i --list`, parsed into the same permissions.

pub mod can_i;
mod error;
pub mod manifests;
pub mod rules;
pub mod tools;

pub use error::{Error, Result};
pub use rules::Permission;
pub use tools::Tools;
