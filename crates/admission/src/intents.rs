//! `admit`: each kind of write a plugin asks for, taken through the stages of the module's table in order.

use kuberay_core::{HostError, Kind};
use serde_json::{Value, json};

use super::{
    Admission, Cluster, certificates, each, forbidden, ownership::controlled_by, secrets::is_secret, str_at,
};
use crate::{
    HOST_CONDITION, Key, label_only,
    unchanged::{self, intent_hash, is_subset},
};

/// A write a plugin asks for.
#[derive(Debug)]
pub enum Intent {
    /// Create an object (a Pod with `generateName`, say).
    Create { kind: Kind, object: Value },
    /// Server-side apply an object (or, to a grandchild, its labels).
    Apply { kind: Kind, object: Value },
    /// Apply the reconciled object's status.
    Status { status: Value },
    /// Delete an object the reconciled object controls (or the reconciled object itself), if `uid` still
    /// names it.
    Delete {
        kind: Kind,
        name: String,
        uid: Option<String>,
    },
    /// Add or remove the plugin's finalizer on the reconciled object.
    Finalizer { finalizer: String, add: bool },
}

/// What admission decided about an [`Intent`] it did not refuse.
pub enum Decision {
    /// Write it (`commit`).
    Write(Box<Admitted>),
    /// Nothing to write: the object already is what was asked for (`current`), or is gone.
    Unchanged {
        verb: &'static str,
        current: Option<Value>,
    },
}

/// An admitted write: the request to send and what to remember once it is written. The object's kind is
/// namespaced and the write goes to the reconciled object's namespace.
pub struct Admitted {
    pub verb: &'static str,
    pub kind: Kind,
    /// Empty for a create with `generateName` (the written object names it).
    pub name: String,
    pub send: ToSend,
    /// The intent's hash, remembered under this subresource once written (`kubernetes::unchanged`).
    pub remember: Option<(&'static str, u64)>,
    /// The plugin may not read the object it writes (a Secret cert-manager issued): what it gets back is
    /// [`conceal`]ed.
    pub conceal: bool,
}

/// A Secret the plugin may write to but not read, without its content: no `data`, `stringData` or
/// `kubectl.kubernetes.io/last-applied-configuration` annotation.
pub fn conceal(object: &mut Value) {
    if let Some(fields) = object.as_object_mut() {
        fields.remove("data");
        fields.remove("stringData");
    }
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
}

/// The request an admitted write sends.
#[derive(Debug)]
pub enum ToSend {
    Create(Value),
    /// A server-side apply carrying the live object's uid (a precondition).
    Apply(Value),
    /// An apply of an object that did not exist: created (which fails if one appeared since: never adopted),
    /// then owned by the plugin's field manager as if applied (`commit::own_as_apply`).
    CreateAsApply(Value),
    Status(Value),
    /// A merge patch of the reconciled object (its finalizers, with its resourceVersion).
    Merge(Value),
    /// A delete with the live object's uid as precondition.
    Delete {
        uid: Option<String>,
    },
}

impl<C: Cluster> Admission<C> {
    /// Takes a write through admission: `Err(Forbidden)` is a refusal, other errors are the cluster's.
    pub async fn admit(&self, intent: Intent) -> Result<Decision, HostError> {
        match intent {
            Intent::Create { kind, object } => self.admit_create(kind, object).await,
            Intent::Apply { kind, object } => self.admit_apply(kind, object).await,
            Intent::Status { status } => self.admit_status(status).await,
            Intent::Delete { kind, name, uid } => self.admit_delete(kind, name, uid).await,
            Intent::Finalizer { finalizer, add } => self.admit_finalizer(finalizer, add).await,
        }
    }

    /// The address of `name` of `kind` in the reconciled object's namespace.
    pub fn key(&self, kind: &Kind, name: &str) -> Key {
        Key {
            kind: kind.clone(),
            namespace: self.primary.namespace.clone(),
            name: name.to_string(),
        }
    }

    async fn admit_create(&self, kind: Kind, object: Value) -> Result<Decision, HostError> {
        self.check_names(&kind, None)?;
        self.check_namespaced(&kind).await?;
        let delegate = self.delegate(&object).await?;
        let object = self.own(&kind, object, delegate.as_ref())?;
        self.judge(&kind, &object).await?;
        let name = str_at(&object, "/metadata/name").unwrap_or_default().to_string();
        Ok(Decision::Write(Box::new(Admitted {
            verb: "create",
            kind,
            name,
            send: ToSend::Create(object),
            remember: None,
            conceal: false,
        })))
    }

    async fn admit_apply(&self, kind: Kind, object: Value) -> Result<Decision, HostError> {
        self.check_names(&kind, None)?;
        let name = str_at(&object, "/metadata/name")
            .ok_or_else(|| HostError::Invalid("apply needs metadata.name".into()))?
            .to_string();
        self.check_names(&kind, Some(&name))?;
        self.check_namespaced(&kind).await?;
        // The live object it would write over (see `Cluster::read_live`).
        let live = self
            .cluster
            .read_live(&kind, &self.primary.namespace, &name)
            .await?;
        if is_secret(&kind) && certificates::names_foreign_owner(&object, &self.primary.uid) {
            return self.admit_secret_owner(kind, name, &object, live).await;
        }
        let delegate = self.delegate(&object).await?;
        if let Some(current) = live.as_ref()
            && !controlled_by(current, &self.primary.uid)
            && !delegate.as_ref().is_some_and(|d| d.controls(current))
            && self.controlled_through_owned(current).await?
        {
            return self.admit_labels(kind, name, &object, current).await;
        }
        let mut object = self.own(&kind, object, delegate.as_ref())?;
        let hash = intent_hash(&object);
        let key = self.key(&kind, &name);
        if let Some(current) = live.as_ref()
            && self.cluster.same_as_last(&key, unchanged::OBJECT, hash)
            && is_subset(&object, current)
        {
            return Ok(Decision::Unchanged {
                verb: "apply",
                current: live,
            });
        }
        self.judge(&kind, &object).await?;
        let send = match self.adoption(&kind, &name, live.as_ref(), delegate.as_ref())? {
            Some(uid) => {
                if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("uid".into(), json!(uid));
                }
                ToSend::Apply(object)
            }
            None => ToSend::CreateAsApply(object),
        };
        Ok(Decision::Write(Box::new(Admitted {
            verb: "apply",
            kind,
            name,
            send,
            remember: Some((unchanged::OBJECT, hash)),
            conceal: false,
        })))
    }

    /// The one write allowed to a grandchild (an object the reconciled object controls through one it owns):
    /// the labels its policy entry lists, with the live object's uid and no owner reference.
    async fn admit_labels(
        &self,
        kind: Kind,
        name: String,
        object: &Value,
        current: &Value,
    ) -> Result<Decision, HostError> {
        let allowed = self.rules().grandchild_labels;
        let labels = label_only::labels(object, &self.primary.namespace, &allowed).map_err(|message| {
            forbidden(format!(
                "{kind} {name} is controlled by an object {} controls; {message}",
                self.who()
            ))
        })?;
        if is_secret(&kind) {
            self.check_secret_read(current).await?;
        }
        let uid = str_at(current, "/metadata/uid")
            .ok_or_else(|| HostError::Internal(format!("{kind} {name} has no uid")))?;
        let intent = label_only::intent(&kind, &self.primary.namespace, &name, uid, labels);
        let hash = intent_hash(&intent);
        if self
            .cluster
            .same_as_last(&self.key(&kind, &name), unchanged::LABELS, hash)
            && is_subset(&intent, current)
        {
            return Ok(Decision::Unchanged {
                verb: "apply",
                current: Some(current.clone()),
            });
        }
        Ok(Decision::Write(Box::new(Admitted {
            verb: "apply",
            kind,
            name,
            send: ToSend::Apply(intent),
            remember: Some((unchanged::LABELS, hash)),
            conceal: false,
        })))
    }

    /// The one write a plugin makes to a Secret it neither controls nor may read: KubeRay's owner reference
    /// from a Secret cert-manager issued to its Certificate (see `certificates.rs`), added with the live
    /// Secret's uid; skipped when the Secret already has an owner reference with that uid.
    async fn admit_secret_owner(
        &self,
        kind: Kind,
        name: String,
        object: &Value,
        live: Option<Value>,
    ) -> Result<Decision, HostError> {
        let reference = self
            .certificate_secret_owner(&name, object, live.as_ref())
            .await?;
        let Some(mut current) = live else {
            return Err(HostError::Internal(format!(
                "Secret {name} was judged without being read"
            )));
        };
        let uid = str_at(&current, "/metadata/uid")
            .ok_or_else(|| HostError::Internal(format!("{kind} {name} has no uid")))?
            .to_string();
        conceal(&mut current);
        let owner = str_at(&reference, "/uid");
        if each(&current, "/metadata/ownerReferences").any(|r| str_at(r, "/uid") == owner) {
            return Ok(Decision::Unchanged {
                verb: "apply",
                current: Some(current),
            });
        }
        let intent = json!({
            "apiVersion": kind.api_version(),
            "kind": kind.kind,
            "metadata": {
                "name": name,
                "namespace": self.primary.namespace,
                "uid": uid,
                "ownerReferences": [reference],
            },
        });
        Ok(Decision::Write(Box::new(Admitted {
            verb: "apply",
            kind,
            name,
            send: ToSend::Apply(intent),
            remember: None,
            conceal: true,
        })))
    }

    async fn admit_status(&self, mut status: Value) -> Result<Decision, HostError> {
        // The host's condition is not the plugin's to write (a plugin that copies the conditions it was
        // given must not take it over).
        if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
            conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(HOST_CONDITION));
        }
        let kind = self.primary.kind.clone();
        let name = self.primary.name.clone();
        let intent = json!({
            "apiVersion": kind.api_version(),
            "kind": kind.kind,
            "metadata": {"name": name, "namespace": self.primary.namespace},
            "status": status,
        });
        let hash = intent_hash(&intent);
        let current = self.primary_now().await?;
        if self
            .cluster
            .same_as_last(&self.key(&kind, &name), unchanged::STATUS, hash)
            && is_subset(&json!({"status": status}), &current)
        {
            return Ok(Decision::Unchanged {
                verb: "apply-status",
                current: None,
            });
        }
        self.check_namespaced(&kind).await?;
        Ok(Decision::Write(Box::new(Admitted {
            verb: "apply-status",
            kind,
            name,
            send: ToSend::Status(intent),
            remember: Some((unchanged::STATUS, hash)),
            conceal: false,
        })))
    }

    async fn admit_delete(
        &self,
        kind: Kind,
        name: String,
        uid: Option<String>,
    ) -> Result<Decision, HostError> {
        self.check_names(&kind, Some(&name))?;
        self.check_namespaced(&kind).await?;
        let gone = Decision::Unchanged {
            verb: "delete",
            current: None,
        };
        let Some(current) = self.cluster.read(&kind, &self.primary.namespace, &name).await? else {
            return Ok(gone);
        };
        // A plugin may delete what its object controls, directly or through an object of a kind it owns, and
        // its object itself (a RayJob's DeleteSelf policy).
        let is_primary = kind == self.primary.kind && name == self.primary.name;
        if !is_primary
            && self.writer().check_delete(&current).is_err()
            && !self.controlled_through_owned(&current).await?
        {
            return Err(forbidden(format!("{kind} {name} is not owned by {}", self.who())));
        }
        let current_uid = str_at(&current, "/metadata/uid").map(str::to_string);
        if uid.is_some() && uid != current_uid {
            return Ok(gone);
        }
        Ok(Decision::Write(Box::new(Admitted {
            verb: "delete",
            kind,
            name,
            send: ToSend::Delete { uid: current_uid },
            remember: None,
            conceal: false,
        })))
    }

    async fn admit_finalizer(&self, finalizer: String, add: bool) -> Result<Decision, HostError> {
        self.writer().check_finalizer(&finalizer).map_err(forbidden)?;
        let current = self.primary_now().await?;
        let mut finalizers: Vec<String> = current
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|f| f.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        if finalizers.contains(&finalizer) == add {
            return Ok(Decision::Unchanged {
                verb: "finalize",
                current: None,
            });
        }
        if add {
            finalizers.push(finalizer);
        } else {
            finalizers.retain(|f| *f != finalizer);
        }
        // The resourceVersion makes this a compare-and-swap: a concurrent change becomes a conflict.
        let patch = json!({"metadata": {
            "finalizers": finalizers,
            "resourceVersion": str_at(&current, "/metadata/resourceVersion"),
        }});
        let kind = self.primary.kind.clone();
        self.check_namespaced(&kind).await?;
        Ok(Decision::Write(Box::new(Admitted {
            verb: "finalize",
            kind,
            name: self.primary.name.clone(),
            send: ToSend::Merge(patch),
            remember: None,
            conceal: false,
        })))
    }
}
