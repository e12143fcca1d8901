//! What admission needs to know about the cluster, behind one small trait, so that the rules judge a write the
//! same way whoever answers: the operator's Kubernetes bridge (in the host crate), or the in-memory cluster of
//! `kuberay-wasm plugin run` and of the SDK's `FakeHost`. The trait only looks things up; writing what admission
//! decided is the caller's (the operator's `admission/commit.rs`).

use std::future::Future;

use kuberay_core::{HostResult, Kind};
use serde_json::Value;

use crate::Key;

/// The lookups of admission: objects as a plugin sees them, the scope of kinds, namespaces' Pod Security
/// levels and what a plugin last applied.
pub trait Cluster: Send + Sync {
    /// An object as plugins see it (for the operator: its caches with its recent writes).
    fn read(
        &self,
        kind: &Kind,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = HostResult<Option<Value>>> + Send;

    /// The live object an apply would write over: [`Self::read`], confirmed with the source of truth when
    /// that view has none (a watch may lag behind an object created a moment ago).
    fn read_live(
        &self,
        kind: &Kind,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = HostResult<Option<Value>>> + Send;

    /// The objects of `kind` in `namespace` matching a label selector (already checked), as plugins see them.
    fn list(
        &self,
        kind: &Kind,
        namespace: &str,
        label_selector: &str,
    ) -> impl Future<Output = HostResult<Vec<Value>>> + Send;

    /// Whether `kind` is namespaced (an error if it is not served at all).
    fn is_namespaced(&self, kind: &Kind) -> impl Future<Output = HostResult<bool>> + Send;

    /// The value of `namespace`'s `pod-security.kubernetes.io/enforce` label: `Ok(None)` without one, `Err`
    /// (why) when it cannot be read.
    fn enforced_level(&self, namespace: &str) -> impl Future<Output = Result<Option<String>, String>> + Send;

    /// Whether the plugin applied exactly this intent (`hash`) to `key`'s `subresource` last time, so that a
    /// write the live object already satisfies can be skipped (`kubernetes::unchanged`).
    fn same_as_last(&self, key: &Key, subresource: &'static str, hash: u64) -> bool;
}
