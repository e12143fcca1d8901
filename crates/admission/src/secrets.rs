//! Reading Secrets: a plugin sees a Secret's content only where its policy entry's `secrets` setting says so
//! (`owned`: the reconciled object controls it, directly or through an object it owns; `namedInSpec`: the
//! user's request names it). Lists of Secrets are filtered accordingly. Referring to a Secret from what it
//! writes is a different matter, judged in `judge.rs`.

use kuberay_core::{HostError, Kind};
use serde_json::Value;

use super::{Admission, Cluster, forbidden, scan::Target, str_at};

/// Whether `kind` is the Secret kind (reads of it are checked one by one).
pub fn is_secret(kind: &Kind) -> bool {
    kind.group.is_empty() && kind.version == "v1" && kind.kind == "Secret"
}

impl<C: Cluster> Admission<C> {
    async fn may_read_secret(&self, secret: &Value) -> Result<bool, HostError> {
        let access = self.rules().secrets;
        let name = str_at(secret, "/metadata/name").unwrap_or_default();
        if access.named_in_spec && self.request().await?.names(Target::Secret, name) {
            return Ok(true);
        }
        Ok(access.owned && self.owned(secret).await?)
    }

    /// Checks a Secret the plugin read: `Err(Forbidden)` unless it was granted.
    pub async fn check_secret_read(&self, secret: &Value) -> Result<(), HostError> {
        if self.may_read_secret(secret).await? {
            return Ok(());
        }
        Err(forbidden(format!(
            "Secret {} is neither controlled by {} nor named in its request, as the plugin's secrets setting requires",
            str_at(secret, "/metadata/name").unwrap_or_default(),
            self.who()
        )))
    }

    /// Keeps the Secrets of a list the plugin was granted.
    pub async fn filter_secrets(&self, items: Vec<Value>) -> Result<Vec<Value>, HostError> {
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            if self.may_read_secret(&item).await? {
                kept.push(item);
            }
        }
        Ok(kept)
    }
}
