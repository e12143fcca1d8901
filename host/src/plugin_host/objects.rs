//! A plugin's Kubernetes calls. Reads come from the watch caches merged with its recent writes, within the
//! reconciled object's namespace, Secrets only as its policy allows (`admission::reads`); writes are taken
//! through [`crate::admission`] and committed there.

use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::Value;

use super::PluginHost;
use crate::{
    admission::{Commit as _, Intent},
    host_api::HostResult,
};

impl PluginHost {
    pub(super) async fn get_object(&self, kind: Kind, name: String) -> HostResult<Option<Value>> {
        self.admission.get(&kind, &name).await
    }

    pub(super) async fn list_objects(&self, kind: Kind, label_selector: String) -> HostResult<Vec<Value>> {
        self.admission.list(&kind, &label_selector).await
    }

    /// Admits and commits a write; the object as written (or as it already was), if any.
    async fn write(&self, intent: Intent) -> HostResult<Option<Value>> {
        let decision = self.admission.admit(intent).await?;
        self.admission.commit(decision).await
    }

    pub(super) async fn create_object(&self, kind: Kind, object: Value) -> HostResult<Value> {
        self.write(Intent::Create { kind, object })
            .await?
            .ok_or_else(|| HostError::Internal("the API server returned no object".into()))
    }

    pub(super) async fn apply_object(&self, kind: Kind, object: Value) -> HostResult<Value> {
        let name = object.pointer("/metadata/name").cloned();
        match self.write(Intent::Apply { kind, object }).await? {
            Some(written) => Ok(written),
            None => Err(HostError::Internal(format!(
                "the API server returned no object for {name:?}"
            ))),
        }
    }

    pub(super) async fn apply_primary_status(&self, status: Value) -> HostResult<()> {
        self.write(Intent::Status { status }).await.map(drop)
    }

    pub(super) async fn delete_object(
        &self,
        kind: Kind,
        name: String,
        uid: Option<String>,
    ) -> HostResult<()> {
        self.write(Intent::Delete { kind, name, uid }).await.map(drop)
    }

    pub(super) async fn set_finalizers(&self, finalizer: String, add: bool) -> HostResult<()> {
        self.write(Intent::Finalizer { finalizer, add }).await.map(drop)
    }
}
