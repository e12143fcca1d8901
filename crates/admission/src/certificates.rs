//! cert-manager Certificates a plugin writes (the RayClusterMTLS gate): a Certificate's `spec.secretName` is
//! where cert-manager will write, not a Secret the plugin reads, and a Secret a Certificate the reconciled
//! object controls is issued into is that object's own.
//!
//! - A Certificate may name as its Secret one that does not exist yet, one the reconciled object controls,
//!   or one cert-manager already issued for a Certificate of that same name (its
//!   `cert-manager.io/certificate-name` annotation). Any other Secret would be overwritten by cert-manager
//!   with a key pair the plugin chose the names for, so it is refused.
//! - Anything else (a Pod's volume, a CA Issuer's `ca.secretName`) may refer to a Secret that a Certificate
//!   the reconciled object controls (directly or through an object it controls) names as its Secret.

use kuberay_core::{HostError, Kind};
use serde_json::{Value, json};

use super::{Admission, Cluster, forbidden, ownership::controlled_by, str_at};

/// cert-manager's annotation on the Secrets it issues: the Certificate's name.
const CERTIFICATE_NAME_ANNOTATION: &str = "cert-manager.io/certificate-name";

/// cert-manager's Certificate.
pub(crate) fn certificate_kind() -> Kind {
    Kind::new("cert-manager.io", "v1", "Certificate")
}

impl<C: Cluster> Admission<C> {
    /// Whether `at` in an object of `kind` is a Certificate's own Secret (its output, judged by
    /// [`Self::certificate_output`] instead of as a reference).
    pub(super) fn is_certificate_output(kind: &Kind, at: &str) -> bool {
        *kind == certificate_kind() && at == "/spec/secretName"
    }

    /// `Err(why)` unless Certificate `object` may have cert-manager write into Secret `secret`.
    pub(super) async fn certificate_output(
        &self,
        object: &Value,
        secret: &str,
    ) -> Result<Result<(), String>, HostError> {
        let secrets = Kind::new("", "v1", "Secret");
        let Some(live) = self
            .cluster
            .read(&secrets, &self.primary.namespace, secret)
            .await?
        else {
            return Ok(Ok(()));
        };
        if self.owned(&live).await? {
            return Ok(Ok(()));
        }
        let issued_for = str_at(
            &live,
            &format!(
                "/metadata/annotations/{}",
                CERTIFICATE_NAME_ANNOTATION.replace('/', "~1")
            ),
        );
        if issued_for.is_some() && issued_for == str_at(object, "/metadata/name") {
            return Ok(Ok(()));
        }
        Ok(Err(format!(
            "/spec/secretName names Secret {secret}, which exists, is not controlled by {} and was not issued for \
             this Certificate: cert-manager would overwrite it",
            self.who()
        )))
    }

    /// Whether a Certificate the reconciled object controls names `secret` as its Secret (only for plugins
    /// that own Certificates).
    pub(super) async fn issued_to_owned_certificate(&self, secret: &str) -> Result<bool, HostError> {
        let kind = certificate_kind();
        if !self.grant.owns.contains(&kind) {
            return Ok(false);
        }
        for certificate in self.cluster.list(&kind, &self.primary.namespace, "").await? {
            if str_at(&certificate, "/spec/secretName") == Some(secret) && self.owned(&certificate).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The fields of an owner reference to a Certificate that a plugin may give a Secret (KubeRay's
/// `controllerutil.SetOwnerReference`: no controller, no blocking).
const REFERENCE_FIELDS: [&str; 6] = [
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];

/// Whether `object`, written as a Secret, gives it an owner other than the reconciled object `uid`: such a
/// write is judged by [`Admission::certificate_secret_owner`] (it can only be a Certificate's reference).
pub(super) fn names_foreign_owner(object: &Value, uid: &str) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| str_at(r, "/uid") != Some(uid)))
}

/// `Err(why)` unless `object` carries nothing but the name, namespace and one owner reference.
fn owner_reference_only<'a>(object: &'a Value, namespace: &str) -> Result<&'a Value, String> {
    let only = |value: &Value, allowed: &[&str]| {
        value
            .as_object()
            .is_some_and(|fields| fields.keys().all(|k| allowed.contains(&k.as_str())))
    };
    if !only(object, &["apiVersion", "kind", "metadata"])
        || !only(&object["metadata"], &["name", "namespace", "ownerReferences"])
    {
        return Err(
            "a write that names another owner may carry metadata.name, metadata.namespace and \
                    metadata.ownerReferences only"
                .into(),
        );
    }
    if str_at(object, "/metadata/namespace").is_some_and(|n| n != namespace) {
        return Err(format!(
            "the Secret is outside the reconciled object's namespace {namespace}"
        ));
    }
    match object["metadata"]["ownerReferences"]
        .as_array()
        .map(Vec::as_slice)
    {
        Some([reference])
            if only(reference, &REFERENCE_FIELDS)
                && ["controller", "blockOwnerDeletion"]
                    .iter()
                    .all(|f| reference.get(*f).is_none_or(|v| *v == Value::Bool(false))) =>
        {
            Ok(reference)
        }
        _ => Err(
            "the one owner reference a plugin may add to a Secret names a Certificate, without \
                  controller or blockOwnerDeletion"
                .into(),
        ),
    }
}

impl<C: Cluster> Admission<C> {
    /// KubeRay's owner reference from a Secret cert-manager issued to the Certificate it was issued for, so
    /// that the Secret goes with the Certificate: `object` (a Secret named `name`) must carry only that
    /// reference, to a Certificate the reconciled object controls whose `spec.secretName` is this Secret, and
    /// the live Secret must be the one cert-manager issued for it (its `cert-manager.io/certificate-name`
    /// annotation) and controlled by nothing else. Returns the reference as it is to be sent. A Secret that
    /// does not exist (yet) is `NotFound`.
    pub(super) async fn certificate_secret_owner(
        &self,
        name: &str,
        object: &Value,
        live: Option<&Value>,
    ) -> Result<Value, HostError> {
        let refuse = |why: String| forbidden(format!("Secret {name}: {why}"));
        let reference = owner_reference_only(object, &self.primary.namespace).map_err(refuse)?;
        let kind = certificate_kind();
        let (Some(api_version), Some("Certificate"), Some(certificate), Some(uid)) = (
            str_at(reference, "/apiVersion"),
            str_at(reference, "/kind"),
            str_at(reference, "/name"),
            str_at(reference, "/uid"),
        ) else {
            return Err(refuse(
                "only an owner reference to a cert-manager Certificate may be added to a Secret".into(),
            ));
        };
        let controls =
            |c: &Value| str_at(c, "/metadata/uid") == Some(uid) && controlled_by(c, &self.primary.uid);
        let found = match self.grant.owns.contains(&kind) && api_version == kind.api_version() {
            true => {
                self.cluster
                    .read(&kind, &self.primary.namespace, certificate)
                    .await?
            }
            false => None,
        };
        let Some(found) = found.filter(|c| controls(c)) else {
            return Err(refuse(format!(
                "Certificate {certificate} (uid {uid}) is not one {} controls",
                self.who()
            )));
        };
        if str_at(&found, "/spec/secretName") != Some(name) {
            return Err(refuse(format!("Certificate {certificate} is not issued into it")));
        }
        let live = live.ok_or_else(|| HostError::NotFound(format!("Secret {name} does not exist (yet)")))?;
        let annotation = format!(
            "/metadata/annotations/{}",
            CERTIFICATE_NAME_ANNOTATION.replace('/', "~1")
        );
        if str_at(live, &annotation) != Some(certificate) {
            return Err(refuse(format!(
                "cert-manager did not issue it for Certificate {certificate}"
            )));
        }
        if super::controller(live).is_some_and(|c| str_at(c, "/uid") != Some(uid)) {
            return Err(refuse("it is controlled by another object".into()));
        }
        Ok(json!({
            "apiVersion": api_version,
            "kind": kind.kind,
            "name": certificate,
            "uid": uid,
        }))
    }
}
