//! From a kind to the API resource that serves it, asked once per kind. A kind the API server does not
//! serve (an optional API such as the Gateway API, whose CRDs may be missing) is asked again only after
//! [`MISS_TTL`], so a plugin that looks for it at every reconcile costs the API server nothing more.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use kube::{
    Client,
    api::GroupVersionKind,
    discovery::{ApiResource, Scope, pinned_kind},
};
use kuberay_plugin_sdk::{HostError, Kind};

use super::errors::from_kube;
use kuberay_plugin_sdk::HostResult;

#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// How long "not served" is believed before the API server is asked again (CRDs installed meanwhile are
/// found after at most this long).
const MISS_TTL: Duration = Duration::from_secs(60);

pub(crate) struct Discovery {
    client: Client,
    known: Mutex<HashMap<Kind, Resolved>>,
    /// Kinds found unserved: when, and the API server's answer. Bounded by the kinds the policy grants,
    /// since plugins are refused other kinds before anything is resolved.
    misses: Mutex<Misses>,
}

impl Discovery {
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client,
            known: Mutex::default(),
            misses: Mutex::default(),
        }
    }

    pub(crate) async fn resolve(&self, kind: &Kind) -> HostResult<Resolved> {
        if let Some(found) = self.lock().get(kind) {
            return Ok(found.clone());
        }
        if let Some(message) = self.misses().recent(kind, Instant::now()) {
            return Err(HostError::NotFound(message));
        }
        let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
        let (resource, capabilities) = match pinned_kind(&self.client, &gvk).await.map_err(from_kube) {
            Ok(found) => found,
            Err(HostError::NotFound(message)) => {
                self.misses().record(kind, &message, Instant::now());
                return Err(HostError::NotFound(message));
            }
            Err(e) => return Err(e),
        };
        let resolved = Resolved {
            resource,
            namespaced: capabilities.scope == Scope::Namespaced,
        };
        self.lock().insert(kind.clone(), resolved.clone());
        Ok(resolved)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Kind, Resolved>> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn misses(&self) -> std::sync::MutexGuard<'_, Misses> {
        self.misses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Kinds the API server said it does not serve, and when.
#[derive(Default)]
struct Misses(HashMap<Kind, (Instant, String)>);

impl Misses {
    /// The API server's answer if `kind` was found unserved less than [`MISS_TTL`] before `now`.
    fn recent(&self, kind: &Kind, now: Instant) -> Option<String> {
        let (at, message) = self.0.get(kind)?;
        (now.saturating_duration_since(*at) < MISS_TTL).then(|| message.clone())
    }

    fn record(&mut self, kind: &Kind, message: &str, now: Instant) {
        self.0.insert(kind.clone(), (now, message.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_is_believed_for_its_ttl_then_asked_again() {
        let kind = Kind::new("gateway.networking.k8s.io", "v1", "Gateway");
        let other = Kind::new("gateway.networking.k8s.io", "v1", "HTTPRoute");
        let mut misses = Misses::default();
        let start = Instant::now();
        assert_eq!(misses.recent(&kind, start), None);
        misses.record(&kind, "not served", start);
        assert_eq!(
            misses.recent(&kind, start + Duration::from_secs(59)).as_deref(),
            Some("not served")
        );
        assert_eq!(misses.recent(&other, start), None);
        assert_eq!(misses.recent(&kind, start + MISS_TTL), None);
    }
}
