//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does it, so that
//! several replicas of the operator can run and exactly one reconciles:
//!
//! - `config`: the election's parameters ([`LeaderElection`]) and their checks;
//! - `identity`: a replica's identity (its Pod name plus a random suffix) and the namespace it runs in;
//! - `lease`: one attempt to acquire or renew the Lease, with optimistic concurrency (`resourceVersion`),
//!   and its release;
//! - `elector`: the candidate's and the leader's loops: acquire when the Lease is free or expired, renew
//!   every retry period, and report the loss when not renewed within the renew deadline or when another
//!   holder appears;
//! - `fence`: what every write checks: that this replica's leadership is current;
//! - `metrics`: `kuberay_wasm_leader` and the count of leadership transitions.
//!
//! Expiry is judged by the candidate's own clock from when it last saw the Lease record change (never by
//! comparing the holder's `renewTime` with local time), so clock skew between nodes does not matter. The
//! fence closes when the renew deadline passes without a renewal, which is before any other replica may
//! take the Lease over (the lease duration is longer).

mod config;
mod elector;
mod fence;
mod identity;
mod lease;
mod metrics;

pub use self::{
    config::{ConfigError, LeaderElection},
    fence::{Fence, NotLeader},
    identity::{SERVICE_ACCOUNT_NAMESPACE_FILE, namespace_from_file, unique_identity},
};
pub(crate) use self::{elector::Elector, metrics::LeaderMetrics};

/// The Lease KubeRay's operator elects its leader on (its `LeaderElectionID`), the default here too: in one
/// namespace KubeRay's operator and this one exclude each other, so a switch never has both reconciling.
pub const KUBERAY_LEASE_NAME: &str = "ray-operator-leader";
