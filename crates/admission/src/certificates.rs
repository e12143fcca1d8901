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
use serde_json::Value;

use super::{Admission, Cluster, str_at};

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
