//! A plugin's reads: within the reconciled object's namespace, Secrets only as its policy's `secrets`
//! setting allows (`secrets.rs`), and without the host's own condition.

use kuberay_core::{HostError, Kind};
use serde_json::Value;

use super::{Admission, Cluster, is_secret};
use crate::{names, strip_host_condition};
use kuberay_core::HostResult;

impl<C: Cluster> Admission<C> {
    /// The object of `kind` named `name` in the reconciled object's namespace, as the plugin may see it.
    pub async fn get(&self, kind: &Kind, name: &str) -> HostResult<Option<Value>> {
        self.check_names(kind, Some(name))?;
        let mut object = self.cluster.read(kind, &self.primary.namespace, name).await?;
        if let Some(secret) = object.as_ref().filter(|_| is_secret(kind)) {
            self.check_secret_read(secret).await?;
        }
        if let Some(object) = object.as_mut() {
            strip_host_condition(object);
        }
        Ok(object)
    }

    /// The objects of `kind` in the reconciled object's namespace matching `label_selector`, those the plugin
    /// may see.
    pub async fn list(&self, kind: &Kind, label_selector: &str) -> HostResult<Vec<Value>> {
        self.check_names(kind, None)?;
        if let Err(e) = names::label_selector(label_selector) {
            return Err(HostError::Forbidden(e.to_string()));
        }
        let namespace = &self.primary.namespace;
        let mut items = self.cluster.list(kind, namespace, label_selector).await?;
        if is_secret(kind) {
            items = self.filter_secrets(items).await?;
        }
        items.iter_mut().for_each(strip_host_condition);
        Ok(items)
    }
}
