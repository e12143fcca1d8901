//! Admission: the one path every write a plugin asks for takes, from the host call to the API server.
//! **A plugin may write what its user asked for, and nothing more**: each write is judged against the
//! object being reconciled (what it controls, and the user's request behind it, its *provenance*) and the
//! administrator's grant; what passes is committed once.
//!
//! `admit` (in `intents`) takes an [`Intent`] (create, apply, status, delete, finalizer) through these
//! stages, in this order; the first that refuses ends the call with `HostError::Forbidden` (logged and counted
//! once, where the host call ends, `sandbox::call`):
//!
//! | stage | what | where |
//! |---|---|---|
//! | grant | the verb on the kind, the sizes of what the plugin passed, its budget | `sandbox/gate.rs`, `sandbox/budget.rs` (before any work) |
//! | names | kinds, names and namespaces follow Kubernetes' rules before a URL is built | `kubernetes/names.rs` |
//! | namespace | only the reconciled object's namespace; no cluster-scoped kinds | `ownership.rs` |
//! | ownership | one controller owner reference, to the reconciled object; no foreign owners or finalizers | `kuberay_plugin_sdk::ownership` (shared with `FakeHost`), `ownership.rs` |
//! | adoption | a live object must be the reconciled object's; a new one is created with a precondition that fails if it appeared meanwhile; a grandchild gets a label-only apply | `ownership.rs`, `kubernetes/label_only.rs` |
//! | unchanged | a write that would change nothing is skipped here: nothing reaches the API server | `kubernetes/unchanged.rs` |
//! | provenance and content | references (Secrets, ConfigMaps, claims, volumes, ServiceAccounts, selected clusters) the user's request names or the object controls; Services, endpoints, RBAC, Ingress, Gateway, routes, the `ray.io/cluster` label | `judge.rs`, `scan.rs`, `provenance.rs`, `content.rs` |
//! | Pod Security | every pod- and container-shaped part: the user's settings up to the namespace's level, the plugin's own up to its profile | `judge.rs`, `pod_security.rs`, `kubernetes/namespaces.rs` |
//!
//! `commit` (in `commit.rs`) then does what every write does, in one place: the leader fence, the request
//! with the plugin's field manager, the `api_writes_total` count, the last applied intent and the
//! read-your-writes overlay. Reads are held to the reconciled object's namespace (`reads.rs`), and reads of
//! Secrets to the policy's `secrets` setting (`secrets.rs`).
//!
//! The rules look the cluster up through one small trait, [`Cluster`] (`cluster.rs`): the operator's
//! Kubernetes bridge, or the in-memory cluster of `kuberay-wasm plugin run` (`crate::authoring::run`), which
//! so judges a plugin's writes offline exactly as the operator does and commits them to memory itself.
//!
//! To add a write rule: put what the object alone decides in `content.rs` (returning what must still be
//! verified as `content::Needs`), settle the needs in `judge.rs`, and name the rule in the table above.

mod cluster;
mod commit;
mod content;
mod intents;
mod judge;
mod ownership;
mod pod_security;
mod provenance;
mod reads;
mod scan;
mod secrets;

use std::sync::Arc;

use kuberay_plugin_sdk::{HostError, Kind};
use serde_json::Value;
use tokio::sync::OnceCell;

pub(crate) use cluster::Cluster;
pub(crate) use intents::{Admitted, Decision, Intent, ToSend};
pub(crate) use secrets::is_secret;

use self::provenance::Request;
use crate::{
    kubernetes::{KubeBridge, field_manager, names},
    policy::{Grant, file::ContentRules},
};

/// The object being reconciled.
#[derive(Debug, Clone)]
pub(crate) struct Primary {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The admission of one reconcile's writes: its plugin, its object, the plugin's grant, and the user's
/// request behind the object (read once, when a write first needs it), judged against `C` (the operator's
/// Kubernetes bridge unless said otherwise).
pub(crate) struct Admission<C: Cluster = KubeBridge> {
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
    pub(crate) fn new(
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
    pub(crate) fn primary(&self) -> &Primary {
        &self.primary
    }

    /// The plugin's grant.
    pub(crate) fn grant(&self) -> &Grant {
        &self.grant
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
    pub(crate) async fn user_selects(&self, cluster: &str) -> Result<bool, HostError> {
        let request = self.request().await?;
        Ok(request.user_wrote_primary || request.says(cluster))
    }

    /// Refuses a kind or an object name that breaks Kubernetes' naming rules, before any request is built.
    pub(crate) fn check_names(&self, kind: &Kind, name: Option<&str>) -> Result<(), HostError> {
        names::kind(kind).map_err(|e| forbidden(e.to_string()))?;
        match name.map(|name| names::object_name(kind, name)) {
            Some(Err(e)) => Err(forbidden(e.to_string())),
            _ => Ok(()),
        }
    }

    /// Refuses a cluster-scoped kind: plugins write within the reconciled object's namespace.
    pub(crate) async fn check_namespaced(&self, kind: &Kind) -> Result<(), HostError> {
        if self.cluster.is_namespaced(kind).await? {
            return Ok(());
        }
        Err(forbidden(format!(
            "{kind} is cluster-scoped; plugins work within one namespace"
        )))
    }

    /// The reconciled object as it is now (cache and recent writes).
    pub(crate) async fn primary_now(&self) -> Result<Value, HostError> {
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

impl Admission {
    pub(crate) fn kube(&self) -> &Arc<KubeBridge> {
        &self.cluster
    }
}
