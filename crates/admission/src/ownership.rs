//! Namespace, ownership and adoption: what a plugin writes goes into the reconciled object's namespace under
//! its control (the rules themselves are the SDK's `ownership::Writer`, which `FakeHost` shares), and which
//! objects count as the reconciled object's: those it controls, and those an object of a kind the plugin
//! owns controls on its behalf (checked by uid at both steps; names alone decide nothing).

pub use kuberay_core::ownership::controlled_by;
use kuberay_core::{HostError, Kind, ownership::Writer};
use serde_json::{Value, json};

use super::{Admission, Cluster, controller, forbidden, str_at};
use crate::names;

/// The controller a write names instead of the reconciled object: an object of a kind the plugin owns that
/// the reconciled object controls (verified by uid), so that the written object is controlled by the
/// reconciled object through it, as KubeRay's RayService makes each RayCluster the owner of that cluster's
/// serve Service. `reference` is the owner reference the host writes for it.
#[derive(Debug, Clone)]
pub(super) struct Delegate {
    uid: String,
    reference: Value,
}

impl Delegate {
    /// Whether it controls `object`.
    pub(super) fn controls(&self, object: &Value) -> bool {
        controlled_by(object, &self.uid)
    }
}

impl<C: Cluster> Admission<C> {
    pub(super) fn writer(&self) -> Writer<'_> {
        self.writer_for(None)
    }

    /// The ownership rules of a write whose controller is `delegate`, else the reconciled object.
    fn writer_for<'a>(&'a self, delegate: Option<&'a Delegate>) -> Writer<'a> {
        Writer {
            uid: delegate.map_or(&self.primary.uid, |d| &d.uid),
            reconciles: &self.primary.kind,
            finalizer: self.finalizer.as_deref(),
        }
    }

    /// The controller `object` names other than the reconciled object, if it is one the plugin may name (see
    /// [`Delegate`]); `None` otherwise (a foreign owner is then refused by the ownership rules).
    pub(super) async fn delegate(&self, object: &Value) -> Result<Option<Delegate>, HostError> {
        let Some(owner) = controller(object).filter(|o| str_at(o, "/uid") != Some(self.primary.uid.as_str()))
        else {
            return Ok(None);
        };
        if !self.controlled_through_owned_reference(owner).await? {
            return Ok(None);
        }
        let (api_version, kind, name, uid) = (
            str_at(owner, "/apiVersion").unwrap_or_default(),
            str_at(owner, "/kind").unwrap_or_default(),
            str_at(owner, "/name").unwrap_or_default(),
            str_at(owner, "/uid").unwrap_or_default(),
        );
        let kind = Kind::from_api_version(api_version, kind);
        Ok(Some(Delegate {
            uid: uid.to_string(),
            reference: kuberay_core::ownership::owner_reference(&kind, name, uid),
        }))
    }

    /// Puts `object` in the reconciled object's namespace under its control (or its `delegate`'s), refusing
    /// anything else.
    pub(super) fn own(
        &self,
        kind: &Kind,
        mut object: Value,
        delegate: Option<&Delegate>,
    ) -> Result<Value, HostError> {
        let namespace = self.primary.namespace.clone();
        let owner = match delegate {
            Some(d) => d.reference.clone(),
            None => kuberay_core::ownership::owner_reference(
                &self.primary.kind,
                &self.primary.name,
                &self.primary.uid,
            ),
        };
        let meta = object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| HostError::Invalid("object has no metadata".into()))?;
        if let Some(named) = meta.get("namespace").and_then(Value::as_str) {
            names::namespace(named).map_err(|e| forbidden(e.to_string()))?;
            if named != namespace {
                return Err(forbidden(format!(
                    "namespace {named} is outside the reconciled object's namespace {namespace}"
                )));
            }
        }
        meta.insert("namespace".into(), json!(namespace));
        if let Some(name) = meta.get("name").and_then(Value::as_str) {
            names::object_name(kind, name).map_err(|e| forbidden(e.to_string()))?;
        }
        self.writer_for(delegate)
            .take_ownership(kind, meta, owner)
            .map_err(forbidden)?;
        Ok(object)
    }

    /// Refuses to write over `live` unless the reconciled object controls it; returns the uid the write must
    /// find (sent as a precondition: an object deleted and re-created by someone else since is refused), or
    /// `None` when there is no object yet (then it is created, which fails if one appeared meanwhile).
    pub(super) fn adoption(
        &self,
        kind: &Kind,
        name: &str,
        live: Option<&Value>,
        delegate: Option<&Delegate>,
    ) -> Result<Option<String>, HostError> {
        // An object the reconciled object controls may be handed to a child it controls (a RayService's
        // serve Service written by an earlier version, now owned by its RayCluster).
        let handed_down = delegate.is_some() && live.is_some_and(|l| controlled_by(l, &self.primary.uid));
        if !handed_down {
            self.writer_for(delegate)
                .check_adoption(live)
                .map_err(|message| forbidden(format!("{kind} {name}: {message}")))?;
        }
        Ok(live.and_then(|l| str_at(l, "/metadata/uid")).map(str::to_string))
    }

    /// Whether the reconciled object controls `object`, directly or through an object of a kind it owns.
    pub(super) async fn owned(&self, object: &Value) -> Result<bool, HostError> {
        if controlled_by(object, &self.primary.uid) {
            return Ok(true);
        }
        self.controlled_through_owned(object).await
    }

    /// Whether `object`'s controller is an object of a kind the plugin owns that the reconciled object
    /// controls: the controller reference's uid is that object's, and that object's controller reference
    /// carries the reconciled object's uid.
    pub async fn controlled_through_owned(&self, object: &Value) -> Result<bool, HostError> {
        match controller(object) {
            Some(owner) => self.controlled_through_owned_reference(owner).await,
            None => Ok(false),
        }
    }

    /// Whether the owner reference `owner` names an object of a kind the plugin owns that the reconciled
    /// object controls, by uid.
    async fn controlled_through_owned_reference(&self, owner: &Value) -> Result<bool, HostError> {
        let (Some(api_version), Some(kind), Some(name), Some(uid)) = (
            str_at(owner, "/apiVersion"),
            str_at(owner, "/kind"),
            str_at(owner, "/name"),
            str_at(owner, "/uid"),
        ) else {
            return Ok(false);
        };
        let kind = Kind::from_api_version(api_version, kind);
        if !self.grant.owns.contains(&kind) {
            return Ok(false);
        }
        let parent = self.cluster.read(&kind, &self.primary.namespace, name).await?;
        Ok(parent.is_some_and(|p| {
            !uid.is_empty()
                && str_at(&p, "/metadata/uid") == Some(uid)
                && controlled_by(&p, &self.primary.uid)
        }))
    }

    /// Whether the object `kind`/`name` exists and the reconciled object controls it (see [`Self::owned`]).
    pub(super) async fn owned_named(&self, kind: &Kind, name: &str) -> Result<bool, HostError> {
        if names::object_name(kind, name).is_err() {
            return Ok(false);
        }
        match self.cluster.read(kind, &self.primary.namespace, name).await? {
            Some(object) => self.owned(&object).await,
            None => Ok(false),
        }
    }

    /// Whether `cluster` is a RayCluster of the reconciled object: itself, or one it controls.
    pub(super) async fn own_cluster(&self, cluster: &str) -> Result<bool, HostError> {
        let clusters = Kind::new("ray.io", "v1", "RayCluster");
        if self.primary.kind == clusters && self.primary.name == cluster {
            return Ok(true);
        }
        self.owned_named(&clusters, cluster).await
    }
}
