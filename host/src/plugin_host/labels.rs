//! A plugin's apply to a "grandchild", an object controlled by an object its reconciled object controls
//! (the head Pod of a RayService's RayCluster): only a label-only intent with keys the policy lists
//! (`kubernetes::label_only`), sent as server-side apply with the plugin's field manager, so it owns those
//! labels and nothing else, and without the host's owner reference (the object stays its controller's).

use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams},
};
use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::Value;

use super::{PluginHost, forbidden, str_at};
use crate::{
    kubernetes::{
        errors::from_kube,
        label_only, to_json,
        unchanged::{LABELS, intent_hash, is_subset},
    },
    policy::guard,
    sandbox::host_api::HostResult,
};

impl PluginHost {
    /// Applies the labels of `object` to `current`, which the reconciled object controls through an object
    /// it owns (the caller checked that), or refuses anything else.
    pub(super) async fn apply_labels(
        &self,
        api: &Api<DynamicObject>,
        kind: &Kind,
        name: &str,
        object: &Value,
        current: &Value,
    ) -> HostResult<Value> {
        let allowed = self.grant.rules.clone().unwrap_or_default().grandchild_labels;
        let labels = label_only::labels(object, &self.primary.namespace, &allowed).map_err(|message| {
            forbidden(format!(
                "{kind} {name} is controlled by an object {} {} controls; {message}",
                self.primary.kind.kind, self.primary.name
            ))
        })?;
        if guard::is_secret(kind) {
            self.guard().check_secret_read(current).await?;
        }
        let uid = str_at(current, "/metadata/uid")
            .ok_or_else(|| HostError::Internal(format!("{kind} {name} has no uid")))?;
        let intent = label_only::intent(kind, &self.primary.namespace, name, uid, labels);
        let key = self.key(kind, name);
        let hash = intent_hash(&intent);
        if self.kube.applied.same_as_last(&key, LABELS, hash) && is_subset(&intent, current) {
            self.kube.metrics().write(&self.plugin, "apply", false);
            return Ok(current.clone());
        }
        let params = PatchParams::apply(&self.field_manager).force();
        self.kube.fenced()?;
        let applied = api
            .patch(name, &params, &Patch::Apply(&intent))
            .await
            .map_err(from_kube)?;
        self.kube.metrics().write(&self.plugin, "apply", true);
        let applied = to_json(&applied)?;
        self.kube.applied.record(key.clone(), LABELS, hash);
        self.kube.overlay.record_write(key, applied.clone());
        Ok(applied)
    }
}
