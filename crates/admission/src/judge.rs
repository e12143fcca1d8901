//! Provenance, content and Pod Security: an object a plugin wants written, judged against what the
//! reconciled object controls and what the user's request behind it asks for (`provenance`).
//!
//! - A **reference** (Secret, ConfigMap, claim, volume, ServiceAccount, selected RayCluster) is allowed when
//!   the user's request names it, the reconciled object controls it, or the policy grants it by name.
//! - A **Pod Security setting** is allowed when the namespace's level (its enforce label, else the policy's
//!   `namespaceDefault`) allows it and, unless the user's request asks for that same setting, the plugin's
//!   own profile allows it too.
//! - **Content needs** (`content::Needs`): owned objects, the user's values, annotations and selectors.
//! - cert-manager **Certificates** and the Secrets they are issued into: `certificates`.

use kuberay_core::{HostError, Kind};
use serde_json::Value;

use super::{
    Admission, Cluster,
    content::{self, Needs},
    forbidden,
    pod_security::{self, Finding},
    provenance::Request,
    scan::{Reference, Target, scan},
};
use crate::policy::{Profile, file::ContentRules};

fn secret_like(target: Target) -> Option<Kind> {
    match target {
        Target::Secret => Some(Kind::new("", "v1", "Secret")),
        Target::ConfigMap => Some(Kind::new("", "v1", "ConfigMap")),
        Target::PersistentVolumeClaim => Some(Kind::new("", "v1", "PersistentVolumeClaim")),
        Target::ServiceAccount => Some(Kind::new("", "v1", "ServiceAccount")),
        Target::RayCluster => Some(Kind::new("ray.io", "v1", "RayCluster")),
        Target::PersistentVolume | Target::VolumeSource => None,
    }
}

fn granted(rules: &ContentRules, reference: &Reference) -> bool {
    let names = &rules.references;
    let list = match reference.target {
        Target::Secret => &names.secrets,
        Target::ConfigMap => &names.config_maps,
        Target::PersistentVolumeClaim => &names.persistent_volume_claims,
        // A Pod without a ServiceAccount runs as `default`: naming it grants nothing.
        Target::ServiceAccount => {
            return reference.name == "default" || names.service_accounts.contains(&reference.name);
        }
        _ => return false,
    };
    list.contains(&reference.name)
}

impl<C: Cluster> Admission<C> {
    /// Judges an object of `kind` the plugin wants created or applied. `Err(Forbidden)` is a refusal.
    pub(super) async fn judge(&self, kind: &Kind, object: &Value) -> Result<(), HostError> {
        self.judged(kind, object).await.map_err(|refusal| match refusal {
            Refusal::Rule(m) => forbidden(format!("{kind} {}: {m}", str_name(object))),
            Refusal::Failed(e) => e,
        })
    }

    async fn judged(&self, kind: &Kind, object: &Value) -> Result<(), Refusal> {
        let rules = self.rules();
        let needs = content::check(kind, object, &rules, &self.primary.namespace).map_err(Refusal::Rule)?;
        let found = scan(object, "");
        for reference in &found.references {
            if Self::is_certificate_output(kind, &reference.at) {
                self.certificate_output(object, &reference.name)
                    .await
                    .map_err(Refusal::Failed)?
                    .map_err(Refusal::Rule)?;
                continue;
            }
            self.reference(&rules, reference).await?;
        }
        self.findings(&rules, &found.findings).await?;
        if !needs.is_empty() {
            self.needs(&rules, needs).await?;
        }
        Ok(())
    }

    async fn reference(&self, rules: &ContentRules, reference: &Reference) -> Result<(), Refusal> {
        if granted(rules, reference) {
            return Ok(());
        }
        let request = self.request().await?;
        if request.names(reference.target, &reference.name) {
            return Ok(());
        }
        if let Some(kind) = secret_like(reference.target)
            && self.owned_named(&kind, &reference.name).await?
        {
            return Ok(());
        }
        if reference.target == Target::RayCluster && self.own_cluster(&reference.name).await? {
            return Ok(());
        }
        if reference.target == Target::Secret && self.issued_to_owned_certificate(&reference.name).await? {
            return Ok(());
        }
        Err(Refusal::Rule(format!(
            "{} refers to {} {}, which {} neither controls nor names in its request ({}), and the policy does not grant",
            reference.at,
            reference.target.name(),
            reference.name,
            self.who(),
            request.describe()
        )))
    }

    /// The Pod Security level the reconciled object's namespace enforces.
    async fn namespace_level(&self, rules: &ContentRules) -> Profile {
        let namespace = &self.primary.namespace;
        match self.cluster.enforced_level(namespace).await {
            Ok(Some(label)) => Profile::from_label(&label).unwrap_or(Profile::Restricted),
            Ok(None) => rules.namespace_default,
            Err(e) => {
                tracing::warn!(%namespace, error = %e, assumed = rules.namespace_default.name(),
                    "could not read the namespace's Pod Security level");
                rules.namespace_default
            }
        }
    }

    async fn findings(&self, rules: &ContentRules, findings: &[Finding]) -> Result<(), Refusal> {
        if findings.is_empty() {
            return Ok(());
        }
        let level = self.namespace_level(rules).await;
        let none = std::collections::BTreeSet::new();
        for finding in findings {
            if !pod_security::allows(level, finding, &none) {
                return Err(Refusal::Rule(format!(
                    "{}: namespace {} enforces Pod Security level {}",
                    finding.message,
                    self.primary.namespace,
                    level.name()
                )));
            }
            if pod_security::allows(rules.pod_security, finding, &rules.extra_capabilities) {
                continue;
            }
            let request = self.request().await?;
            if !request.asks_for(&finding.signature) {
                return Err(Refusal::Rule(format!(
                    "{}, which the user's request ({}) does not ask for and the plugin's profile ({}) does not allow",
                    finding.message,
                    request.describe(),
                    rules.pod_security.name()
                )));
            }
        }
        Ok(())
    }

    async fn needs(&self, rules: &ContentRules, needs: Needs) -> Result<(), Refusal> {
        for (kind, name, does) in &needs.owned {
            if !self.owned_named(kind, name).await? {
                return Err(Refusal::Rule(format!(
                    "it {does} {} {name}, which {} does not control",
                    kind.kind,
                    self.who()
                )));
            }
        }
        let request = self.request().await?;
        for account in &needs.bound_accounts {
            let named = request.names(Target::ServiceAccount, account)
                || rules.references.service_accounts.contains(account);
            let sa = Kind::new("", "v1", "ServiceAccount");
            if !named && !self.owned_named(&sa, account).await? {
                return Err(Refusal::Rule(format!(
                    "it binds ServiceAccount {account}, which {} neither controls nor names in its request",
                    self.who()
                )));
            }
        }
        if let Some((what, value)) = needs.said.iter().find(|(_, v)| !request.says(v)) {
            return Err(Refusal::Rule(format!(
                "{what} {value:?} is not in the user's request ({})",
                request.describe()
            )));
        }
        if let Some((key, value)) = needs.annotations.iter().find(|(k, v)| !request.annotates(k, v)) {
            return Err(Refusal::Rule(format!(
                "annotation {key}={value:?} is not in the user's request ({})",
                request.describe()
            )));
        }
        for cluster in &needs.cluster_labels {
            if !request.says(cluster) && !self.own_cluster(cluster).await? {
                return Err(Refusal::Rule(format!(
                    "it labels Pods {}={cluster}, a RayCluster {} does not control",
                    content::CLUSTER_LABEL,
                    self.who()
                )));
            }
        }
        if let Some(selector) = &needs.selector {
            self.selector(selector, request).await?;
        }
        Ok(())
    }

    /// A Service's selector must pick Pods of a RayCluster of the reconciled object, or be the user's own.
    async fn selector(
        &self,
        selector: &std::collections::BTreeMap<String, String>,
        request: &Request,
    ) -> Result<(), Refusal> {
        if request.selects(selector) {
            return Ok(());
        }
        match content::selected_cluster(selector) {
            Some(cluster) if self.own_cluster(cluster).await? => Ok(()),
            _ => Err(Refusal::Rule(format!(
                "its selector {selector:?} may pick Pods that are not {}'s (it must require {}=<a RayCluster it controls>)",
                self.who(),
                content::CLUSTER_LABEL
            ))),
        }
    }
}

fn str_name(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .or_else(|| object.pointer("/metadata/generateName"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .chars()
        .take(80)
        .collect()
}

/// Why a write was not admitted: a rule, or an error while finding out.
pub(super) enum Refusal {
    Rule(String),
    Failed(HostError),
}

impl From<HostError> for Refusal {
    fn from(e: HostError) -> Self {
        Self::Failed(e)
    }
}
