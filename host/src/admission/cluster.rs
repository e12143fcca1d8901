//! What admission needs to know about the cluster, behind one small trait, so that the rules judge a write the
//! same way whoever answers: the operator's Kubernetes bridge (below), or the in-memory cluster of
//! `kuberay-wasm plugin run` (`crate::authoring::run`). The trait only looks things up; writing what admission
//! decided is the caller's (`commit.rs` for the operator).

use std::future::Future;

use kube::{Api, api::DynamicObject};
use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::Value;

use crate::{
    kubernetes::{KubeBridge, errors::from_kube, overlay::Key, to_json},
    sandbox::host_api::HostResult,
};

/// The lookups of admission: objects as a plugin sees them, the scope of kinds, namespaces' Pod Security
/// levels and what a plugin last applied.
pub(crate) trait Cluster: Send + Sync {
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

impl Cluster for KubeBridge {
    async fn read(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        KubeBridge::read(self, kind, namespace, name).await
    }

    async fn read_live(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        if let Some(current) = KubeBridge::read(self, kind, namespace, name).await? {
            return Ok(Some(current));
        }
        self.api(kind, namespace)
            .await?
            .get_opt(name)
            .await
            .map_err(from_kube)?
            .map(|o| to_json(&o))
            .transpose()
    }

    async fn list(&self, kind: &Kind, namespace: &str, label_selector: &str) -> HostResult<Vec<Value>> {
        KubeBridge::list(self, kind, namespace, label_selector).await
    }

    async fn is_namespaced(&self, kind: &Kind) -> HostResult<bool> {
        Ok(self.discovery.resolve(kind).await?.namespaced)
    }

    async fn enforced_level(&self, namespace: &str) -> Result<Option<String>, String> {
        self.namespaces
            .enforced(&self.client, namespace)
            .await
            .map_err(|e| e.to_string())
    }

    fn same_as_last(&self, key: &Key, subresource: &'static str, hash: u64) -> bool {
        self.applied.same_as_last(key, subresource, hash)
    }
}

impl KubeBridge {
    /// The API of a kind in `namespace` (the kind must be served).
    pub(crate) async fn api(&self, kind: &Kind, namespace: &str) -> Result<Api<DynamicObject>, HostError> {
        let resolved = self.discovery.resolve(kind).await?;
        Ok(Api::namespaced_with(
            self.client.clone(),
            namespace,
            &resolved.resource,
        ))
    }
}
