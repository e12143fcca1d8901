//! The content rules applied in the host API, before a create or apply is sent and after a Secret is read:
//! [`super::content::check`] on the object, then the references it makes verified against the cluster (as
//! plugins see it: caches plus their recent writes).

use std::collections::BTreeSet;

use kuberay_plugin_sdk::{HostError, Kind, ownership};
use serde_json::Value;

use super::{
    content::{self, References},
    file::ContentRules,
    grant::Grant,
};
use crate::{kubernetes::KubeBridge, plugin_host::Primary};

/// The content checks of one reconcile.
pub(crate) struct Guard<'a> {
    pub bridge: &'a KubeBridge,
    pub primary: &'a Primary,
    pub grant: &'a Grant,
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// The uid of the object's controller, if it has one.
fn controller(object: &Value) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
}

fn secret_kind() -> Kind {
    Kind::new("", "v1", "Secret")
}

impl Guard<'_> {
    fn rules(&self) -> ContentRules {
        self.grant.rules.clone().unwrap_or_default()
    }

    /// Names the reconciled object's spec gives to Secrets and ServiceAccounts: in its pod templates and
    /// its `authOptions.secretName`, where a user names them for their Pods.
    async fn spec_names(&self) -> Result<(BTreeSet<String>, BTreeSet<String>), HostError> {
        let primary = self
            .bridge
            .read(&self.primary.kind, &self.primary.namespace, &self.primary.name)
            .await?
            .unwrap_or(Value::Null);
        Ok(content::names_in_spec(&self.primary.kind, &primary))
    }

    fn controlled_by_primary(&self, object: &Value) -> bool {
        ownership::controlled_by(object, &self.primary.uid)
    }

    /// Whether the reconciled object controls `object`, directly or through an object of a kind it owns.
    async fn owned(&self, object: &Value) -> Result<bool, HostError> {
        if self.controlled_by_primary(object) {
            return Ok(true);
        }
        self.controlled_through_owned(object).await
    }

    /// Whether `object`'s controller is an object of a kind the plugin owns that the reconciled object
    /// controls: the controller reference's uid is that object's, and that object's controller reference
    /// carries the reconciled object's uid (names alone decide nothing).
    pub(crate) async fn controlled_through_owned(&self, object: &Value) -> Result<bool, HostError> {
        let Some(owner) = controller(object) else {
            return Ok(false);
        };
        let (Some(api_version), Some(kind), Some(name), Some(uid)) = (
            str_at(owner, "/apiVersion"),
            str_at(owner, "/kind"),
            str_at(owner, "/name"),
            str_at(owner, "/uid"),
        ) else {
            return Ok(false);
        };
        let kind = Kind::from_api_version(api_version, kind);
        if !self.grant.owns.contains(&kind) {
            return Ok(false);
        }
        let parent = self.bridge.read(&kind, &self.primary.namespace, name).await?;
        Ok(parent.is_some_and(|p| {
            !uid.is_empty() && str_at(&p, "/metadata/uid") == Some(uid) && self.controlled_by_primary(&p)
        }))
    }

    async fn owned_named(&self, kind: &Kind, name: &str) -> Result<bool, HostError> {
        match self.bridge.read(kind, &self.primary.namespace, name).await? {
            Some(object) => self.owned(&object).await,
            None => Ok(false),
        }
    }

    /// Whether the plugin may read the Secret `secret` (as read) or refer to the Secret named `name`.
    async fn secret_allowed(
        &self,
        name: &str,
        secret: Option<&Value>,
        in_spec: &BTreeSet<String>,
    ) -> Result<bool, HostError> {
        let access = self.rules().secrets;
        if access.named_in_spec && in_spec.contains(name) {
            return Ok(true);
        }
        if !access.owned {
            return Ok(false);
        }
        match secret {
            Some(secret) => self.owned(secret).await,
            None => self.owned_named(&secret_kind(), name).await,
        }
    }

    /// Checks an object the plugin wants created or applied. `Err(Forbidden)` is a refusal.
    pub(crate) async fn check_write(&self, kind: &Kind, object: &Value) -> Result<(), HostError> {
        let rules = self.rules();
        let refs: References =
            content::check(kind, object, &rules, &self.primary.namespace).map_err(|m| {
                HostError::Forbidden(format!(
                    "{kind} {}: {m}",
                    str_at(object, "/metadata/name").unwrap_or("?")
                ))
            })?;
        if refs == References::default() {
            return Ok(());
        }
        let (spec_secrets, spec_accounts) = self.spec_names().await?;
        for name in &refs.secrets {
            if !self.secret_allowed(name, None, &spec_secrets).await? {
                return Err(HostError::Forbidden(format!(
                    "{kind} refers to Secret {name}, which the plugin was not granted (neither controlled by {} {} nor named in its spec)",
                    self.primary.kind.kind, self.primary.name
                )));
            }
        }
        let accounts = Kind::new("", "v1", "ServiceAccount");
        for name in &refs.service_accounts {
            if !spec_accounts.contains(name) && !self.owned_named(&accounts, name).await? {
                return Err(HostError::Forbidden(format!(
                    "{kind} uses ServiceAccount {name}, which is neither default, allowed by the policy, controlled by {} {} nor named in its spec",
                    self.primary.kind.kind, self.primary.name
                )));
            }
        }
        let roles = Kind::new("rbac.authorization.k8s.io", "v1", "Role");
        for name in &refs.roles {
            if !self.owned_named(&roles, name).await? {
                return Err(HostError::Forbidden(format!(
                    "RoleBinding binds Role {name}, which {} {} does not control",
                    self.primary.kind.kind, self.primary.name
                )));
            }
        }
        Ok(())
    }

    /// Checks a Secret the plugin read: `Err(Forbidden)` unless it was granted.
    pub(crate) async fn check_secret_read(&self, secret: &Value) -> Result<(), HostError> {
        let name = str_at(secret, "/metadata/name").unwrap_or_default();
        let (spec_secrets, _) = self.spec_names().await?;
        if self.secret_allowed(name, Some(secret), &spec_secrets).await? {
            return Ok(());
        }
        Err(HostError::Forbidden(format!(
            "Secret {name} is neither controlled by {} {} nor named in its spec",
            self.primary.kind.kind, self.primary.name
        )))
    }

    /// Keeps the Secrets of a list the plugin was granted.
    pub(crate) async fn filter_secrets(&self, items: Vec<Value>) -> Result<Vec<Value>, HostError> {
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            if self.check_secret_read(&item).await.is_ok() {
                kept.push(item);
            }
        }
        Ok(kept)
    }
}

/// Whether `kind` is the Secret kind (reads of it are checked one by one).
pub(crate) fn is_secret(kind: &Kind) -> bool {
    *kind == secret_kind()
}
