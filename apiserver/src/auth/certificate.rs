//! Client certificates (mutual TLS): a certificate the TLS layer verified against `--client-ca-file`
//! names its user in the subject's common name and its groups in the subject's organizations, as
//! kube-apiserver reads client certificates. The identity is then impersonated like a reviewed token's.

use x509_parser::prelude::{FromDer, X509Certificate};

use crate::context::Caller;

/// The group every authenticated user is in.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";

/// A verified client certificate's identity, put into each request's extensions by the TLS listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate(pub Caller);

impl ClientCertificate {
    /// The identity in a DER certificate the TLS layer has already verified; `None` without a common name.
    pub fn from_der(der: &[u8]) -> Option<Self> {
        let (_, certificate) = X509Certificate::from_der(der).ok()?;
        let subject = certificate.subject();
        let username = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .filter(|cn| !cn.is_empty())?
            .to_string();
        let mut groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok())
            .filter(|o| !o.is_empty())
            .map(str::to_string)
            .collect();
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_string());
        }
        Some(Self(Caller {
            username,
            uid: None,
            groups,
            extra: Default::default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DnType, KeyPair};

    use super::*;

    #[test]
    fn the_subject_names_the_user_and_groups() {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "carol");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "ray-users");
        let key = KeyPair::generate().unwrap();
        let der = params.self_signed(&key).unwrap().der().to_vec();
        let identity = ClientCertificate::from_der(&der).unwrap();
        assert_eq!(identity.0.username, "carol");
        assert_eq!(identity.0.groups, ["ray-users", AUTHENTICATED]);
        assert!(ClientCertificate::from_der(b"not a certificate").is_none());
    }
}
