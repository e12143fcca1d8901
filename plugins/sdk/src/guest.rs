//! The WebAssembly side: bindings generated from `wit/plugin.wit`, a [`Host`] backed by the imports, and the
//! conversions [`export_plugin!`](crate::export_plugin) uses to export a [`Plugin`].

use serde_json::Value;

use crate::{
    Document, Event, EventType, Host, HostError, Kind, LogLevel, Outcome, Plugin, PluginMetadata, PortRole,
    RayRequest, RayResponse, RayTarget, ReconcileError, Request, Verb, document::host_error,
};

wit_bindgen::generate!({
    path: "../../wit",
    world: "reconcile-plugin",
    pub_export_macro: true,
    export_macro_name: "__export_reconcile_plugin",
    default_bindings_module: "kuberay_plugin_sdk::guest",
});

use self::{
    exports::kuberay::plugin::reconciler as wit_reconciler,
    kuberay::plugin::{
        config as wit_config, kubernetes as wit_k8s, log as wit_log, ray_head as wit_ray, types as wit_types,
    },
};

/// The [`Host`] of a plugin running in the operator.
pub struct WasmHost;

fn kind_to_wit(kind: &Kind) -> wit_types::Kind {
    wit_types::Kind {
        group: kind.group.clone(),
        version: kind.version.clone(),
        kind: kind.kind.clone(),
    }
}

fn error_from_wit(e: wit_types::HostError) -> HostError {
    use wit_types::HostError as W;
    match e {
        W::Forbidden(m) => HostError::Forbidden(m),
        W::NotFound(m) => HostError::NotFound(m),
        W::Conflict(m) => HostError::Conflict(m),
        W::Invalid(m) => HostError::Invalid(m),
        W::Unavailable(m) => HostError::Unavailable(m),
        W::Internal(m) => HostError::Internal(m),
    }
}

impl Host for WasmHost {
    fn get(&self, kind: &Kind, name: &str) -> Result<Option<Value>, HostError> {
        self.get_document(kind, name)?
            .map(|d| d.into_value().map_err(host_error))
            .transpose()
    }

    fn list(&self, kind: &Kind, label_selector: &str) -> Result<Vec<Value>, HostError> {
        self.list_documents(kind, label_selector)?
            .into_iter()
            .map(|d| d.into_value().map_err(host_error))
            .collect()
    }

    fn get_document(&self, kind: &Kind, name: &str) -> Result<Option<Document>, HostError> {
        let text = wit_k8s::get(&kind_to_wit(kind), name).map_err(error_from_wit)?;
        Ok(text.map(Document::Text))
    }

    fn list_documents(&self, kind: &Kind, label_selector: &str) -> Result<Vec<Document>, HostError> {
        let items = wit_k8s::list(&kind_to_wit(kind), label_selector).map_err(error_from_wit)?;
        Ok(items.into_iter().map(Document::Text).collect())
    }

    fn create(&self, object: &Value) -> Result<Value, HostError> {
        self.create_document(object)?.into_value().map_err(host_error)
    }

    fn create_document(&self, object: &Value) -> Result<Document, HostError> {
        let created = wit_k8s::create(&object.to_string()).map_err(error_from_wit)?;
        Ok(Document::Text(created))
    }

    fn apply(&self, object: &Value) -> Result<Value, HostError> {
        self.apply_document(object)?.into_value().map_err(host_error)
    }

    fn apply_document(&self, object: &Value) -> Result<Document, HostError> {
        let applied = wit_k8s::apply(&object.to_string()).map_err(error_from_wit)?;
        Ok(Document::Text(applied))
    }

    fn apply_status(&self, status: &Value) -> Result<(), HostError> {
        wit_k8s::apply_status(&status.to_string()).map_err(error_from_wit)
    }

    fn delete(&self, kind: &Kind, name: &str, uid: Option<&str>) -> Result<(), HostError> {
        wit_k8s::delete(&kind_to_wit(kind), name, uid).map_err(error_from_wit)
    }

    fn add_finalizer(&self, finalizer: &str) -> Result<(), HostError> {
        wit_k8s::add_finalizer(finalizer).map_err(error_from_wit)
    }

    fn remove_finalizer(&self, finalizer: &str) -> Result<(), HostError> {
        wit_k8s::remove_finalizer(finalizer).map_err(error_from_wit)
    }

    fn record_event(&self, event: &Event) -> Result<(), HostError> {
        let event = wit_k8s::Event {
            event_type: match event.event_type {
                EventType::Normal => wit_k8s::EventType::Normal,
                EventType::Warning => wit_k8s::EventType::Warning,
            },
            reason: event.reason.clone(),
            action: event.action.clone(),
            note: event.note.clone(),
            related: event.related.as_ref().map(|(k, n)| (kind_to_wit(k), n.clone())),
        };
        wit_k8s::record_event(&event).map_err(error_from_wit)
    }

    fn log(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        let level = match level {
            LogLevel::Trace => wit_log::Level::Trace,
            LogLevel::Debug => wit_log::Level::Debug,
            LogLevel::Info => wit_log::Level::Info,
            LogLevel::Warn => wit_log::Level::Warn,
            LogLevel::Error => wit_log::Level::Error,
        };
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        wit_log::log(level, message, &fields);
    }

    fn config(&self) -> serde_json::Map<String, Value> {
        // The host hands over an object; anything else (a host bug) reads as no configuration.
        match serde_json::from_str(&wit_config::get()) {
            Ok(Value::Object(config)) => config,
            _ => serde_json::Map::new(),
        }
    }

    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        let request = wit_ray::Request {
            cluster: request.cluster.clone(),
            role: match request.role {
                PortRole::Dashboard => wit_ray::PortRole::Dashboard,
                PortRole::Serve => wit_ray::PortRole::Serve,
                PortRole::DashboardAgent => wit_ray::PortRole::DashboardAgent,
            },
            target: match request.target {
                RayTarget::Cluster => wit_ray::Target::Cluster,
                RayTarget::HeadPod => wit_ray::Target::HeadPod,
            },
            method: request.method.clone(),
            path: request.path.clone(),
            headers: request.headers.clone(),
            body: request.body.clone(),
        };
        let response = wit_ray::send(&request).map_err(error_from_wit)?;
        Ok(RayResponse {
            status: response.status,
            headers: response.headers,
            body: response.body,
        })
    }
}

#[doc(hidden)]
pub fn metadata_to_wit(metadata: PluginMetadata) -> wit_reconciler::PluginMetadata {
    let verb = |v: &Verb| match v {
        Verb::Get => wit_reconciler::Verb::Get,
        Verb::List => wit_reconciler::Verb::List,
        Verb::Create => wit_reconciler::Verb::Create,
        Verb::Apply => wit_reconciler::Verb::Apply,
        Verb::ApplyStatus => wit_reconciler::Verb::ApplyStatus,
        Verb::Delete => wit_reconciler::Verb::Delete,
        Verb::Finalize => wit_reconciler::Verb::Finalize,
        Verb::RecordEvent => wit_reconciler::Verb::RecordEvent,
    };
    wit_reconciler::PluginMetadata {
        name: metadata.name,
        version: metadata.version,
        wit_version: crate::WIT_VERSION.to_string(),
        reconciles: kind_to_wit(&metadata.reconciles),
        owns: metadata.owns.iter().map(kind_to_wit).collect(),
        capabilities: metadata
            .capabilities
            .iter()
            .map(|c| wit_reconciler::Capability {
                kind: kind_to_wit(&c.kind),
                verbs: c.verbs.iter().map(verb).collect(),
            })
            .collect(),
        finalizer: metadata.finalizer,
        uses_ray_head: metadata.uses_ray_head,
    }
}

/// The metadata of `P`, once `P` accepted the host's configuration: a refusal traps, so the host does not
/// load the version and reports the message (the panic hook's one line on stderr).
#[doc(hidden)]
pub fn metadata<P: Plugin>() -> wit_reconciler::PluginMetadata {
    one_line_panics();
    if let Err(message) = P::check_config(&WasmHost.config()) {
        panic!("configuration refused: {message}");
    }
    metadata_to_wit(P::metadata())
}

/// Panics print one line on stderr, `panicked at FILE:LINE: MESSAGE`, which the host quotes in the error of
/// the call (the default hook's last line is a hint about backtraces).
fn one_line_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            eprintln!("panicked{at}: {}", message.replace('\n', " "));
        }));
    });
}

/// Runs `reconcile` or `cleanup` of `P` on a request from the host.
#[doc(hidden)]
pub fn run<P: Plugin>(
    request: wit_reconciler::Request,
    cleanup: bool,
) -> Result<wit_reconciler::Outcome, wit_reconciler::ReconcileError> {
    one_line_panics();
    let request = Request {
        object: Document::Text(request.object),
        attempt: request.attempt,
    };
    let result = if cleanup {
        P::cleanup(&WasmHost, request)
    } else {
        P::reconcile(&WasmHost, request)
    };
    match result {
        Ok(Outcome { requeue_after }) => Ok(wit_reconciler::Outcome {
            requeue_after_ms: requeue_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }),
        Err(ReconcileError::InvalidObject(m)) => Err(wit_reconciler::ReconcileError::InvalidObject(m)),
        Err(ReconcileError::Transient(m)) => Err(wit_reconciler::ReconcileError::Transient(m)),
    }
}

/// Exports a [`Plugin`] as the `reconciler` interface of a WebAssembly component. Expands to nothing when
/// not compiling for WebAssembly, so a plugin crate also builds natively for its unit tests.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __KuberayPluginExport;
            impl $crate::guest::exports::kuberay::plugin::reconciler::Guest for __KuberayPluginExport {
                fn metadata() -> $crate::guest::exports::kuberay::plugin::reconciler::PluginMetadata {
                    $crate::guest::metadata::<$plugin>()
                }
                fn reconcile(
                    request: $crate::guest::exports::kuberay::plugin::reconciler::Request,
                ) -> Result<
                    $crate::guest::exports::kuberay::plugin::reconciler::Outcome,
                    $crate::guest::exports::kuberay::plugin::reconciler::ReconcileError,
                > {
                    $crate::guest::run::<$plugin>(request, false)
                }
                fn cleanup(
                    request: $crate::guest::exports::kuberay::plugin::reconciler::Request,
                ) -> Result<
                    $crate::guest::exports::kuberay::plugin::reconciler::Outcome,
                    $crate::guest::exports::kuberay::plugin::reconciler::ReconcileError,
                > {
                    $crate::guest::run::<$plugin>(request, true)
                }
            }
    $crate::guest::__export_reconcile_plugin!(__KuberayPluginExport with_types_in $crate::guest);
        };
    };
}
