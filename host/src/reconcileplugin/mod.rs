//! Plugins named by `ReconcilePlugin` resources: pulled from an OCI registry, verified, compiled and swapped
//! in by every replica (leader and standbys, so a failover serves the same version at once), while
//! reconciles keep running on the version they started with.
//!
//! For each resource, in order: the artifact reference must pin a digest (`artifact.rs`); the resource's
//! grant is merged into the policy in force, refused on a name or kind clash (`policy::Policy::
//! with_resource`); the component is taken from the in-memory blob cache or pulled with the pull Secret's
//! credentials (`credentials.rs`) and its digests checked; the signature, when the resource asks for one,
//! is checked; the sandbox compiles it (the compiled-plugin cache makes a rollback free) and checks its
//! world, name, kind and grant; only then does it serve. A version that fails any step never serves: the
//! previous version keeps serving, and the status (`Degraded`), an Event and a log line say why. Transient
//! failures (registry down, missing Secret) are retried with backoff; others wait for the spec to change.
//!
//! Only the leader (or the only replica) writes status and Events; each replica logs what it loaded.
//! A deleted resource stops serving its kind: objects of that kind are reported, not reconciled.

pub mod artifact;
pub mod credentials;
pub mod resource;
pub mod signature;
mod sync;

pub(crate) use sync::{Context, run};

/// How `ReconcilePlugin` resources are served.
#[derive(Debug, Clone, Default)]
pub struct ResourceOptions {
    /// The operator's own namespace, where pull Secrets are read.
    pub namespace: Option<String>,
    /// Only resources whose labels match this selector (several operators in one cluster, tests); all when
    /// `None`.
    pub selector: Option<String>,
    /// Accept artifact references without a digest (development only).
    pub allow_tags: bool,
    /// How registries are reached.
    pub registry: artifact::RegistryOptions,
}
