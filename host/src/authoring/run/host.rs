//! The host a plugin sees under `plugin run`: every call recorded in order with its result, reads and writes
//! judged by [`Admission`] (the operator's rules) against the in-memory cluster and admitted writes committed
//! to it; events checked as the operator checks them and kept; no Ray heads.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use kuberay_plugin_sdk::{Event, EventType, HostError, Kind, LogLevel, RayRequest, RayResponse, Verb};
use serde_json::Value;

use super::cluster::MemoryCluster;
use crate::{
    admission::{Admission, Intent},
    host_api::{HostApi, HostResult},
    plugin_host::{check_word, refusal_note},
    policy::{Grant, check_grant},
    sandbox::log_guard::{self, MAX_EVENT_NOTE_TEXT},
};

/// What became of a host call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallResult {
    /// It did what it was asked (what, briefly).
    Done(String),
    /// A rule refused it (the operator's message).
    Refused(String),
    /// It failed otherwise (not found, conflict, unavailable, ...).
    Failed(String),
    /// It never finished (the call was stopped).
    Unfinished,
}

/// One host call the plugin made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCall {
    /// The host call, as the operator's metrics name it (`get`, `apply`, `apply-status`, ...).
    pub verb: &'static str,
    /// The kind it is about.
    pub kind: Kind,
    /// The object or selector it named.
    pub target: String,
    /// What became of it.
    pub result: CallResult,
}

/// What the plugin did, in order.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    pub(crate) calls: Vec<HostCall>,
    /// Events, as `Type Reason (Action): note`.
    pub(crate) events: Vec<String>,
    /// Log lines, as `LEVEL message key=value ...`.
    pub(crate) logs: Vec<String>,
    /// The note of the Warning event `WriteRefused` the operator records about the first refused write.
    pub(crate) write_refused: Option<String>,
}

/// The host API of one offline reconcile.
pub(crate) struct OfflineHost {
    admission: Admission<MemoryCluster>,
    cluster: Arc<MemoryCluster>,
    grant: Arc<Grant>,
    journal: Arc<Mutex<Journal>>,
}

/// The name of an object a plugin passed (or its `generateName`).
fn object_name(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .or_else(|| object.pointer("/metadata/generateName"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string()
}

fn failed(error: &HostError) -> CallResult {
    match error {
        HostError::Forbidden(message) => CallResult::Refused(message.clone()),
        other => CallResult::Failed(other.to_string()),
    }
}

impl OfflineHost {
    pub(crate) fn new(
        admission: Admission<MemoryCluster>,
        cluster: Arc<MemoryCluster>,
        grant: Arc<Grant>,
        journal: Arc<Mutex<Journal>>,
    ) -> Self {
        Self {
            admission,
            cluster,
            grant,
            journal,
        }
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a call as it is made. The sandbox checks the grant before it runs the call, and drops a call
    /// the grant refuses without running it: that refusal is recorded here, with the sandbox's own check.
    fn begin(&self, verb: Verb, name: &'static str, kind: &Kind, target: String) -> usize {
        let result = match check_grant(&self.grant, &self.grant.entry, kind, verb) {
            Ok(()) => CallResult::Unfinished,
            Err(e) => failed(&e),
        };
        let mut journal = self.journal();
        journal.calls.push(HostCall {
            verb: name,
            kind: kind.clone(),
            target,
            result,
        });
        journal.calls.len() - 1
    }

    /// Records the result of call `index`.
    fn end<T>(&self, index: usize, result: &HostResult<T>, done: impl FnOnce(&T) -> String) {
        let outcome = match result {
            Ok(value) => CallResult::Done(done(value)),
            Err(e) => failed(e),
        };
        if let Some(call) = self.journal().calls.get_mut(index) {
            call.result = outcome;
        }
    }

    async fn write(&self, intent: Intent) -> HostResult<Option<Value>> {
        let decision = self.admission.admit(intent).await?;
        self.cluster.commit(&self.admission.primary().namespace, decision)
    }

    async fn record(&self, event: Event) -> HostResult<()> {
        if let Some((kind, name)) = &event.related {
            self.admission.check_names(kind, Some(name))?;
        }
        check_word("reason", &event.reason)?;
        check_word("action", &event.action)?;
        let kind = match event.event_type {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        let note = log_guard::escape(&event.note, MAX_EVENT_NOTE_TEXT);
        let line = format!("{kind} {} ({}): {note}", event.reason, event.action);
        self.journal().events.push(line);
        Ok(())
    }
}

fn primary_kind(host: &OfflineHost) -> Kind {
    host.admission.primary().kind.clone()
}

impl HostApi for OfflineHost {
    fn get(&self, kind: Kind, name: String) -> BoxFuture<'_, HostResult<Option<Value>>> {
        let index = self.begin(Verb::Get, "get", &kind, name.clone());
        Box::pin(async move {
            let result = self.admission.get(&kind, &name).await;
            self.end(index, &result, |found| {
                if found.is_some() { "found" } else { "none" }.to_string()
            });
            result
        })
    }

    fn list(&self, kind: Kind, label_selector: String) -> BoxFuture<'_, HostResult<Vec<Value>>> {
        let target = if label_selector.is_empty() {
            "(all)".to_string()
        } else {
            label_selector.clone()
        };
        let index = self.begin(Verb::List, "list", &kind, target);
        Box::pin(async move {
            let result = self.admission.list(&kind, &label_selector).await;
            self.end(index, &result, |items| format!("{} found", items.len()));
            result
        })
    }

    fn create(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        let index = self.begin(Verb::Create, "create", &kind, object_name(&object));
        Box::pin(async move {
            let result = self
                .write(Intent::Create { kind, object })
                .await
                .and_then(|o| o.ok_or_else(|| HostError::Internal("no object was created".into())));
            self.end(index, &result, |o| format!("created {}", object_name(o)));
            result
        })
    }

    fn apply(&self, kind: Kind, object: Value) -> BoxFuture<'_, HostResult<Value>> {
        let index = self.begin(Verb::Apply, "apply", &kind, object_name(&object));
        Box::pin(async move {
            let result = self
                .write(Intent::Apply { kind, object })
                .await
                .and_then(|o| o.ok_or_else(|| HostError::Internal("no object was applied".into())));
            self.end(index, &result, |_| "applied".into());
            result
        })
    }

    fn apply_status(&self, status: Value) -> BoxFuture<'_, HostResult<()>> {
        let kind = primary_kind(self);
        let target = self.admission.primary().name.clone();
        let index = self.begin(Verb::ApplyStatus, "apply-status", &kind, target);
        Box::pin(async move {
            let result = self.write(Intent::Status { status }).await.map(drop);
            self.end(index, &result, |()| "applied".into());
            result
        })
    }

    fn delete(&self, kind: Kind, name: String, uid: Option<String>) -> BoxFuture<'_, HostResult<()>> {
        let index = self.begin(Verb::Delete, "delete", &kind, name.clone());
        Box::pin(async move {
            let result = self.write(Intent::Delete { kind, name, uid }).await.map(drop);
            self.end(index, &result, |()| "deleted (if it was there)".into());
            result
        })
    }

    fn add_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        let kind = primary_kind(self);
        let index = self.begin(Verb::Finalize, "add-finalizer", &kind, finalizer.clone());
        Box::pin(async move {
            let result = self
                .write(Intent::Finalizer { finalizer, add: true })
                .await
                .map(drop);
            self.end(index, &result, |()| "added".into());
            result
        })
    }

    fn remove_finalizer(&self, finalizer: String) -> BoxFuture<'_, HostResult<()>> {
        let kind = primary_kind(self);
        let index = self.begin(Verb::Finalize, "remove-finalizer", &kind, finalizer.clone());
        Box::pin(async move {
            let result = self
                .write(Intent::Finalizer {
                    finalizer,
                    add: false,
                })
                .await
                .map(drop);
            self.end(index, &result, |()| "removed".into());
            result
        })
    }

    fn record_event(&self, event: Event) -> BoxFuture<'_, HostResult<()>> {
        let kind = primary_kind(self);
        let index = self.begin(Verb::RecordEvent, "record-event", &kind, event.reason.clone());
        Box::pin(async move {
            let result = self.record(event).await;
            self.end(index, &result, |()| "recorded".into());
            result
        })
    }

    fn ray(&self, request: RayRequest) -> BoxFuture<'_, HostResult<RayResponse>> {
        let clusters = Kind::new("ray.io", "v1", "RayCluster");
        let target = format!("{} {} {}", request.cluster, request.method, request.path);
        let index = {
            let mut journal = self.journal();
            journal.calls.push(HostCall {
                verb: "ray-send",
                kind: clusters.clone(),
                target,
                result: CallResult::Unfinished,
            });
            journal.calls.len() - 1
        };
        Box::pin(async move {
            let result = self
                .admission
                .check_names(&clusters, Some(&request.cluster))
                .and_then(|()| {
                    kuberay_rayhead::validate_path(&request.path)
                        .map_err(|e| HostError::Forbidden(e.to_string()))
                })
                .and_then(|()| {
                    Err(HostError::Unavailable(
                        "plugin run reaches no Ray heads: every request fails as if the head were down"
                            .into(),
                    ))
                });
            self.end(index, &result, |_: &RayResponse| String::new());
            result
        })
    }

    fn log(&self, level: LogLevel, message: &str, fields: &[(String, String)]) {
        let level = match level {
            LogLevel::Trace => "TRACE",
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warn => "WARN",
            LogLevel::Error => "ERROR",
        };
        let mut line = format!("{level} {message}");
        for (key, value) in fields {
            line.push_str(&format!(" {key}={value}"));
        }
        self.journal().logs.push(line);
    }

    fn refused(&self, verb: &str, kind: &Kind, reason: &str) {
        self.journal().write_refused = Some(refusal_note(verb, kind, reason));
    }
}
