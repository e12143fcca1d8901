//! `commit`: what every admitted write does, once: the leader fence right before the request, the request
//! with the plugin's field manager, `api_writes_total`, the last applied intent (so the same write is skipped
//! next time) and the read-your-writes overlay (so the plugin's next read sees it).

use kube::{
    Api,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy},
};
use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::{Value, json};

use super::{
    Admission,
    intents::{Admitted, Decision, ToSend},
    str_at,
};
use crate::kubernetes::{errors::from_kube, to_json};

fn dynamic(object: Value) -> Result<DynamicObject, HostError> {
    serde_json::from_value(object).map_err(|e| HostError::Invalid(format!("not a Kubernetes object: {e}")))
}

impl Admission {
    /// Writes what admission decided; returns the object as written (or as it already was), if any.
    pub(crate) async fn commit(&self, decision: Decision) -> Result<Option<Value>, HostError> {
        let Admitted {
            verb,
            kind,
            name,
            send,
            remember,
        } = match decision {
            Decision::Unchanged { verb, current } => {
                self.kube().metrics().write(&self.plugin, verb, false);
                return Ok(current);
            }
            Decision::Write(admitted) => *admitted,
        };
        let api = self.kube().api(&kind, &self.primary.namespace).await?;
        self.kube().fenced()?;
        let apply = PatchParams::apply(&self.field_manager).force();
        let create = PostParams {
            field_manager: Some(self.field_manager.clone()),
            ..PostParams::default()
        };
        let written = match send {
            ToSend::Create(object) => api.create(&create, &dynamic(object)?).await,
            ToSend::Apply(object) => api.patch(&name, &apply, &Patch::Apply(&object)).await,
            ToSend::CreateAsApply(object) => {
                let created = api.create(&create, &dynamic(object)?).await.map_err(from_kube)?;
                self.own_as_apply(&api, &name, created).await
            }
            ToSend::Status(intent) => api.patch_status(&name, &apply, &Patch::Apply(&intent)).await,
            ToSend::Merge(patch) => {
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
            ToSend::Delete { uid } => return self.delete(api, kind, name, uid).await,
        }
        .map_err(from_kube)?;
        self.kube().metrics().write(&self.plugin, verb, true);
        let written = to_json(&written)?;
        let name = str_at(&written, "/metadata/name").unwrap_or(&name).to_string();
        let key = self.key(&kind, &name);
        if let Some((subresource, hash)) = remember {
            self.kube().applied.record(key.clone(), subresource, hash);
        }
        self.kube().overlay.record_write(key, written.clone());
        Ok(Some(written))
    }

    /// Re-labels the field manager's entry of an object it just created from an update to an apply, as
    /// `kubectl` does when it moves client-side applied objects to server-side apply: a later apply then
    /// owns those fields alone (an apply of the same values would only share them with the create's entry, and
    /// a field the plugin stops asking for would stay). The patch carries the created object's uid.
    async fn own_as_apply(
        &self,
        api: &Api<DynamicObject>,
        name: &str,
        created: DynamicObject,
    ) -> Result<DynamicObject, kube::Error> {
        let mut entries = created.metadata.managed_fields.clone().unwrap_or_default();
        let mut changed = false;
        for entry in &mut entries {
            if entry.manager.as_deref() == Some(self.field_manager.as_str())
                && entry.operation.as_deref() == Some("Update")
            {
                entry.operation = Some("Apply".into());
                changed = true;
            }
        }
        if !changed {
            return Ok(created);
        }
        let patch = json!({"metadata": {"uid": created.metadata.uid, "managedFields": entries}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
    }

    async fn delete(
        &self,
        api: Api<DynamicObject>,
        kind: Kind,
        name: String,
        uid: Option<String>,
    ) -> Result<Option<Value>, HostError> {
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions {
                uid: uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => {}
            // Gone already, or another object by now (the uid precondition): nothing of ours to delete.
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(from_kube(e)),
        }
        self.kube().metrics().write(&self.plugin, "delete", true);
        let key = self.key(&kind, &name);
        self.kube().applied.forget(&key);
        self.kube().overlay.record_delete(key, uid);
        Ok(None)
    }
}
