//! One plugin call: a fresh Store with its limits, the grant checked on every host call, and the outcome
//! classified so the operator can report a plugin that loops, traps or runs out of memory.
//! The WIT types a plugin passes are converted to and from the host API's in `wit.rs`.

use std::{sync::Arc, time::Duration};

use kuberay_plugin_sdk::{HostError, Kind, Verb};
use serde_json::Value;
use wasmtime::{Engine, Store, component::ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::{
    bindings::{ReconcilePluginPre, wit_config, wit_k8s, wit_log, wit_ray, wit_reconciler, wit_types},
    budget::{self, CallBudget, Cost, Exceeded, TokenBucket, Usage},
    host_api::HostApi,
    limits::StoreLimits,
    log_guard::{self, LogRate},
    stdio::LogStream,
    wit,
};
use crate::{
    metrics::Metrics,
    policy::{Grant, file::verb_name},
};

/// Limits of one call.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// Wall time for the whole call, host calls included.
    pub timeout: Duration,
    /// Linear memory the guest may grow to, across all its memories.
    pub memory_bytes: usize,
    /// The operator's default budget: a plugin's policy entry overrides it (`budget:`), and the plugin's
    /// grant carries the result, which its calls are held to.
    pub budget: CallBudget,
}

/// Who is calling: the plugin and the object its calls are scoped to.
#[derive(Clone)]
pub struct CallContext {
    /// The policy entry's name (administrator-chosen; the plugin's identity in logs and metrics).
    pub(crate) plugin: Arc<str>,
    pub(crate) primary_kind: Kind,
    /// The grant; its entry name is `plugin`.
    pub(crate) grant: Arc<Grant>,
    /// `namespace/name` of the object, for logs.
    pub(crate) object: String,
    pub(crate) host: Arc<dyn HostApi>,
    pub(crate) metrics: Metrics,
    /// The plugin's log rate limit, shared by all its calls.
    pub(crate) log_rate: Arc<LogRate>,
    /// The plugin's written bytes across calls (its grant's `budget.rates`), shared by all its calls.
    pub(crate) write_rate: Arc<TokenBucket>,
    /// Its configuration (a JSON object), the same for every call of one loaded version.
    pub(crate) config: Arc<str>,
}

/// The data of a Store: WASI with nothing in it, the limits, and the call's context.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: StoreLimits,
    usage: Usage,
    ctx: CallContext,
    stdout: LogStream,
    stderr: LogStream,
    /// Whether a refused write of this call was reported about the object (`HostApi::refused`).
    refusal_reported: std::cell::Cell<bool>,
}

impl CallState {
    pub(crate) fn new(ctx: CallContext, limits: &CallLimits) -> Self {
        let stdout = LogStream::new("stdout", &ctx);
        let stderr = LogStream::new("stderr", &ctx);
        // No files, environment, arguments, sockets or name lookups: the builder starts empty and the
        // network is switched off explicitly.
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: StoreLimits::new(limits.memory_bytes),
            usage: Usage::new(ctx.grant.budget),
            ctx,
            stdout,
            stderr,
            refusal_reported: std::cell::Cell::new(false),
        }
    }

    /// A refusal unless the grant allows `verb` on `kind`.
    fn check(&self, kind: &Kind, verb: Verb) -> Result<(), HostError> {
        check_grant(&self.ctx.grant, &self.ctx.plugin, kind, verb)
    }

    /// Turns a breach of a limit into the error the plugin gets; the first one is logged and counted.
    fn exceeded(&mut self, result: Result<(), Exceeded>) -> Result<(), wit_types::HostError> {
        let Err(breach) = result else { return Ok(()) };
        if !self.usage.reported {
            self.usage.reported = true;
            tracing::warn!(
                plugin = %self.ctx.plugin, object = %self.ctx.object, limit = breach.limit,
                "{}", breach.message
            );
            self.ctx.metrics.limit_exceeded(&self.ctx.plugin, breach.limit);
        }
        Err(wit_types::HostError::Invalid(breach.message))
    }

    /// Charges one host call of `cost`.
    fn spend(&mut self, cost: Cost) -> Result<(), wit_types::HostError> {
        let charged = self.usage.charge(cost);
        self.exceeded(charged)
    }

    /// Charges the bytes of an object or status to write, per call and across calls.
    fn written(&mut self, text: &str) -> Result<(), wit_types::HostError> {
        let charged = self.usage.write_bytes(text.len(), &self.ctx.write_rate);
        self.exceeded(charged)
    }

    /// Checks the size of a string the plugin passed.
    fn input(&mut self, what: &'static str, text: &str, max: usize) -> Result<(), wit_types::HostError> {
        let checked = self.usage.input(what, text.len(), max);
        self.exceeded(checked)
    }

    /// Checks the parts of a kind the plugin passed.
    fn kind_input(&mut self, kind: &wit_types::Kind) -> Result<(), wit_types::HostError> {
        let len = kind.group.len().max(kind.version.len()).max(kind.kind.len());
        let checked = self.usage.input("kind", len, budget::MAX_NAME_BYTES);
        self.exceeded(checked)
    }

    /// Ends a host call: counts it, and for a refusal (`Forbidden`, decided by the grant check or by the
    /// host API's rules) logs and counts the refusal. The only place either happens. Labels are bounded:
    /// the policy entry's name, a verb of this file, and `kind` only if the policy names it.
    fn finish<T>(
        &self,
        verb: &'static str,
        kind: &Kind,
        result: Result<T, HostError>,
    ) -> Result<T, wit_types::HostError> {
        match result {
            Ok(value) => {
                self.ctx.metrics.host_call(&self.ctx.plugin, verb, "ok");
                Ok(value)
            }
            Err(HostError::Forbidden(message)) => {
                let kind_label = self.ctx.grant.kind_label(kind);
                tracing::warn!(
                    plugin = %self.ctx.plugin, object = %self.ctx.object, verb, kind = %kind_label,
                    reason = ?message, "refused"
                );
                self.ctx.metrics.refused(&self.ctx.plugin, verb, &kind_label);
                if WRITES.contains(&verb) && !self.refusal_reported.replace(true) {
                    self.ctx.host.refused(verb, kind, &message);
                }
                Err(wit_types::HostError::Forbidden(message))
            }
            Err(e) => {
                self.ctx.metrics.host_call(&self.ctx.plugin, verb, "error");
                Err(wit::error(e))
            }
        }
    }
}

/// The grant check of every host call on a kind: a refusal unless `grant` (of the plugin `plugin`) allows
/// `verb` on `kind`.
pub(crate) fn check_grant(grant: &Grant, plugin: &str, kind: &Kind, verb: Verb) -> Result<(), HostError> {
    if grant.allows(kind, verb) {
        return Ok(());
    }
    Err(HostError::Forbidden(format!(
        "plugin {plugin} is not granted {} on {kind}",
        verb_name(verb)
    )))
}

/// The host calls that write: the first refusal of one in a call is reported about the object too.
const WRITES: [&str; 6] = [
    "create",
    "apply",
    "apply-status",
    "delete",
    "add-finalizer",
    "remove-finalizer",
];

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Runs `call` unless the grant check refused it.
async fn checked<T>(
    check: Result<(), HostError>,
    call: impl Future<Output = Result<T, HostError>>,
) -> Result<T, HostError> {
    check?;
    call.await
}

impl wit_types::Host for CallState {}

impl wit_k8s::Host for CallState {
    async fn get(
        &mut self,
        kind: wit_types::Kind,
        name: String,
    ) -> Result<Option<String>, wit_types::HostError> {
        self.spend(Cost::Read)?;
        self.kind_input(&kind)?;
        self.input("name", &name, budget::MAX_NAME_BYTES)?;
        let kind = wit::kind(kind);
        let call = self.ctx.host.get(kind.clone(), name);
        let result = checked(self.check(&kind, Verb::Get), call).await;
        self.finish("get", &kind, result.map(|o| o.map(|v| v.to_string())))
    }

    async fn list(
        &mut self,
        kind: wit_types::Kind,
        label_selector: String,
    ) -> Result<Vec<String>, wit_types::HostError> {
        self.spend(Cost::Read)?;
        self.kind_input(&kind)?;
        self.input("label selector", &label_selector, budget::MAX_SELECTOR_BYTES)?;
        let kind = wit::kind(kind);
        let call = self.ctx.host.list(kind.clone(), label_selector);
        let result = checked(self.check(&kind, Verb::List), call).await;
        if let Ok(items) = &result {
            let checked = self.usage.list(items.len());
            self.exceeded(checked)?;
        }
        let result = result.map(|items| items.iter().map(Value::to_string).collect());
        self.finish("list", &kind, result)
    }

    async fn create(&mut self, object: String) -> Result<String, wit_types::HostError> {
        self.spend(Cost::Write)?;
        self.input("object", &object, budget::MAX_OBJECT_BYTES)?;
        self.written(&object)?;
        let (kind, value) = wit::parse_object(&object)?;
        let call = self.ctx.host.create(kind.clone(), value);
        let result = checked(self.check(&kind, Verb::Create), call).await;
        self.finish("create", &kind, result.map(|v| v.to_string()))
    }

    async fn apply(&mut self, object: String) -> Result<String, wit_types::HostError> {
        self.spend(Cost::Write)?;
        self.input("object", &object, budget::MAX_OBJECT_BYTES)?;
        self.written(&object)?;
        let (kind, value) = wit::parse_object(&object)?;
        let call = self.ctx.host.apply(kind.clone(), value);
        let result = checked(self.check(&kind, Verb::Apply), call).await;
        self.finish("apply", &kind, result.map(|v| v.to_string()))
    }

    async fn apply_status(&mut self, status: String) -> Result<(), wit_types::HostError> {
        self.spend(Cost::Write)?;
        self.input("status", &status, budget::MAX_OBJECT_BYTES)?;
        self.written(&status)?;
        let kind = self.ctx.primary_kind.clone();
        let value = wit::parse_status(&status)?;
        let call = self.ctx.host.apply_status(value);
        let result = checked(self.check(&kind, Verb::ApplyStatus), call).await;
        self.finish("apply-status", &kind, result)
    }

    async fn delete(
        &mut self,
        kind: wit_types::Kind,
        name: String,
        uid: Option<String>,
    ) -> Result<(), wit_types::HostError> {
        self.spend(Cost::Write)?;
        self.kind_input(&kind)?;
        self.input("name", &name, budget::MAX_NAME_BYTES)?;
        self.input("uid", uid.as_deref().unwrap_or_default(), budget::MAX_NAME_BYTES)?;
        let kind = wit::kind(kind);
        let call = self.ctx.host.delete(kind.clone(), name, uid);
        let result = checked(self.check(&kind, Verb::Delete), call).await;
        self.finish("delete", &kind, result)
    }

    async fn add_finalizer(&mut self, finalizer: String) -> Result<(), wit_types::HostError> {
        self.spend(Cost::Write)?;
        self.input("finalizer", &finalizer, budget::MAX_NAME_BYTES)?;
        let kind = self.ctx.primary_kind.clone();
        let call = self.ctx.host.add_finalizer(finalizer);
        let result = checked(self.check(&kind, Verb::Finalize), call).await;
        self.finish("add-finalizer", &kind, result)
    }

    async fn remove_finalizer(&mut self, finalizer: String) -> Result<(), wit_types::HostError> {
        self.spend(Cost::Write)?;
        self.input("finalizer", &finalizer, budget::MAX_NAME_BYTES)?;
        let kind = self.ctx.primary_kind.clone();
        let call = self.ctx.host.remove_finalizer(finalizer);
        let result = checked(self.check(&kind, Verb::Finalize), call).await;
        self.finish("remove-finalizer", &kind, result)
    }

    async fn record_event(&mut self, event: wit_k8s::Event) -> Result<(), wit_types::HostError> {
        self.spend(Cost::Event)?;
        self.input("event note", &event.note, budget::MAX_EVENT_NOTE_BYTES)?;
        self.input("event reason", &event.reason, budget::MAX_EVENT_REASON_BYTES)?;
        self.input("event action", &event.action, budget::MAX_EVENT_REASON_BYTES)?;
        if let Some((kind, name)) = &event.related {
            self.kind_input(kind)?;
            self.input("related name", name, budget::MAX_NAME_BYTES)?;
        }
        let kind = self.ctx.primary_kind.clone();
        let call = self.ctx.host.record_event(wit::event(event));
        let result = checked(self.check(&kind, Verb::RecordEvent), call).await;
        self.finish("record-event", &kind, result)
    }
}

impl wit_config::Host for CallState {
    async fn get(&mut self) -> String {
        self.ctx.config.to_string()
    }
}

impl wit_log::Host for CallState {
    async fn log(&mut self, level: wit_log::Level, message: String, fields: Vec<(String, String)>) {
        if !log_guard::admit(&self.ctx.log_rate, &self.ctx.plugin, &self.ctx.metrics) {
            return;
        }
        let message = log_guard::escape(&message, log_guard::MAX_LOG_TEXT);
        let fields = log_guard::escape_fields(&fields);
        self.ctx.host.log(wit::log_level(level), &message, &fields);
    }
}

impl wit_ray::Host for CallState {
    async fn send(&mut self, request: wit_ray::Request) -> Result<wit_ray::Response, wit_types::HostError> {
        self.spend(Cost::Read)?;
        self.ray_input(&request)?;
        let clusters = Kind::new("ray.io", "v1", "RayCluster");
        if !self.ctx.grant.ray_heads {
            let message = format!(
                "plugin {} was not granted the Ray head interface",
                self.ctx.plugin
            );
            return self.finish("ray-send", &clusters, Err(HostError::Forbidden(message)));
        }
        let request = wit::ray_request(request);
        let result = self.ctx.host.ray(request).await;
        self.finish("ray-send", &clusters, result).map(wit::ray_response)
    }
}

impl CallState {
    /// Checks the sizes of a Ray request's parts.
    fn ray_input(&mut self, request: &wit_ray::Request) -> Result<(), wit_types::HostError> {
        self.input("cluster name", &request.cluster, budget::MAX_NAME_BYTES)?;
        self.input("method", &request.method, 16)?;
        self.input("path", &request.path, budget::MAX_RAY_PATH_BYTES)?;
        let body = request.body.len();
        let checked = self.usage.input("request body", body, budget::MAX_RAY_BODY_BYTES);
        self.exceeded(checked)?;
        let headers = request.headers.len();
        let checked = self.usage.input("header count", headers, budget::MAX_RAY_HEADERS);
        self.exceeded(checked)?;
        let header_bytes = request.headers.iter().map(|(k, v)| k.len() + v.len()).sum();
        let checked = self
            .usage
            .input("headers", header_bytes, budget::MAX_RAY_HEADER_BYTES);
        self.exceeded(checked)
    }
}

/// Which export to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// `reconcile`: bring the world in line with the object.
    Reconcile,
    /// `cleanup`: the object is being deleted and carries the plugin's finalizer.
    Cleanup,
}

impl Export {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Reconcile => "reconcile",
            Self::Cleanup => "cleanup",
        }
    }
}

/// Why a call did not return an outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallFailure {
    #[error("the plugin did not finish within {0:?}")]
    TimedOut(Duration),
    #[error("the plugin exceeded its memory limit (asked for {0} bytes)")]
    MemoryExceeded(usize),
    #[error("the plugin trapped: {0}")]
    Trapped(String),
    #[error("the plugin reported an invalid object: {0}")]
    InvalidObject(String),
    #[error("the plugin reported an error: {0}")]
    Failed(String),
    #[error("the plugin was stopped: {0}")]
    LimitExceeded(String),
}

impl CallFailure {
    /// A short UpperCamelCase reason for events, conditions and metrics.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Self::TimedOut(_) => "PluginTimedOut",
            Self::MemoryExceeded(_) => "PluginMemoryExceeded",
            Self::Trapped(_) => "PluginTrapped",
            Self::InvalidObject(_) => "InvalidObject",
            Self::Failed(_) => "ReconcileFailed",
            Self::LimitExceeded(_) => "PluginLimitExceeded",
        }
    }
}

/// A trap as a short reason (the wasm backtrace goes to the debug log, not into events).
fn classify_trap(store: &Store<CallState>, trap: &wasmtime::Error) -> CallFailure {
    if let Some(asked) = store.data().limiter.exceeded {
        return CallFailure::MemoryExceeded(asked);
    }
    if let Some(breach) = &store.data().usage.exceeded {
        return CallFailure::LimitExceeded(breach.message.clone());
    }
    // The backtrace names the plugin's functions as its name section spells them: escaped like its logs.
    let trace = log_guard::escape(&format!("{trap:?}"), 4 * log_guard::MAX_LOG_TEXT);
    tracing::debug!(plugin = %store.data().ctx.plugin, object = %store.data().ctx.object, "trap: {trace}");
    let cause = trap.root_cause().to_string();
    // What the plugin said last (a panic's message) says more than the trap.
    match store.data().stderr.last_line() {
        Some(said) => CallFailure::Trapped(format!("{cause}; its last line on stderr: {said}")),
        None => CallFailure::Trapped(cause),
    }
}

/// A Store with the call's limits. The guest yields at every epoch tick, and is stopped at the first tick
/// after it went past a limit of its budget (the host calls it makes meanwhile are refused).
fn new_store(engine: &Engine, state: CallState) -> Store<CallState> {
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|ctx| {
        if let Some(breach) = &ctx.data().usage.exceeded {
            return Err(wasmtime::Error::msg(breach.message.clone()));
        }
        Ok(wasmtime::UpdateDeadline::Yield(1))
    });
    store
}

/// Instantiates the plugin in a fresh Store and calls `reconcile` or `cleanup`.
pub(crate) async fn call(
    engine: &Engine,
    pre: &ReconcilePluginPre<CallState>,
    state: CallState,
    export: Export,
    request: &wit_reconciler::Request,
    limits: CallLimits,
) -> Result<Option<Duration>, CallFailure> {
    let (stdout, stderr) = (state.stdout.clone(), state.stderr.clone());
    let mut store = new_store(engine, state);
    let outcome = {
        let run = async {
            let instance = pre.instantiate_async(&mut store).await?;
            let reconciler = instance.kuberay_plugin_reconciler();
            match export {
                Export::Reconcile => reconciler.call_reconcile(&mut store, request).await,
                Export::Cleanup => reconciler.call_cleanup(&mut store, request).await,
            }
        };
        tokio::time::timeout(limits.timeout, run).await
    };
    stdout.flush();
    stderr.flush();
    // A plugin that went past a limit fails as such, whatever it made of the errors it got.
    if let Some(breach) = &store.data().usage.exceeded {
        return Err(CallFailure::LimitExceeded(breach.message.clone()));
    }
    match outcome {
        Err(_) => Err(CallFailure::TimedOut(limits.timeout)),
        Ok(Err(trap)) => Err(classify_trap(&store, &trap)),
        Ok(Ok(Err(wit_reconciler::ReconcileError::InvalidObject(m)))) => Err(CallFailure::InvalidObject(m)),
        Ok(Ok(Err(wit_reconciler::ReconcileError::Transient(m)))) => Err(CallFailure::Failed(m)),
        Ok(Ok(Ok(outcome))) => Ok(outcome.requeue_after_ms.map(Duration::from_millis)),
    }
}

/// Calls `metadata` in a throw-away Store (at load time, with no host access).
pub(crate) async fn metadata(
    engine: &Engine,
    pre: &ReconcilePluginPre<CallState>,
    state: CallState,
    limits: CallLimits,
) -> Result<wit_reconciler::PluginMetadata, CallFailure> {
    let mut store = new_store(engine, state);
    let outcome = {
        let run = async {
            let instance = pre.instantiate_async(&mut store).await?;
            instance
                .kuberay_plugin_reconciler()
                .call_metadata(&mut store)
                .await
        };
        tokio::time::timeout(limits.timeout, run).await
    };
    match outcome {
        Err(_) => Err(CallFailure::TimedOut(limits.timeout)),
        Ok(Err(trap)) => Err(classify_trap(&store, &trap)),
        Ok(Ok(metadata)) => Ok(metadata),
    }
}
