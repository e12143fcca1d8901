//! Admission: the one path every write a plugin asks for takes, from the host call to the API server (or to
//! an in-memory cluster).
//! **A plugin may write what its user asked for, and nothing more**: each write is judged against the
//! object being reconciled (what it controls, and the user's request behind it, its *provenance*) and the
//! administrator's grant; what passes is committed once.
//!
//! `admit` (in `intents`) takes an [`Intent`] (create, apply, status, delete, finalizer) through these
//! stages, in this order; the first that refuses ends the call with `HostError::Forbidden` (in the operator,
//! logged and counted once where the host call ends, its `sandbox::call`):
//!
//! | stage | what | where |
//! |---|---|---|
//! | grant | the verb on the kind, the sizes of what the plugin passed, its budget | the operator's `sandbox/gate.rs` with [`budget`] (before any work) |
//! | names | kinds, names and namespaces follow Kubernetes' rules before a URL is built | [`names`] |
//! | namespace | only the reconciled object's namespace; no cluster-scoped kinds | `ownership.rs` |
//! | ownership | one controller owner reference, to the reconciled object; no foreign owners or finalizers | `kuberay_core::ownership`, `ownership.rs` |
//! | adoption | a live object must be the reconciled object's; a new one is created with a precondition that fails if it appeared meanwhile; a grandchild gets a label-only apply | `ownership.rs`, [`label_only`] |
//! | unchanged | a write that would change nothing is skipped here: nothing reaches the API server | [`unchanged`] |
//! | provenance and content | references (Secrets, ConfigMaps, claims, volumes, ServiceAccounts, selected clusters) the user's request names or the object controls; Services, endpoints, RBAC, Ingress, Gateway, routes, the `ray.io/cluster` label | `judge.rs`, `scan.rs`, `provenance.rs`, `content.rs` |
//! | Pod Security | every pod- and container-shaped part: the user's settings up to the namespace's level, the plugin's own up to its profile | `judge.rs`, `pod_security.rs`, the namespace's level from [`Cluster::enforced_level`] |
//!
//! What passes is a [`Decision`]; writing it is the caller's: the operator's `admission/commit.rs` (the
//! leader fence, the request with the plugin's field manager, the `api_writes_total` count, the last applied
//! intent and the read-your-writes overlay), or an in-memory cluster. Reads are held to the reconciled object's namespace (`reads.rs`), and reads of
//! Secrets to the policy's `secrets` setting (`secrets.rs`).
//!
//! The rules look the cluster up through one small trait, [`Cluster`] (`cluster.rs`): the operator's
//! Kubernetes bridge, the in-memory cluster of `kuberay-wasm plugin run` and `CheckedHost`, or the SDK's
//! `FakeHost`: each judges a plugin's writes exactly as the operator does, because this crate is the only
//! place the rules live. The administrator's [`policy`] (the grants) and the call [`budget`]s are here for
//! the same reason.
//!
//! To add a write rule: put what the object alone decides in `content.rs` (returning what must still be
//! verified as `content::Needs`), settle the needs in `judge.rs`, and name the rule in the table above.

pub mod budget;
mod certificates;
mod cluster;
mod content;
mod intents;
mod judge;
pub mod label_only;
pub mod names;
mod ownership;
mod pod_security;
pub mod policy;
mod provenance;
mod reads;
mod scan;
pub mod scope;
mod secrets;
pub mod unchanged;

use std::sync::Arc;

use kuberay_core::{HostError, Kind};
use serde_json::Value;
use tokio::sync::OnceCell;

pub use cluster::Cluster;
pub use intents::{Admitted, Decision, Intent, ToSend, conceal};
pub use secrets::is_secret;

use self::provenance::Request;
use crate::policy::{Grant, file::ContentRules};

/// The status condition the host owns on reconciled objects (`Reconciled=False` while reconciling fails).
/// Plugins neither see it nor write it.
pub const HOST_CONDITION: &str = "Reconciled";

/// Removes the host's condition from an object's status.
pub fn strip_host_condition(object: &mut Value) {
    if let Some(conditions) = object
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some(HOST_CONDITION));
    }
}

/// Field manager of a plugin's writes.
pub fn field_manager(plugin: &str) -> String {
    format!("kuberay-wasm/{plugin}")
}

/// An object's address within the cluster: its kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

/// The object being reconciled.
#[derive(Debug, Clone)]
pub struct Primary {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The admission of one reconcile's writes: its plugin, its object, the plugin's grant, and the user's
/// request behind the object (read once, when a write first needs it), judged against `C` (the operator's
/// Kubernetes bridge, or an in-memory cluster).
pub struct Admission<C: Cluster> {
    cluster: Arc<C>,
    primary: Primary,
    grant: Arc<Grant>,
    /// The policy entry's name: metrics and field manager.
    plugin: String,
    field_manager: String,
    /// The plugin's declared finalizer, the only one it may set.
    finalizer: Option<String>,
    request: OnceCell<Request>,
}

fn forbidden(message: String) -> HostError {
    HostError::Forbidden(message)
}

/// The string at a JSON pointer.
fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

/// The items of the list at a JSON pointer (none if it is not a list).
fn each<'a>(value: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The strings of the list at a JSON pointer.
fn strings_at<'a>(value: &'a Value, pointer: &str) -> impl Iterator<Item = &'a str> {
    each(value, pointer).filter_map(Value::as_str)
}

/// An object's controller owner reference, if it has one.
fn controller(object: &Value) -> Option<&Value> {
    each(object, "/metadata/ownerReferences")
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

impl<C: Cluster> Admission<C> {
    pub fn new(
        cluster: Arc<C>,
        primary: Primary,
        grant: Arc<Grant>,
        plugin: &str,
        finalizer: Option<String>,
    ) -> Self {
        Self {
            cluster,
            primary,
            grant,
            plugin: plugin.to_string(),
            field_manager: field_manager(plugin),
            finalizer,
            request: OnceCell::new(),
        }
    }

    /// The reconciled object.
    pub fn primary(&self) -> &Primary {
        &self.primary
    }

    /// The plugin's grant.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// The cluster the writes are judged against.
    pub fn cluster(&self) -> &Arc<C> {
        &self.cluster
    }

    /// The policy entry's name (metrics, messages).
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// The field manager of the plugin's writes.
    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }

    fn rules(&self) -> ContentRules {
        self.grant.rules.clone().unwrap_or_default()
    }

    /// The user's request behind the reconciled object (see `provenance`), read on first use.
    async fn request(&self) -> Result<&Request, HostError> {
        self.request
            .get_or_try_init(|| {
                provenance::request(self.cluster.as_ref(), &self.primary, &self.grant.reconciled_kinds)
            })
            .await
    }

    /// Whether a user asked for the RayCluster `cluster`: a user wrote the reconciled object, or the user's
    /// object its chain leads to names the cluster.
    pub async fn user_selects(&self, cluster: &str) -> Result<bool, HostError> {
        let request = self.request().await?;
        Ok(request.user_wrote_primary || request.says(cluster))
    }

    /// Refuses a kind or an object name that breaks Kubernetes' naming rules, before any request is built.
    pub fn check_names(&self, kind: &Kind, name: Option<&str>) -> Result<(), HostError> {
        names::kind(kind).map_err(|e| forbidden(e.to_string()))?;
        match name.map(|name| names::object_name(kind, name)) {
            Some(Err(e)) => Err(forbidden(e.to_string())),
            _ => Ok(()),
        }
    }

    /// Refuses a cluster-scoped kind: plugins write within the reconciled object's namespace.
    pub async fn check_namespaced(&self, kind: &Kind) -> Result<(), HostError> {
        if self.cluster.is_namespaced(kind).await? {
            return Ok(());
        }
        Err(forbidden(format!(
            "{kind} is cluster-scoped; plugins work within one namespace"
        )))
    }

    /// The reconciled object as it is now (cache and recent writes).
    pub async fn primary_now(&self) -> Result<Value, HostError> {
        self.cluster
            .read(&self.primary.kind, &self.primary.namespace, &self.primary.name)
            .await?
            .ok_or_else(|| {
                HostError::NotFound(format!("{} {} is gone", self.primary.kind, self.primary.name))
            })
    }

    /// `Kind name` of the reconciled object, for messages.
    fn who(&self) -> String {
        format!("{} {}", self.primary.kind.kind, self.primary.name)
    }
}
