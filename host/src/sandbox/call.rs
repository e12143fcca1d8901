//! One plugin call: a fresh Store with its limits, every host call passed through the call's [`Gate`] (sizes,
//! budget, grant), and the outcome classified so the operator can report a plugin that loops, traps or runs
//! out of memory. The WIT types a plugin passes are converted to and from the host API's in `wit.rs`.

use std::time::Duration;

use serde_json::Value;
use wasmtime::{Engine, Store, component::ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::{
    bindings::{ReconcilePluginPre, wit_config, wit_k8s, wit_log, wit_ray, wit_reconciler, wit_types},
    budget::CallBudget,
    gate::{CallContext, Gate},
    limits::StoreLimits,
    log_guard,
    stdio::LogStream,
    wit,
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

/// The data of a Store: WASI with nothing in it, the limits, and the checks of the call's host calls.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: StoreLimits,
    gate: Gate,
    stdout: LogStream,
    stderr: LogStream,
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
            gate: Gate::new(ctx),
            stdout,
            stderr,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wit_types::Host for CallState {}

impl wit_k8s::Host for CallState {
    async fn get(
        &mut self,
        kind: wit_types::Kind,
        name: String,
    ) -> Result<Option<String>, wit_types::HostError> {
        let found = self.gate.get(wit::kind(kind), name).await.map_err(wit::error)?;
        Ok(found.map(|v| v.to_string()))
    }

    async fn list(
        &mut self,
        kind: wit_types::Kind,
        label_selector: String,
    ) -> Result<Vec<String>, wit_types::HostError> {
        let items = self
            .gate
            .list(wit::kind(kind), label_selector)
            .await
            .map_err(wit::error)?;
        Ok(items.iter().map(Value::to_string).collect())
    }

    async fn create(&mut self, object: String) -> Result<String, wit_types::HostError> {
        let created = self.gate.create(&object).await.map_err(wit::error)?;
        Ok(created.to_string())
    }

    async fn apply(&mut self, object: String) -> Result<String, wit_types::HostError> {
        let applied = self.gate.apply(&object).await.map_err(wit::error)?;
        Ok(applied.to_string())
    }

    async fn apply_status(&mut self, status: String) -> Result<(), wit_types::HostError> {
        self.gate.apply_status(&status).await.map_err(wit::error)
    }

    async fn delete(
        &mut self,
        kind: wit_types::Kind,
        name: String,
        uid: Option<String>,
    ) -> Result<(), wit_types::HostError> {
        self.gate
            .delete(wit::kind(kind), name, uid)
            .await
            .map_err(wit::error)
    }

    async fn add_finalizer(&mut self, finalizer: String) -> Result<(), wit_types::HostError> {
        self.gate.finalizer(finalizer, true).await.map_err(wit::error)
    }

    async fn remove_finalizer(&mut self, finalizer: String) -> Result<(), wit_types::HostError> {
        self.gate.finalizer(finalizer, false).await.map_err(wit::error)
    }

    async fn record_event(&mut self, event: wit_k8s::Event) -> Result<(), wit_types::HostError> {
        self.gate
            .record_event(wit::event(event))
            .await
            .map_err(wit::error)
    }
}

impl wit_config::Host for CallState {
    async fn get(&mut self) -> String {
        self.gate.ctx().config.to_string()
    }
}

impl wit_log::Host for CallState {
    async fn log(&mut self, level: wit_log::Level, message: String, fields: Vec<(String, String)>) {
        self.gate.log(wit::log_level(level), &message, &fields);
    }
}

impl wit_ray::Host for CallState {
    async fn send(&mut self, request: wit_ray::Request) -> Result<wit_ray::Response, wit_types::HostError> {
        let response = self
            .gate
            .ray(wit::ray_request(request))
            .await
            .map_err(wit::error)?;
        Ok(wit::ray_response(response))
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
    if let Some(breach) = store.data().gate.exceeded() {
        return CallFailure::LimitExceeded(breach.message.clone());
    }
    // The backtrace names the plugin's functions as its name section spells them: escaped like its logs.
    let trace = log_guard::escape(&format!("{trap:?}"), 4 * log_guard::MAX_LOG_TEXT);
    let ctx = store.data().gate.ctx();
    tracing::debug!(plugin = %ctx.plugin, object = %ctx.object, "trap: {trace}");
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
        if let Some(breach) = ctx.data().gate.exceeded() {
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
    if let Some(breach) = store.data().gate.exceeded() {
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
