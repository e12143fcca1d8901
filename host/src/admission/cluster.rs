//! The operator's answer to admission's lookups: its Kubernetes bridge (caches with recent writes, discovery,
//! namespaces' Pod Security levels, the record of what each plugin last applied).

use kube::{Api, api::DynamicObject};
use kuberay_admission::{Cluster, Key};
use kuberay_plugin_sdk::{HostError, HostResult, Kind};
use serde_json::Value;

use crate::kubernetes::{KubeBridge, errors::from_kube, to_json};

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
