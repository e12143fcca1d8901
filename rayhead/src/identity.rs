//! Which objects speak for a RayCluster: only those it controls. The head Service, the head Pod and the
//! generated token Secret must carry a controller owner reference with the cluster's uid, and an
//! EndpointSlice one with its Service's uid (as the EndpointSlice controller sets it). Names in the
//! cluster's spec or status and labels anyone can set only say where to look; an object found there that
//! the cluster does not control is refused, so a cluster whose fields point at another cluster's head
//! Service, Pod or token reaches nothing of that cluster.

use kuberay_plugin_sdk::{HostError, ownership};
use serde_json::Value;

/// Why no request was sent.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The route or token could not be found or read.
    Host(HostError),
    /// An object on the way is not the cluster's own: a refusal, not a transient failure.
    Refused(String),
}

impl From<HostError> for Failure {
    fn from(e: HostError) -> Self {
        Self::Host(e)
    }
}

impl Failure {
    pub(crate) fn into_host_error(self) -> HostError {
        match self {
            Self::Host(e) => e,
            Self::Refused(message) => HostError::Forbidden(message),
        }
    }
}

pub(crate) fn uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
}

/// Whether `object` is controlled by `owner` (a controller owner reference with the owner's uid), by the
/// ownership rule the plugin host applies (`kuberay_plugin_sdk::ownership`).
pub(crate) fn controlled_by(object: &Value, owner: &Value) -> bool {
    uid(owner).is_some_and(|owner| ownership::controlled_by(object, owner))
}

/// Refuses `object` (`what`, for the message) unless `cluster` controls it.
pub(crate) fn require_controlled(object: &Value, cluster: &Value, what: &str) -> Result<(), Failure> {
    if controlled_by(object, cluster) {
        return Ok(());
    }
    let name = |v: &Value| {
        v.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Err(Failure::Refused(format!(
        "{what} {} is not controlled by RayCluster {}",
        name(object),
        name(cluster)
    )))
}
