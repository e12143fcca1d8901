//! From a kind to the API resource that serves it, asked once per kind.

use std::{collections::HashMap, sync::Mutex};

use kube::{
    Client,
    api::GroupVersionKind,
    discovery::{ApiResource, Scope, pinned_kind},
};
use kuberay_plugin_sdk::Kind;

use super::errors::from_kube;
use crate::sandbox::host_api::HostResult;

#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub resource: ApiResource,
    pub namespaced: bool,
}

pub(crate) struct Discovery {
    client: Client,
    known: Mutex<HashMap<Kind, Resolved>>,
}

impl Discovery {
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client,
            known: Mutex::default(),
        }
    }

    pub(crate) async fn resolve(&self, kind: &Kind) -> HostResult<Resolved> {
        if let Some(found) = self.lock().get(kind) {
            return Ok(found.clone());
        }
        let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
        let (resource, capabilities) = pinned_kind(&self.client, &gvk).await.map_err(from_kube)?;
        let resolved = Resolved {
            resource,
            namespaced: capabilities.scope == Scope::Namespaced,
        };
        self.lock().insert(kind.clone(), resolved.clone());
        Ok(resolved)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Kind, Resolved>> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
