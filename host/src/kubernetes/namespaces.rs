//! The Pod Security level a namespace enforces (its `pod-security.kubernetes.io/enforce` label), read with
//! a `get` and remembered for [`TTL`]: the label changes rarely, and the admission of a write only needs it
//! when that write carries a setting some Pod Security profile forbids.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client};

/// The label Pod Security admission reads.
pub(crate) const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// How long a namespace's label is remembered.
const TTL: Duration = Duration::from_secs(30);

/// Namespaces remembered at most (one per namespace a plugin wrote such a setting in).
const CAPACITY: usize = 4096;

/// Reads and remembers namespaces' enforce labels.
#[derive(Default)]
pub(crate) struct NamespaceLevels {
    seen: Mutex<HashMap<String, (Instant, Option<String>)>>,
}

impl NamespaceLevels {
    /// The value of `namespace`'s enforce label: `Ok(None)` when it has none, `Err` when it cannot be read
    /// (the caller decides what to assume, and says so).
    pub(crate) async fn enforced(
        &self,
        client: &Client,
        namespace: &str,
    ) -> Result<Option<String>, kube::Error> {
        if let Some((at, label)) = self.lock().get(namespace)
            && at.elapsed() < TTL
        {
            return Ok(label.clone());
        }
        let api: Api<Namespace> = Api::all(client.clone());
        let label = api
            .get_metadata(namespace)
            .await?
            .metadata
            .labels
            .and_then(|mut labels| labels.remove(ENFORCE_LABEL));
        let mut seen = self.lock();
        if seen.len() >= CAPACITY {
            seen.retain(|_, (at, _)| at.elapsed() < TTL);
        }
        if seen.len() < CAPACITY {
            seen.insert(namespace.to_string(), (Instant::now(), label.clone()));
        }
        Ok(label)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Option<String>)>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
