//! `commit`: what every admitted write does, once: the leader fence right before the request, the request
//! with the plugin's field manager, `api_writes_total`, the last applied intent (so the same write is skipped
//! next time) and the read-your-writes overlay (so the plugin's next read sees it).

use kube::{
    Api,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy},
};
use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::{Value, json};

use kuberay_admission::{Admitted, Decision, ToSend};

use super::Admission;
use crate::kubernetes::{errors::from_kube, to_json};

fn dynamic(object: Value) -> Result<DynamicObject, HostError> {
    serde_json::from_value(object).map_err(|e| HostError::Invalid(format!("not a Kubernetes object: {e}")))
}

/// Writing what admission decided, toward the API server.
pub(crate) trait Commit {
    /// Writes what admission decided; returns the object as written (or as it already was), if any.
    async fn commit(&self, decision: Decision) -> Result<Option<Value>, HostError>;
}

impl Commit for Admission {
    async fn commit(&self, decision: Decision) -> Result<Option<Value>, HostError> {
        let Admitted {
            verb,
            kind,
            name,
            send,
            remember,
            conceal,
        } = match decision {
            Decision::Unchanged { verb, current } => {
                self.cluster().metrics().write(self.plugin(), verb, false);
                return Ok(current);
            }
            Decision::Write(admitted) => *admitted,
        };
        let api = self.cluster().api(&kind, &self.primary().namespace).await?;
        self.cluster().fenced()?;
        let apply = PatchParams::apply(self.field_manager()).force();
        let create = PostParams {
            field_manager: Some(self.field_manager().to_string()),
            ..PostParams::default()
        };
        let written = match send {
            ToSend::Create(object) => api.create(&create, &dynamic(object)?).await,
            ToSend::Apply(object) => api.patch(&name, &apply, &Patch::Apply(&object)).await,
            ToSend::CreateAsApply(object) => {
                let created = api.create(&create, &dynamic(object)?).await.map_err(from_kube)?;
                own_as_apply(self, &api, &name, created).await
            }
            ToSend::Status(intent) => api.patch_status(&name, &apply, &Patch::Apply(&intent)).await,
            ToSend::Merge(patch) => {
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
            ToSend::Delete { uid } => return delete(self, api, kind, name, uid).await,
        }
        .map_err(from_kube)?;
        self.cluster().metrics().write(self.plugin(), verb, true);
        let written = to_json(&written)?;
        let name = written
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(&name)
            .to_string();
        let key = self.key(&kind, &name);
        if let Some((subresource, hash)) = remember {
            self.cluster().applied.record(key.clone(), subresource, hash);
        }
        self.cluster().overlay.record_write(key, written.clone());
        let mut written = written;
        if conceal {
            kuberay_admission::conceal(&mut written);
        }
        Ok(Some(written))
    }
}

/// Re-labels the field manager's entry of an object it just created from an update to an apply, as
/// `kubectl` does when it moves client-side applied objects to server-side apply: a later apply then
/// owns those fields alone (an apply of the same values would only share them with the create's entry, and
/// a field the plugin stops asking for would stay). The patch carries the created object's uid.
async fn own_as_apply(
    admission: &Admission,
    api: &Api<DynamicObject>,
    name: &str,
    created: DynamicObject,
) -> Result<DynamicObject, kube::Error> {
    let mut entries = created.metadata.managed_fields.clone().unwrap_or_default();
    let mut changed = false;
    for entry in &mut entries {
        if entry.manager.as_deref() == Some(admission.field_manager())
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
    admission: &Admission,
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
    admission
        .cluster()
        .metrics()
        .write(admission.plugin(), "delete", true);
    let key = admission.key(&kind, &name);
    admission.cluster().applied.forget(&key);
    admission.cluster().overlay.record_delete(key, uid);
    Ok(None)
}
