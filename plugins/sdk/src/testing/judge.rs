//! What [`FakeHost::for_plugin`](super::FakeHost::for_plugin) judges with the operator's own code
//! (`kuberay-admission`, the crate the operator's admission is): the plugin's grant under the built-in
//! policy (its entry named like the plugin, else what the plugin asks for under the policy's defaults, as
//! `kuberay-wasm plugin run` and `CheckedHost` choose it), the sizes of what the plugin passes and the
//! call's budget, then every read and write through admission: names, namespace, ownership, adoption,
//! provenance against the user's request, content rules and Pod Security. A test that passes on it is not
//! refused by the operator under the built-in policy.
//!
//! The fake cluster is seen by admission through [`View`], which reads the FakeHost's own objects: nothing
//! is copied per call.

use std::{
    cell::RefCell,
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard},
};

use kuberay_admission::{
    Admission, Cluster, Key, Primary,
    budget::{self, Cost, Input, TokenBucket, Usage},
    policy::{
        Grant, Policy, check_grant,
        native::{PluginGrant, grant_for_plugin},
    },
    scope::is_cluster_scoped,
};
use kuberay_core::{HostError, HostResult, Kind, PluginMetadata, Verb, selector::Selector};
use serde_json::{Map, Value};

/// The fake cluster's objects (one namespace), by kind and name.
pub(super) type Objects = BTreeMap<(Kind, String), Value>;

/// A value the FakeHost and admission's [`View`] share. `borrow`/`borrow_mut` as on a `RefCell` (admission
/// needs `Send + Sync`); a lock held across another borrow of the same value would block, as a `RefCell`
/// would panic.
#[derive(Debug, Default)]
pub(super) struct Shared<T>(Arc<RwLock<T>>);

impl<T> Shared<T> {
    pub(super) fn new(value: T) -> Self {
        Self(Arc::new(RwLock::new(value)))
    }

    pub(super) fn borrow(&self) -> RwLockReadGuard<'_, T> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn borrow_mut(&self) -> RwLockWriteGuard<'_, T> {
        self.0.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn share(&self) -> Self {
        Self(self.0.clone())
    }
}

/// The label on a Namespace that sets its Pod Security level.
const ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// The fake cluster as admission looks it up: the FakeHost's objects, its reconciled object, the kinds it
/// does not serve, and the Namespaces among its objects for their Pod Security level.
pub(super) struct View {
    namespace: String,
    primary_kind: Kind,
    primary: Shared<Value>,
    objects: Shared<Objects>,
    unserved: Shared<BTreeSet<Kind>>,
}

impl View {
    fn primary_named(&self, kind: &Kind, name: &str) -> Option<Value> {
        let primary = self.primary.borrow();
        (*kind == self.primary_kind
            && primary.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .then(|| primary.clone())
    }

    fn lookup(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        self.served(kind)?;
        if namespace != self.namespace {
            return Ok(None);
        }
        if let Some(primary) = self.primary_named(kind, name) {
            return Ok(Some(primary));
        }
        Ok(self
            .objects
            .borrow()
            .get(&(kind.clone(), name.to_string()))
            .cloned())
    }

    fn served(&self, kind: &Kind) -> HostResult<()> {
        if self.unserved.borrow().contains(kind) {
            return Err(HostError::NotFound(format!(
                "the server could not find the requested resource ({kind:?})"
            )));
        }
        Ok(())
    }
}

impl Cluster for View {
    async fn read(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        self.lookup(kind, namespace, name)
    }

    async fn read_live(&self, kind: &Kind, namespace: &str, name: &str) -> HostResult<Option<Value>> {
        self.lookup(kind, namespace, name)
    }

    async fn list(&self, kind: &Kind, namespace: &str, label_selector: &str) -> HostResult<Vec<Value>> {
        self.served(kind)?;
        if namespace != self.namespace {
            return Ok(Vec::new());
        }
        let selector = Selector::parse(label_selector).map_err(|e| HostError::Invalid(e.to_string()))?;
        let mut items: Vec<Value> = self
            .objects
            .borrow()
            .iter()
            .filter(|((k, _), o)| k == kind && selector.matches_object(o))
            .map(|(_, o)| o.clone())
            .collect();
        let primary = self.primary.borrow();
        if *kind == self.primary_kind && selector.matches_object(&primary) {
            items.push(primary.clone());
        }
        Ok(items)
    }

    async fn is_namespaced(&self, kind: &Kind) -> HostResult<bool> {
        self.served(kind)?;
        Ok(!is_cluster_scoped(kind))
    }

    async fn enforced_level(&self, namespace: &str) -> Result<Option<String>, String> {
        let key = (Kind::new("", "v1", "Namespace"), namespace.to_string());
        Ok(self
            .objects
            .borrow()
            .get(&key)
            .and_then(|ns| ns.pointer("/metadata/labels"))
            .and_then(|labels| labels.get(ENFORCE))
            .and_then(Value::as_str)
            .map(str::to_string))
    }

    fn same_as_last(&self, _: &Key, _: &'static str, _: u64) -> bool {
        // The FakeHost records every write the plugin makes, skipped or not.
        false
    }
}

/// The operator's checks of one plugin's calls.
pub(super) struct Judge {
    /// The plugin's grant, or why the operator would not load the plugin at all (then every call fails).
    grant: Result<Arc<Grant>, String>,
    /// The entry's configuration, over which tests may set their own.
    pub(super) config: Map<String, Value>,
    /// What the current call (since the last `FakeHost::request`) used.
    usage: RefCell<Usage>,
    write_rate: TokenBucket,
}

impl Judge {
    /// The checks of `metadata`'s plugin under the built-in policy.
    pub(super) fn new(metadata: &PluginMetadata) -> Self {
        Self::under(Ok(Policy::builtin()), metadata)
    }

    /// The checks of `metadata`'s plugin under `policy` (a policy file's text).
    pub(super) fn with_policy(policy: &str, metadata: &PluginMetadata) -> Self {
        Self::under(Policy::parse(policy).map_err(|e| e.to_string()), metadata)
    }

    fn under(policy: Result<Policy, String>, metadata: &PluginMetadata) -> Self {
        let chosen = policy.and_then(|policy| grant_for_plugin(&policy, metadata).map_err(|e| e.to_string()));
        let (grant, config) = match chosen {
            Ok(PluginGrant { grant, config }) => (Ok(Arc::new(grant)), config),
            Err(refusal) => (Err(refusal), Map::new()),
        };
        let budget = grant.as_ref().map(|g| g.budget).unwrap_or_default();
        Self {
            grant,
            config,
            usage: RefCell::new(Usage::new(budget)),
            write_rate: TokenBucket::new(
                budget.rates.write_bytes_burst,
                budget.rates.write_bytes_per_second,
            ),
        }
    }

    /// Starts a new call: its budget counts from zero again.
    pub(super) fn new_call(&self) {
        let budget = self.grant.as_ref().map(|g| g.budget).unwrap_or_default();
        *self.usage.borrow_mut() = Usage::new(budget);
    }

    fn grant(&self) -> Result<&Arc<Grant>, HostError> {
        self.grant.as_ref().map_err(|e| HostError::Forbidden(e.clone()))
    }

    /// A call's cost against its budget and the sizes of what the plugin passed (`inputs`, each with its
    /// limit), in the order the operator's gate checks them; the grant check comes after
    /// ([`Self::granted`]), once the call's bytes are charged.
    pub(super) fn spend(&self, cost: Cost, inputs: &[Input]) -> Result<(), HostError> {
        let mut usage = self.usage.borrow_mut();
        usage.charge(cost).map_err(exceeded)?;
        usage.inputs(inputs).map_err(exceeded)
    }

    /// The grant check of `verb` on `kind`.
    pub(super) fn granted(&self, verb: Verb, kind: &Kind) -> Result<(), HostError> {
        let grant = self.grant()?;
        check_grant(grant, &grant.entry, kind, verb)
    }

    /// Whether the plugin may send requests to Ray heads.
    pub(super) fn ray_heads(&self) -> Result<(), HostError> {
        let grant = self.grant()?;
        if grant.ray_heads {
            return Ok(());
        }
        Err(HostError::Forbidden(format!(
            "plugin {} was not granted the Ray head interface",
            grant.entry
        )))
    }

    /// Charges the bytes of an object or status to write.
    pub(super) fn write_bytes(&self, what: &'static str, value: &Value) -> Result<(), HostError> {
        let len = value.to_string().len();
        let mut usage = self.usage.borrow_mut();
        usage
            .input(what, len, budget::MAX_OBJECT_BYTES)
            .map_err(exceeded)?;
        usage.write_bytes(len, &self.write_rate).map_err(exceeded)
    }

    /// Checks the number of objects a list returned.
    pub(super) fn list_items(&self, items: usize) -> Result<(), HostError> {
        self.usage.borrow_mut().list(items).map_err(exceeded)
    }

    /// Admission of this reconcile against `view`, the reconciled object being `primary`.
    pub(super) fn admission(&self, view: View) -> Result<Admission<View>, HostError> {
        let grant = self.grant()?.clone();
        let primary = {
            let object = view.primary.borrow();
            let at = |pointer: &str| {
                object
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Primary {
                kind: view.primary_kind.clone(),
                namespace: view.namespace.clone(),
                name: at("/metadata/name"),
                uid: at("/metadata/uid"),
            }
        };
        let plugin = grant.entry.clone();
        let finalizer = grant.finalizer.clone();
        Ok(Admission::new(Arc::new(view), primary, grant, &plugin, finalizer))
    }
}

/// A breach of the call's budget, as the operator's gate reports it to the plugin (which it then stops).
fn exceeded(e: budget::Exceeded) -> HostError {
    HostError::Invalid(e.message)
}

/// Runs admission's `future` to its end: the fake cluster answers at once, so nothing ever waits.
pub(super) fn run<T>(future: impl Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

/// The view of the fake cluster admission judges against.
pub(super) fn view(
    namespace: &str,
    primary_kind: &Kind,
    primary: &Shared<Value>,
    objects: &Shared<Objects>,
    unserved: &Shared<BTreeSet<Kind>>,
) -> View {
    View {
        namespace: namespace.to_string(),
        primary_kind: primary_kind.clone(),
        primary: primary.share(),
        objects: objects.share(),
        unserved: unserved.share(),
    }
}
