//! An in-memory [`Host`] for unit tests and native benchmarks of plugin logic. It keeps objects of one
//! namespace, applies the host's ownership rules with the host's own code ([`crate::ownership`]: created and
//! applied objects get a controller owner reference to the reconciled object; foreign owner references,
//! finalizers other than the plugin's declared one, applies to objects the reconciled object does not
//! control and deletes of objects it does not control are refused), and records what the plugin did; an
//! apply is merged into the live object as the API server merges a server-side apply.
//!
//! Built with [`FakeHost::for_plugin`], it judges every call as the operator does, with the operator's own
//! code (`judge.rs`): the verbs the plugin declared, the grant the built-in policy gives it, the sizes and the
//! call's budget, and admission (names, namespace, ownership, provenance, content rules, Pod Security);
//! [`FakeHost::with_policy`] judges under a policy of your own. What it leaves to
//! `kuberay_wasm::authoring::CheckedHost`: the API server's resource versions, preconditions and finalizers
//! holding a delete.

use std::{
    cell::{Cell, RefCell},
    collections::{BTreeMap, BTreeSet},
    time::SystemTime,
};

use kuberay_admission::{
    Admission, Intent,
    budget::{Cost, Input, MAX_NAME_BYTES, MAX_SELECTOR_BYTES, event_inputs, kind_input, ray_inputs},
};
use serde_json::{Value, json};

use self::judge::{Judge, Objects, Shared, View};
use crate::{
    Event, Host, HostError, Kind, LogLevel, Plugin, RayRequest, RayResponse, Request, Verb,
    ownership::{self, Writer},
    selector::Selector,
};

mod judge;

/// A write the plugin made, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Create(Kind, String),
    Apply(Kind, String),
    ApplyStatus,
    Delete(Kind, String),
    AddFinalizer(String),
    RemoveFinalizer(String),
}

type RayHandler = Box<dyn FnMut(&RayRequest) -> Result<RayResponse, HostError> + Send>;

pub struct FakeHost {
    namespace: String,
    primary_kind: Kind,
    primary: Shared<Value>,
    objects: Shared<Objects>,
    writes: RefCell<Vec<Write>>,
    lists: RefCell<Vec<(Kind, String)>>,
    events: RefCell<Vec<Event>>,
    logs: RefCell<Vec<(LogLevel, String)>>,
    ray: RefCell<Option<RayHandler>>,
    counter: Cell<u64>,
    now: Cell<SystemTime>,
    finalizer: Option<String>,
    grandchild_labels: BTreeSet<String>,
    unserved: Shared<BTreeSet<Kind>>,
    refused: RefCell<BTreeMap<Kind, HostError>>,
    statuses: RefCell<Vec<Value>>,
    config: serde_json::Map<String, Value>,
    /// What the plugin last applied to each object: the fields it owns, as the API server's field manager
    /// tracks them.
    applied: RefCell<BTreeMap<(Kind, String), Value>>,
    /// With [`FakeHost::for_plugin`], the plugin's name and the verbs it declared on each kind.
    declared: Option<(String, BTreeMap<Kind, BTreeSet<Verb>>)>,
    /// With [`FakeHost::for_plugin`], the operator's checks of every call (`judge.rs`).
    judge: Option<Judge>,
}

impl FakeHost {
    /// A host reconciling `primary` (JSON with apiVersion, kind and metadata.name/namespace).
    pub fn new(primary: Value) -> Self {
        let mut primary = primary;
        let namespace = primary
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        if primary.pointer("/metadata/uid").is_none()
            && let Some(meta) = primary.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.insert("uid".into(), json!("primary-uid"));
            meta.insert("namespace".into(), json!(namespace));
        }
        let primary_kind = Kind::of_object(&primary).unwrap_or_else(|| Kind::new("", "v1", "Unknown"));
        Self {
            namespace,
            primary_kind,
            primary: Shared::new(primary),
            objects: Shared::default(),
            writes: RefCell::default(),
            lists: RefCell::default(),
            events: RefCell::default(),
            logs: RefCell::default(),
            ray: RefCell::new(None),
            counter: Cell::new(0),
            now: Cell::new(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000)),
            finalizer: None,
            grandchild_labels: BTreeSet::new(),
            unserved: Shared::default(),
            refused: RefCell::default(),
            statuses: RefCell::default(),
            config: serde_json::Map::new(),
            applied: RefCell::default(),
            declared: None,
            judge: None,
        }
    }

    /// A host reconciling `primary` for plugin `P`, judging every call as the operator does (see the module
    /// docs): a verb the plugin did not declare, or its grant under the built-in policy does not hold, is
    /// refused, and so is every read and write the operator's admission refuses. Its configuration is the
    /// policy entry's (`config`; none for a plugin the policy does not name).
    pub fn for_plugin<P: Plugin>(primary: Value) -> Self {
        let metadata = P::metadata();
        let judge = Judge::new(&metadata);
        let mut declared: BTreeMap<Kind, BTreeSet<Verb>> = BTreeMap::new();
        for capability in metadata.capabilities {
            declared
                .entry(capability.kind)
                .or_default()
                .extend(capability.verbs);
        }
        Self {
            finalizer: metadata.finalizer,
            declared: Some((metadata.name, declared)),
            config: judge.config.clone(),
            judge: Some(judge),
            ..Self::new(primary)
        }
    }

    /// Judges the plugin `P` under `policy` (a policy file's text, as `--policy` takes it) instead of the
    /// built-in policy: its entry named like the plugin, else what the plugin asks for under the policy's
    /// `defaults`. A policy the operator would refuse to start with refuses every call, with the reason. The
    /// configuration becomes that entry's (replace it with [`Self::with_config`] afterwards).
    #[must_use]
    pub fn with_policy<P: Plugin>(mut self, policy: &str) -> Self {
        let judge = Judge::with_policy(policy, &P::metadata());
        self.config = judge.config.clone();
        self.judge = Some(judge);
        self
    }

    /// The request the operator would hand the plugin now: the reconciled object as it is stored (status
    /// and finalizers as the plugin left them). It starts a new call: the call's budget counts from zero.
    pub fn request(&self) -> Request {
        if let Some(judge) = &self.judge {
            judge.new_call();
        }
        Request {
            object: self.primary().into(),
            attempt: 0,
        }
    }

    /// Admission of this reconcile, judged against the fake cluster.
    fn admission(&self, judge: &Judge) -> Result<Admission<View>, HostError> {
        judge.admission(judge::view(
            &self.namespace,
            &self.primary_kind,
            &self.primary,
            &self.objects,
            &self.unserved,
        ))
    }

    /// With [`FakeHost::for_plugin`], the operator's checks of a write before the FakeHost makes it: the
    /// call's budget and sizes (`inputs`, and the bytes of `written`), the grant of `verb` on `kind`, then
    /// admission of `intent`.
    fn judge_write(
        &self,
        verb: Verb,
        kind: &Kind,
        inputs: &[Input],
        written: Option<(&'static str, &Value)>,
        intent: impl FnOnce() -> Intent,
    ) -> Result<(), HostError> {
        let Some(judge) = &self.judge else {
            return Ok(());
        };
        judge.spend(Cost::Write, inputs)?;
        if let Some((what, value)) = written {
            judge.write_bytes(what, value)?;
        }
        judge.granted(verb, kind)?;
        judge::run(self.admission(judge)?.admit(intent())).map(|_| ())
    }

    fn judge_finalizer(&self, finalizer: &str, add: bool) -> Result<(), HostError> {
        let inputs = [("finalizer", finalizer.len(), MAX_NAME_BYTES)];
        self.judge_write(Verb::Finalize, &self.primary_kind, &inputs, None, || {
            Intent::Finalizer {
                finalizer: finalizer.to_string(),
                add,
            }
        })
    }

    /// Declares the plugin's finalizer (see [`Self::for_plugin`]); without one, finalizers are refused.
    #[must_use]
    pub fn with_finalizer(mut self, finalizer: impl Into<String>) -> Self {
        self.finalizer = Some(finalizer.into());
        self
    }

    /// The plugin's configuration ([`Host::config`]); empty by default.
    #[must_use]
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = match config {
            Value::Object(config) => config,
            _ => serde_json::Map::new(),
        };
        self
    }

    /// The label keys the plugin may set, with a label-only apply, on objects controlled by objects the
    /// reconciled object controls (its policy entry's `grandchildLabels`; none by default).
    #[must_use]
    pub fn with_grandchild_labels(mut self, keys: &[&str]) -> Self {
        self.grandchild_labels = keys.iter().map(|k| (*k).to_string()).collect();
        self
    }

    /// Makes the fake API server not serve `kind` (its CRD is not installed): every call about it fails
    /// with `NotFound`, as the real host's discovery does.
    pub fn unserve(&self, kind: Kind) {
        self.unserved.borrow_mut().insert(kind);
    }

    /// Makes the fake API server refuse every create and apply of `kind` with `error` (an admission
    /// webhook, Pod Security admission or a quota saying no), after the host's own rules passed; `None`
    /// accepts them again.
    pub fn refuse_writes(&self, kind: Kind, error: Option<HostError>) {
        let mut refused = self.refused.borrow_mut();
        match error {
            Some(error) => refused.insert(kind, error),
            None => refused.remove(&kind),
        };
    }

    /// Refuses `call` (the host call's name) of `verb` on `kind` if the plugin did not declare it (the
    /// judged grant, narrower, follows in the call).
    fn granted(&self, call: &str, verb: Verb, kind: &Kind) -> Result<(), HostError> {
        match &self.declared {
            Some((plugin, declared)) if !declared.get(kind).is_some_and(|v| v.contains(&verb)) => {
                Err(HostError::Forbidden(format!(
                    "plugin {plugin} is not granted {call} on {kind} (it does not ask for it in its metadata)"
                )))
            }
            _ => Ok(()),
        }
    }

    fn admitted(&self, kind: &Kind) -> Result<(), HostError> {
        match self.refused.borrow().get(kind) {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    fn served(&self, kind: &Kind) -> Result<(), HostError> {
        if self.unserved.borrow().contains(kind) {
            Err(HostError::NotFound(format!(
                "the server could not find the requested resource ({kind:?})"
            )))
        } else {
            Ok(())
        }
    }

    /// Puts an object in the fake cluster as the plugin would have created it: controlled by the reconciled
    /// object (for tests that start from a state the plugin reached earlier).
    pub fn insert_owned(&self, mut object: Value) {
        let owner = self.owner_reference();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("ownerReferences".into(), json!([owner]));
        }
        self.insert(object);
    }

    /// The reconciled object as the plugin left it (status and finalizers included).
    pub fn primary(&self) -> Value {
        self.primary.borrow().clone()
    }

    /// Replaces the reconciled object (for example after the test edits its spec).
    pub fn set_primary(&self, object: Value) {
        *self.primary.borrow_mut() = object;
    }

    /// Puts an object in the fake cluster as if something else had created it.
    pub fn insert(&self, mut object: Value) {
        let kind = Kind::of_object(&object).unwrap_or_else(|| Kind::new("", "v1", "Unknown"));
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if object.pointer("/metadata/uid").is_none() {
            let uid = self.next("uid");
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("uid".into(), json!(uid));
            }
        }
        self.objects.borrow_mut().insert((kind, name), object);
    }

    /// Changes a stored object in place (for example to mark a Pod Ready).
    pub fn update(&self, kind: &Kind, name: &str, f: impl FnOnce(&mut Value)) {
        if let Some(object) = self
            .objects
            .borrow_mut()
            .get_mut(&(kind.clone(), name.to_string()))
        {
            f(object);
        }
    }

    pub fn objects(&self, kind: &Kind) -> Vec<Value> {
        self.objects
            .borrow()
            .iter()
            .filter(|((k, _), _)| k == kind)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn writes(&self) -> Vec<Write> {
        self.writes.borrow().clone()
    }

    pub fn clear_writes(&self) {
        self.writes.borrow_mut().clear();
        self.events.borrow_mut().clear();
        self.lists.borrow_mut().clear();
        self.statuses.borrow_mut().clear();
    }

    /// What the plugin last applied to the object (the fields it owns), as it sent it; the stored object is
    /// that merged into what other writers set, as the API server merges a server-side apply.
    pub fn last_applied(&self, kind: &Kind, name: &str) -> Option<Value> {
        self.applied
            .borrow()
            .get(&(kind.clone(), name.to_string()))
            .cloned()
    }

    /// Every status the plugin applied since the last [`FakeHost::clear_writes`], in order.
    pub fn applied_statuses(&self) -> Vec<Value> {
        self.statuses.borrow().clone()
    }

    /// Every `list` the plugin made since the last [`FakeHost::clear_writes`], in order: kind and selector.
    pub fn lists(&self) -> Vec<(Kind, String)> {
        self.lists.borrow().clone()
    }

    pub fn events(&self) -> Vec<Event> {
        self.events.borrow().clone()
    }

    pub fn logs(&self) -> Vec<(LogLevel, String)> {
        self.logs.borrow().clone()
    }

    pub fn set_now(&self, now: SystemTime) {
        self.now.set(now);
    }

    pub fn on_ray(
        &self,
        handler: impl FnMut(&RayRequest) -> Result<RayResponse, HostError> + Send + 'static,
    ) {
        *self.ray.borrow_mut() = Some(Box::new(handler));
    }

    fn next(&self, prefix: &str) -> String {
        self.counter.set(self.counter.get() + 1);
        format!("{prefix}-{}", self.counter.get())
    }

    fn owner_reference(&self) -> Value {
        let primary = self.primary.borrow();
        let field = |pointer: &str| {
            primary
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        ownership::owner_reference(
            &self.primary_kind,
            field("/metadata/name"),
            field("/metadata/uid"),
        )
    }

    fn primary_uid(&self) -> String {
        self.primary
            .borrow()
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// Applies `rule` with the host's ownership rules for this reconcile.
    fn rules<T>(&self, rule: impl FnOnce(&Writer<'_>) -> Result<T, String>) -> Result<T, HostError> {
        self.rules_for(None, rule)
    }

    /// The controller `object` names instead of the reconciled object, if the host would accept it: an
    /// object the reconciled object controls (its uid, and the owner reference the host writes for it).
    fn delegate(&self, object: &Value) -> Option<(String, Value)> {
        let primary = self.primary_uid();
        let owner = object
            .pointer("/metadata/ownerReferences")?
            .as_array()?
            .iter()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?;
        let field = |key: &str| owner.get(key).and_then(Value::as_str).unwrap_or_default();
        let uid = field("uid");
        if uid == primary {
            return None;
        }
        let kind = Kind::from_api_version(field("apiVersion"), field("kind"));
        let child = self
            .objects
            .borrow()
            .get(&(kind.clone(), field("name").to_string()))
            .cloned()?;
        let controlled = child.pointer("/metadata/uid").and_then(Value::as_str) == Some(uid)
            && ownership::controlled_by(&child, &primary);
        controlled.then(|| {
            (
                uid.to_string(),
                ownership::owner_reference(&kind, field("name"), uid),
            )
        })
    }

    /// Applies `rule` with the ownership rules of a write controlled by `delegate` (a uid), else by the
    /// reconciled object.
    fn rules_for<T>(
        &self,
        delegate: Option<&str>,
        rule: impl FnOnce(&Writer<'_>) -> Result<T, String>,
    ) -> Result<T, HostError> {
        let uid = delegate.map_or_else(|| self.primary_uid(), str::to_string);
        let writer = Writer {
            uid: &uid,
            reconciles: &self.primary_kind,
            finalizer: self.finalizer.as_deref(),
        };
        rule(&writer).map_err(HostError::Forbidden)
    }

    /// Sets the namespace and the controller owner reference, refusing what the real host refuses.
    fn adopt(&self, object: &Value) -> Result<(Kind, Value), HostError> {
        let kind = Kind::of_object(object)
            .ok_or_else(|| HostError::Invalid("object without apiVersion/kind".into()))?;
        let mut object = object.clone();
        let delegate = self.delegate(&object);
        let owner = delegate
            .as_ref()
            .map_or_else(|| self.owner_reference(), |(_, reference)| reference.clone());
        let meta = object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| HostError::Invalid("object without metadata".into()))?;
        if meta
            .get("namespace")
            .and_then(Value::as_str)
            .is_some_and(|ns| ns != self.namespace)
        {
            return Err(HostError::Forbidden(format!(
                "namespace other than {}",
                self.namespace
            )));
        }
        meta.insert("namespace".into(), json!(self.namespace));
        let delegate = delegate.map(|(uid, _)| uid);
        self.rules_for(delegate.as_deref(), |w| w.take_ownership(&kind, meta, owner))?;
        Ok((kind, object))
    }

    /// An owner reference added to a Secret cert-manager issued (the only write naming another owner that
    /// admission lets through for a Secret), as the host makes it: merged into the stored Secret, which comes
    /// back without its content; `None` if `object` is no such write. A Secret not stored is `NotFound`.
    fn apply_secret_owner(&self, object: &Value) -> Result<Option<Value>, HostError> {
        let (Some(kind), Some(name)) = (
            Kind::of_object(object),
            object.pointer("/metadata/name").and_then(Value::as_str),
        ) else {
            return Ok(None);
        };
        let primary = self.primary_uid();
        let references = object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array);
        let foreign = references.is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("uid").and_then(Value::as_str) != Some(primary.as_str()))
        });
        if !kuberay_admission::is_secret(&kind) || !foreign {
            return Ok(None);
        }
        let key = (kind.clone(), name.to_string());
        let mut objects = self.objects.borrow_mut();
        let stored = objects
            .get_mut(&key)
            .ok_or_else(|| HostError::NotFound(format!("Secret {name} does not exist (yet)")))?;
        let live = stored
            .pointer_mut("/metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| HostError::Invalid(format!("Secret {name} without metadata")))?
            .entry("ownerReferences")
            .or_insert_with(|| json!([]));
        let mut added = false;
        if let Some(live) = live.as_array_mut() {
            for reference in references.into_iter().flatten() {
                if !live.iter().any(|r| r.get("uid") == reference.get("uid")) {
                    live.push(reference.clone());
                    added = true;
                }
            }
        }
        let mut written = stored.clone();
        drop(objects);
        kuberay_admission::conceal(&mut written);
        // Like the host, a reference already there is no write.
        if added {
            self.writes
                .borrow_mut()
                .push(Write::Apply(kind, name.to_string()));
        }
        Ok(Some(written))
    }

    /// A label-only apply to an object controlled by an object the reconciled object controls, as the host
    /// makes it (the labels merged in, no owner reference), or `None` if `object` names no such object.
    fn apply_to_grandchild(&self, object: &Value) -> Result<Option<Value>, HostError> {
        let (Some(kind), Some(name)) = (
            Kind::of_object(object),
            object.pointer("/metadata/name").and_then(Value::as_str),
        ) else {
            return Ok(None);
        };
        let key = (kind, name.to_string());
        let Some(mut current) = self.objects.borrow().get(&key).cloned() else {
            return Ok(None);
        };
        let primary = self.primary_uid();
        let through_owned = ownership::controller_uid(&current).is_some_and(|middle| {
            self.objects.borrow().values().any(|o| {
                o.pointer("/metadata/uid").and_then(Value::as_str) == Some(middle)
                    && ownership::controlled_by(o, &primary)
            })
        });
        let delegated = self
            .delegate(object)
            .is_some_and(|(uid, _)| ownership::controlled_by(&current, &uid));
        if ownership::controlled_by(&current, &primary) || delegated || !through_owned {
            return Ok(None);
        }
        let labels = ownership::label_only(object, &self.namespace, &self.grandchild_labels)
            .map_err(|e| HostError::Forbidden(format!("{} {name}: {e}", key.0)))?;
        if let Some(meta) = current.get_mut("metadata").and_then(Value::as_object_mut) {
            let live = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(live) = live.as_object_mut() {
                live.extend(labels);
            }
        }
        self.objects.borrow_mut().insert(key.clone(), current.clone());
        self.writes.borrow_mut().push(Write::Apply(key.0, key.1));
        Ok(Some(current))
    }

    /// Removes what the deleted object `uid` controlled, and what that controlled, as Kubernetes' garbage
    /// collector does (a delete's default propagation).
    fn collect_garbage(&self, uid: &str) {
        let dependents: Vec<((Kind, String), String)> = self
            .objects
            .borrow()
            .iter()
            .filter(|(_, o)| ownership::controlled_by(o, uid))
            .map(|(key, o)| {
                let uid = o
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                (key.clone(), uid.to_string())
            })
            .collect();
        for (key, dependent) in dependents {
            self.objects.borrow_mut().remove(&key);
            self.collect_garbage(&dependent);
        }
    }

    fn set_finalizers(&self, f: impl FnOnce(&mut Vec<Value>)) {
        let mut primary = self.primary.borrow_mut();
        let mut finalizers: Vec<Value> = primary
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        f(&mut finalizers);
        if let Some(meta) = primary.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("finalizers".into(), json!(finalizers));
        }
    }
}

/// A server-side apply by one field manager, as the API server merges it into the live object: the fields the
/// manager applied last time (`previous`) and leaves out now are removed, then the applied fields are laid over
/// the live object (objects merged key by key, lists and values replaced); fields other writers set stay.
fn server_side_apply(live: &Value, previous: Option<&Value>, applied: &Value) -> Value {
    fn prune(live: &mut Value, previous: &Value, applied: &Value) {
        let (Some(live), Some(previous)) = (live.as_object_mut(), previous.as_object()) else {
            return;
        };
        for (key, before) in previous {
            match applied.get(key) {
                None => {
                    live.remove(key);
                }
                Some(now) => {
                    if let Some(field) = live.get_mut(key) {
                        prune(field, before, now);
                    }
                }
            }
        }
    }
    fn merge(live: &mut Value, applied: &Value) {
        match (live.as_object_mut(), applied.as_object()) {
            (Some(live), Some(applied)) => {
                for (key, value) in applied {
                    match live.get_mut(key) {
                        Some(field) => merge(field, value),
                        None => {
                            live.insert(key.clone(), value.clone());
                        }
                    }
                }
            }
            _ => *live = applied.clone(),
        }
    }
    let mut merged = live.clone();
    if let Some(previous) = previous {
        prune(&mut merged, previous, applied);
    }
    merge(&mut merged, applied);
    merged
}

impl Host for FakeHost {
    fn get(&self, kind: &Kind, name: &str) -> Result<Option<Value>, HostError> {
        self.granted("get", Verb::Get, kind)?;
        if let Some(judge) = &self.judge {
            let size = ("name", name.len(), MAX_NAME_BYTES);
            judge.spend(Cost::Read, &[kind_input(kind), size])?;
            judge.granted(Verb::Get, kind)?;
            return judge::run(self.admission(judge)?.get(kind, name));
        }
        self.served(kind)?;
        if *kind == self.primary_kind
            && self
                .primary
                .borrow()
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                == Some(name)
        {
            return Ok(Some(self.primary()));
        }
        Ok(self
            .objects
            .borrow()
            .get(&(kind.clone(), name.to_string()))
            .cloned())
    }

    fn list(&self, kind: &Kind, label_selector: &str) -> Result<Vec<Value>, HostError> {
        self.lists
            .borrow_mut()
            .push((kind.clone(), label_selector.to_string()));
        self.granted("list", Verb::List, kind)?;
        if let Some(judge) = &self.judge {
            let selector = ("label selector", label_selector.len(), MAX_SELECTOR_BYTES);
            judge.spend(Cost::Read, &[kind_input(kind), selector])?;
            judge.granted(Verb::List, kind)?;
            let items = judge::run(self.admission(judge)?.list(kind, label_selector))?;
            judge.list_items(items.len())?;
            return Ok(items);
        }
        self.served(kind)?;
        let selector = Selector::parse(label_selector).map_err(|e| HostError::Invalid(e.to_string()))?;
        Ok(self
            .objects(kind)
            .into_iter()
            .filter(|o| selector.matches_object(o))
            .collect())
    }

    fn create(&self, object: &Value) -> Result<Value, HostError> {
        if let Some(kind) = Kind::of_object(object) {
            self.granted("create", Verb::Create, &kind)?;
            self.judge_write(Verb::Create, &kind, &[], Some(("object", object)), || {
                Intent::Create {
                    kind: kind.clone(),
                    object: object.clone(),
                }
            })?;
        }
        let (kind, mut object) = self.adopt(object)?;
        self.served(&kind)?;
        self.admitted(&kind)?;
        let name = match object.pointer("/metadata/name").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => {
                let prefix = object
                    .pointer("/metadata/generateName")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        HostError::Invalid("object needs metadata.name or metadata.generateName".into())
                    })?;
                format!("{prefix}{}", self.next("x").trim_start_matches("x-"))
            }
        };
        if self.objects.borrow().contains_key(&(kind.clone(), name.clone())) {
            return Err(HostError::Conflict(format!("{kind} {name} already exists")));
        }
        let uid = self.next("uid");
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("name".into(), json!(name));
            meta.insert("uid".into(), json!(uid));
        }
        self.objects
            .borrow_mut()
            .insert((kind.clone(), name.clone()), object.clone());
        self.writes.borrow_mut().push(Write::Create(kind, name));
        Ok(object)
    }

    fn apply(&self, object: &Value) -> Result<Value, HostError> {
        if let Some(kind) = Kind::of_object(object) {
            self.granted("apply", Verb::Apply, &kind)?;
            self.served(&kind)?;
            self.judge_write(Verb::Apply, &kind, &[], Some(("object", object)), || {
                Intent::Apply {
                    kind: kind.clone(),
                    object: object.clone(),
                }
            })?;
        }
        if let Some(applied) = self.apply_secret_owner(object)? {
            return Ok(applied);
        }
        if let Some(applied) = self.apply_to_grandchild(object)? {
            return Ok(applied);
        }
        let (kind, object) = self.adopt(object)?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| HostError::Invalid("apply needs metadata.name".into()))?
            .to_string();
        let key = (kind.clone(), name.clone());
        let current = self.objects.borrow().get(&key).cloned();
        let delegate = self.delegate(&object).map(|(uid, _)| uid);
        self.rules_for(delegate.as_deref(), |w| {
            w.check_adoption(current.as_ref())
                .map_err(|e| format!("{kind} {name}: {e}"))
        })?;
        self.admitted(&kind)?;
        let previous = self.applied.borrow_mut().insert(key.clone(), object.clone());
        let uid = current.as_ref().and_then(|o| o.pointer("/metadata/uid").cloned());
        let uid = uid.unwrap_or_else(|| json!(self.next("uid")));
        let mut object = match &current {
            Some(live) => server_side_apply(live, previous.as_ref(), &object),
            None => object,
        };
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("uid".into(), uid);
        }
        self.objects.borrow_mut().insert(key, object.clone());
        self.writes.borrow_mut().push(Write::Apply(kind, name));
        Ok(object)
    }

    fn apply_status(&self, status: &Value) -> Result<(), HostError> {
        self.granted("apply-status", Verb::ApplyStatus, &self.primary_kind)?;
        self.judge_write(
            Verb::ApplyStatus,
            &self.primary_kind,
            &[],
            Some(("status", status)),
            || Intent::Status {
                status: status.clone(),
            },
        )?;
        if let Some(map) = self.primary.borrow_mut().as_object_mut() {
            map.insert("status".into(), status.clone());
        }
        self.writes.borrow_mut().push(Write::ApplyStatus);
        self.statuses.borrow_mut().push(status.clone());
        Ok(())
    }

    fn delete(&self, kind: &Kind, name: &str, uid: Option<&str>) -> Result<(), HostError> {
        self.granted("delete", Verb::Delete, kind)?;
        let inputs = [
            kind_input(kind),
            ("name", name.len(), MAX_NAME_BYTES),
            ("uid", uid.map_or(0, str::len), MAX_NAME_BYTES),
        ];
        self.judge_write(Verb::Delete, kind, &inputs, None, || Intent::Delete {
            kind: kind.clone(),
            name: name.to_string(),
            uid: uid.map(str::to_string),
        })?;
        let is_primary = *kind == self.primary_kind
            && self
                .primary
                .borrow()
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                == Some(name);
        if is_primary {
            // Deleting the reconciled object starts its deletion, as the API server would.
            let seconds = self
                .now
                .get()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let now = i64::try_from(seconds)
                .ok()
                .and_then(|s| k8s_openapi::jiff::Timestamp::from_second(s).ok())
                .map(|t| t.to_string())
                .unwrap_or_default();
            if let Some(meta) = self
                .primary
                .borrow_mut()
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
            {
                meta.entry("deletionTimestamp").or_insert(json!(now));
            }
            self.writes
                .borrow_mut()
                .push(Write::Delete(kind.clone(), name.to_string()));
            return Ok(());
        }
        let key = (kind.clone(), name.to_string());
        let Some(object) = self.objects.borrow().get(&key).cloned() else {
            return Ok(());
        };
        // What the reconciled object controls, directly or through an object it controls, as the host allows.
        let through_child = ownership::controller_uid(&object).is_some_and(|middle| {
            let primary = self.primary_uid();
            self.objects.borrow().values().any(|o| {
                o.pointer("/metadata/uid").and_then(Value::as_str) == Some(middle)
                    && ownership::controlled_by(o, &primary)
            })
        });
        if !through_child {
            self.rules(|w| w.check_delete(&object).map_err(|e| format!("{kind} {name}: {e}")))?;
        }
        // Another incarnation of the name: the host leaves it alone and reports success.
        if uid.is_some_and(|u| object.pointer("/metadata/uid").and_then(Value::as_str) != Some(u)) {
            return Ok(());
        }
        self.objects.borrow_mut().remove(&key);
        if let Some(uid) = object.pointer("/metadata/uid").and_then(Value::as_str) {
            self.collect_garbage(uid);
        }
        self.writes
            .borrow_mut()
            .push(Write::Delete(kind.clone(), name.to_string()));
        Ok(())
    }

    fn add_finalizer(&self, finalizer: &str) -> Result<(), HostError> {
        self.granted("add-finalizer", Verb::Finalize, &self.primary_kind)?;
        self.judge_finalizer(finalizer, true)?;
        self.rules(|w| w.check_finalizer(finalizer))?;
        self.set_finalizers(|f| {
            if !f.iter().any(|x| x == finalizer) {
                f.push(json!(finalizer));
            }
        });
        self.writes
            .borrow_mut()
            .push(Write::AddFinalizer(finalizer.to_string()));
        Ok(())
    }

    fn remove_finalizer(&self, finalizer: &str) -> Result<(), HostError> {
        self.granted("remove-finalizer", Verb::Finalize, &self.primary_kind)?;
        self.judge_finalizer(finalizer, false)?;
        self.rules(|w| w.check_finalizer(finalizer))?;
        self.set_finalizers(|f| f.retain(|x| x != finalizer));
        self.writes
            .borrow_mut()
            .push(Write::RemoveFinalizer(finalizer.to_string()));
        Ok(())
    }

    fn record_event(&self, event: &Event) -> Result<(), HostError> {
        self.granted("record-event", Verb::RecordEvent, &self.primary_kind)?;
        if let Some(judge) = &self.judge {
            let related = event.related.as_ref().map(|(kind, name)| (kind, name.as_str()));
            let inputs = event_inputs(&event.note, &event.reason, &event.action, related);
            judge.spend(Cost::Event, &inputs)?;
            judge.granted(Verb::RecordEvent, &self.primary_kind)?;
        }
        self.events.borrow_mut().push(event.clone());
        Ok(())
    }

    fn log(&self, level: LogLevel, message: &str, _fields: &[(&str, &str)]) {
        self.logs.borrow_mut().push((level, message.to_string()));
    }

    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        if let Some(judge) = &self.judge {
            let inputs = ray_inputs(
                &request.cluster,
                &request.method,
                &request.path,
                request.body.len(),
                &request.headers,
            );
            judge.spend(Cost::Read, &inputs)?;
            judge.ray_heads()?;
        }
        match self.ray.borrow_mut().as_mut() {
            Some(handler) => handler(request),
            None => Err(HostError::Unavailable("no Ray head in this test".into())),
        }
    }

    fn now(&self) -> SystemTime {
        self.now.get()
    }

    fn config(&self) -> serde_json::Map<String, Value> {
        self.config.clone()
    }
}

#[cfg(test)]
mod tests;
