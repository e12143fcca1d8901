//! Conversions between the WIT types a plugin passes (`kuberay:plugin`'s `types`, `k8s`, `ray` and `log`
//! interfaces, see [`super::bindings`]) and the SDK types the host API works with. The call logic is in
//! `gate.rs` (its checks) and `call.rs` (the Store).

use kuberay_plugin_sdk::{
    Event, EventType, HostError, Kind, LogLevel, PortRole, RayRequest, RayResponse, RayTarget,
};

use super::bindings::{wit_k8s, wit_log, wit_ray, wit_types};

pub(crate) fn kind(kind: wit_types::Kind) -> Kind {
    Kind {
        group: kind.group,
        version: kind.version,
        kind: kind.kind,
    }
}

pub(crate) fn error(e: HostError) -> wit_types::HostError {
    use wit_types::HostError as W;
    match e {
        HostError::Forbidden(m) => W::Forbidden(m),
        HostError::NotFound(m) => W::NotFound(m),
        HostError::Conflict(m) => W::Conflict(m),
        HostError::Invalid(m) => W::Invalid(m),
        HostError::Unavailable(m) => W::Unavailable(m),
        HostError::Internal(m) => W::Internal(m),
    }
}

pub(crate) fn event(event: wit_k8s::Event) -> Event {
    Event {
        event_type: match event.event_type {
            wit_k8s::EventType::Normal => EventType::Normal,
            wit_k8s::EventType::Warning => EventType::Warning,
        },
        reason: event.reason,
        action: event.action,
        note: event.note,
        related: event.related.map(|(k, n)| (kind(k), n)),
    }
}

pub(crate) fn log_level(level: wit_log::Level) -> LogLevel {
    match level {
        wit_log::Level::Trace => LogLevel::Trace,
        wit_log::Level::Debug => LogLevel::Debug,
        wit_log::Level::Info => LogLevel::Info,
        wit_log::Level::Warn => LogLevel::Warn,
        wit_log::Level::Error => LogLevel::Error,
    }
}

pub(crate) fn ray_request(request: wit_ray::Request) -> RayRequest {
    RayRequest {
        cluster: request.cluster,
        role: match request.role {
            wit_ray::PortRole::Dashboard => PortRole::Dashboard,
            wit_ray::PortRole::Serve => PortRole::Serve,
            wit_ray::PortRole::DashboardAgent => PortRole::DashboardAgent,
        },
        target: match request.target {
            wit_ray::Target::Cluster => RayTarget::Cluster,
            wit_ray::Target::HeadPod => RayTarget::HeadPod,
        },
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: request.body,
    }
}

pub(crate) fn ray_response(response: RayResponse) -> wit_ray::Response {
    wit_ray::Response {
        status: response.status,
        headers: response.headers,
        body: response.body,
    }
}
