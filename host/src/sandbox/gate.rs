//! The checks every host call of a plugin passes, whoever the caller is: the sizes of what it passes, its
//! call budget and written bytes, its grant, then the host API (whose admission judges writes), with each
//! call counted and each refusal logged, counted and reported once. The WebAssembly sandbox (`call.rs`)
//! calls it after converting the WIT types; the in-memory test host (`authoring::CheckedHost`) calls it
//! with a plugin compiled natively, so a test that passes there is judged as the operator judges.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use kuberay_plugin_sdk::{Event, HostError, Kind, LogLevel, RayRequest, RayResponse, Verb};
use serde_json::Value;

use super::{
    budget::{self, Cost, Exceeded, TokenBucket, Usage},
    log_guard::{self, LogRate},
};
use crate::{
    host_api::HostApi,
    metrics::Metrics,
    policy::{Grant, check_grant},
};

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

/// The host calls that write: the first refusal of one in a call is reported about the object too.
const WRITES: [&str; 6] = [
    "create",
    "apply",
    "apply-status",
    "delete",
    "add-finalizer",
    "remove-finalizer",
];

/// The checks of one plugin call (one reconcile).
pub(crate) struct Gate {
    usage: Usage,
    ctx: CallContext,
    /// Whether a refused write of this call was reported about the object (`HostApi::refused`).
    refusal_reported: AtomicBool,
}

impl Gate {
    pub(crate) fn new(ctx: CallContext) -> Self {
        Self {
            usage: Usage::new(ctx.grant.budget),
            ctx,
            refusal_reported: AtomicBool::new(false),
        }
    }

    pub(crate) fn ctx(&self) -> &CallContext {
        &self.ctx
    }

    /// The first breach of the call's budget, if any.
    pub(crate) fn exceeded(&self) -> Option<&Exceeded> {
        self.usage.exceeded.as_ref()
    }

    /// Turns a breach of a limit into the error the plugin gets; the first one is logged and counted.
    fn breach(&mut self, result: Result<(), Exceeded>) -> Result<(), HostError> {
        let Err(breach) = result else { return Ok(()) };
        if !self.usage.reported {
            self.usage.reported = true;
            tracing::warn!(
                plugin = %self.ctx.plugin, object = %self.ctx.object, limit = breach.limit,
                "{}", breach.message
            );
            self.ctx.metrics.limit_exceeded(&self.ctx.plugin, breach.limit);
        }
        Err(HostError::Invalid(breach.message))
    }

    /// Charges one host call of `cost`.
    fn spend(&mut self, cost: Cost) -> Result<(), HostError> {
        let charged = self.usage.charge(cost);
        self.breach(charged)
    }

    /// Charges the bytes of an object or status to write, per call and across calls.
    fn written(&mut self, text: &str) -> Result<(), HostError> {
        let charged = self.usage.write_bytes(text.len(), &self.ctx.write_rate);
        self.breach(charged)
    }

    /// Checks the size of a string (or a count) the plugin passed.
    fn input(&mut self, what: &'static str, len: usize, max: usize) -> Result<(), HostError> {
        let checked = self.usage.input(what, len, max);
        self.breach(checked)
    }

    /// Checks the parts of a kind the plugin passed.
    fn kind_input(&mut self, kind: &Kind) -> Result<(), HostError> {
        let (what, len, max) = budget::kind_input(kind);
        self.input(what, len, max)
    }

    /// Checks the sizes of what the plugin passed.
    fn inputs(&mut self, inputs: &[budget::Input]) -> Result<(), HostError> {
        let checked = self.usage.inputs(inputs);
        self.breach(checked)
    }

    /// A refusal unless the grant allows `verb` on `kind`.
    fn check(&self, kind: &Kind, verb: Verb) -> Result<(), HostError> {
        check_grant(&self.ctx.grant, &self.ctx.plugin, kind, verb)
    }

    /// Ends a host call: counts it, and for a refusal (`Forbidden`, decided by the grant check or by the
    /// host API's rules) logs and counts the refusal. The only place either happens. Labels are bounded:
    /// the policy entry's name, a verb of this file, and `kind` only if the policy names it.
    fn finish<T>(
        &self,
        verb: &'static str,
        kind: &Kind,
        result: Result<T, HostError>,
    ) -> Result<T, HostError> {
        match &result {
            Ok(_) => self.ctx.metrics.host_call(&self.ctx.plugin, verb, "ok"),
            Err(HostError::Forbidden(message)) => {
                let kind_label = self.ctx.grant.kind_label(kind);
                tracing::warn!(
                    plugin = %self.ctx.plugin, object = %self.ctx.object, verb, kind = %kind_label,
                    reason = ?message, "refused"
                );
                self.ctx.metrics.refused(&self.ctx.plugin, verb, &kind_label);
                if WRITES.contains(&verb) && !self.refusal_reported.swap(true, Ordering::Relaxed) {
                    self.ctx.host.refused(verb, kind, message);
                }
            }
            Err(_) => self.ctx.metrics.host_call(&self.ctx.plugin, verb, "error"),
        }
        result
    }

    /// The grant check, then `verb` on `kind` as the host API does it.
    async fn granted<T>(
        &self,
        name: &'static str,
        verb: Verb,
        kind: &Kind,
        call: impl Future<Output = Result<T, HostError>>,
    ) -> Result<T, HostError> {
        let result = match self.check(kind, verb) {
            Ok(()) => call.await,
            Err(refusal) => Err(refusal),
        };
        self.finish(name, kind, result)
    }

    pub(crate) async fn get(&mut self, kind: Kind, name: String) -> Result<Option<Value>, HostError> {
        self.spend(Cost::Read)?;
        self.kind_input(&kind)?;
        self.input("name", name.len(), budget::MAX_NAME_BYTES)?;
        let call = self.ctx.host.get(kind.clone(), name);
        self.granted("get", Verb::Get, &kind, call).await
    }

    pub(crate) async fn list(&mut self, kind: Kind, label_selector: String) -> Result<Vec<Value>, HostError> {
        self.spend(Cost::Read)?;
        self.kind_input(&kind)?;
        self.input("label selector", label_selector.len(), budget::MAX_SELECTOR_BYTES)?;
        let host = self.ctx.host.clone();
        let call = host.list(kind.clone(), label_selector);
        let result = match self.check(&kind, Verb::List) {
            Ok(()) => call.await,
            Err(refusal) => Err(refusal),
        };
        if let Ok(items) = &result {
            let checked = self.usage.list(items.len());
            self.breach(checked)?;
        }
        self.finish("list", &kind, result)
    }

    /// The object (JSON text, as the plugin passed it) and its kind, once its size and bytes are charged.
    fn object_to_write(&mut self, object: &str) -> Result<(Kind, Value), HostError> {
        self.spend(Cost::Write)?;
        self.input("object", object.len(), budget::MAX_OBJECT_BYTES)?;
        self.written(object)?;
        let value: Value = serde_json::from_str(object)
            .map_err(|e| HostError::Invalid(format!("object is not JSON: {e}")))?;
        let kind = Kind::of_object(&value)
            .ok_or_else(|| HostError::Invalid("object has no apiVersion and kind".into()))?;
        Ok((kind, value))
    }

    pub(crate) async fn create(&mut self, object: &str) -> Result<Value, HostError> {
        let (kind, value) = self.object_to_write(object)?;
        let call = self.ctx.host.create(kind.clone(), value);
        self.granted("create", Verb::Create, &kind, call).await
    }

    pub(crate) async fn apply(&mut self, object: &str) -> Result<Value, HostError> {
        let (kind, value) = self.object_to_write(object)?;
        let call = self.ctx.host.apply(kind.clone(), value);
        self.granted("apply", Verb::Apply, &kind, call).await
    }

    pub(crate) async fn apply_status(&mut self, status: &str) -> Result<(), HostError> {
        self.spend(Cost::Write)?;
        self.input("status", status.len(), budget::MAX_OBJECT_BYTES)?;
        self.written(status)?;
        let kind = self.ctx.primary_kind.clone();
        let value: Value = serde_json::from_str(status)
            .map_err(|e| HostError::Invalid(format!("status is not JSON: {e}")))?;
        let call = self.ctx.host.apply_status(value);
        self.granted("apply-status", Verb::ApplyStatus, &kind, call).await
    }

    pub(crate) async fn delete(
        &mut self,
        kind: Kind,
        name: String,
        uid: Option<String>,
    ) -> Result<(), HostError> {
        self.spend(Cost::Write)?;
        self.kind_input(&kind)?;
        self.input("name", name.len(), budget::MAX_NAME_BYTES)?;
        self.input("uid", uid.as_deref().map_or(0, str::len), budget::MAX_NAME_BYTES)?;
        let call = self.ctx.host.delete(kind.clone(), name, uid);
        self.granted("delete", Verb::Delete, &kind, call).await
    }

    pub(crate) async fn finalizer(&mut self, finalizer: String, add: bool) -> Result<(), HostError> {
        self.spend(Cost::Write)?;
        self.input("finalizer", finalizer.len(), budget::MAX_NAME_BYTES)?;
        let kind = self.ctx.primary_kind.clone();
        let (name, call) = if add {
            ("add-finalizer", self.ctx.host.add_finalizer(finalizer))
        } else {
            ("remove-finalizer", self.ctx.host.remove_finalizer(finalizer))
        };
        self.granted(name, Verb::Finalize, &kind, call).await
    }

    pub(crate) async fn record_event(&mut self, event: Event) -> Result<(), HostError> {
        self.spend(Cost::Event)?;
        let related = event.related.as_ref().map(|(kind, name)| (kind, name.as_str()));
        self.inputs(&budget::event_inputs(
            &event.note,
            &event.reason,
            &event.action,
            related,
        ))?;
        let kind = self.ctx.primary_kind.clone();
        let call = self.ctx.host.record_event(event);
        self.granted("record-event", Verb::RecordEvent, &kind, call).await
    }

    pub(crate) async fn ray(&mut self, request: RayRequest) -> Result<RayResponse, HostError> {
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
        let result = self.ctx.host.ray(request).await;
        self.finish("ray-send", &clusters, result)
    }

    /// Checks the sizes of a Ray request's parts.
    fn ray_input(&mut self, request: &RayRequest) -> Result<(), HostError> {
        self.inputs(&budget::ray_inputs(
            &request.cluster,
            &request.method,
            &request.path,
            request.body.len(),
            &request.headers,
        ))
    }

    /// A log line of the plugin, within its log rate, escaped.
    pub(crate) fn log(&self, level: LogLevel, message: &str, fields: &[(String, String)]) {
        if !log_guard::admit(&self.ctx.log_rate, &self.ctx.plugin, &self.ctx.metrics) {
            return;
        }
        let message = log_guard::escape(message, log_guard::MAX_LOG_TEXT);
        let fields = log_guard::escape_fields(fields);
        self.ctx.host.log(level, &message, &fields);
    }
}
