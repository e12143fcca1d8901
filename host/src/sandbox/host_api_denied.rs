//! A host that refuses everything, for calls that must not touch the cluster (a plugin's `metadata`).

use futures::future::BoxFuture;
use kuberay_plugin_sdk::{Event, HostError, Kind, LogLevel, RayRequest, RayResponse};
use serde_json::Value;

use super::host_api::{HostApi, HostResult};

pub(crate) struct DeniedHost;

fn denied<'a, T: Send + 'a>() -> BoxFuture<'a, HostResult<T>> {
    Box::pin(async {
        Err(HostError::Forbidden(
            "no host access while describing a plugin".into(),
        ))
    })
}

impl HostApi for DeniedHost {
    fn get(&self, _: Kind, _: String) -> BoxFuture<'_, HostResult<Option<Value>>> {
        denied()
    }
    fn list(&self, _: Kind, _: String) -> BoxFuture<'_, HostResult<Vec<Value>>> {
        denied()
    }
    fn create(&self, _: Kind, _: Value) -> BoxFuture<'_, HostResult<Value>> {
        denied()
    }
    fn apply(&self, _: Kind, _: Value) -> BoxFuture<'_, HostResult<Value>> {
        denied()
    }
    fn apply_status(&self, _: Value) -> BoxFuture<'_, HostResult<()>> {
        denied()
    }
    fn delete(&self, _: Kind, _: String, _: Option<String>) -> BoxFuture<'_, HostResult<()>> {
        denied()
    }
    fn add_finalizer(&self, _: String) -> BoxFuture<'_, HostResult<()>> {
        denied()
    }
    fn remove_finalizer(&self, _: String) -> BoxFuture<'_, HostResult<()>> {
        denied()
    }
    fn record_event(&self, _: Event) -> BoxFuture<'_, HostResult<()>> {
        denied()
    }
    fn ray(&self, _: RayRequest) -> BoxFuture<'_, HostResult<RayResponse>> {
        denied()
    }
    fn log(&self, level: LogLevel, message: &str, _: &[(String, String)]) {
        tracing::debug!(?level, "plugin log while describing itself: {message}");
    }
}
