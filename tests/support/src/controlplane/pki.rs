//! Certificates and keys for a throw-away control plane: a CA, the API server's serving certificate, the
//! kubelet's serving certificate and the API server's client certificate for it, and the key pair that signs
//! service-account tokens. Everything is generated fresh for each environment and lives
//! only in its temporary directory. [`Authority`] also makes the OCI registry's CA and certificate.

use std::{fs, os::unix::fs::PermissionsExt, path::Path};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

use crate::error::{Error, Result};

/// Paths of the generated material.
#[derive(Debug, Clone)]
pub struct Pki {
    pub ca_cert: std::path::PathBuf,
    pub ca_key: std::path::PathBuf,
    pub serving_cert: std::path::PathBuf,
    pub serving_key: std::path::PathBuf,
    pub service_account_key: std::path::PathBuf,
    pub service_account_pub: std::path::PathBuf,
    /// The simulated kubelet's serving certificate (its streaming endpoint), valid for the same addresses.
    pub kubelet_cert: std::path::PathBuf,
    pub kubelet_key: std::path::PathBuf,
    /// What the API server presents to the kubelet (`--kubelet-client-certificate`), named
    /// [`KUBELET_CLIENT_CN`].
    pub kubelet_client_cert: std::path::PathBuf,
    pub kubelet_client_key: std::path::PathBuf,
}

/// The common name of the API server's kubelet client certificate, as kubeadm names it; the kubelet serves
/// no one else.
pub const KUBELET_CLIENT_CN: &str = "kube-apiserver-kubelet-client";

/// The first address of the service CIDR, which the API server reserves for the `kubernetes` Service.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

impl Pki {
    /// Generates everything; `extra_addresses` are more names or IPs the API server is reached at.
    pub fn generate(dir: &Path, extra_addresses: &[String]) -> Result<Self> {
        fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;

        let ca = Authority::generate("kuberay-testenv-ca")?;
        let mut names = vec![
            "127.0.0.1".to_string(),
            "localhost".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default".to_string(),
            "kubernetes.default.svc".to_string(),
            "kubernetes.default.svc.cluster.local".to_string(),
            KUBERNETES_SERVICE_IP.to_string(),
        ];
        names.extend(extra_addresses.iter().cloned());
        let serving = ca.serving_certificate("kube-apiserver", names.clone())?;
        let kubelet = ca.serving_certificate("kubelet", names)?;
        let kubelet_client = ca.client_certificate(KUBELET_CLIENT_CN, "system:masters")?;

        let sa_key = KeyPair::generate()?;

        let pki = Self {
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            serving_cert: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            service_account_key: dir.join("sa.key"),
            service_account_pub: dir.join("sa.pub"),
            kubelet_cert: dir.join("kubelet.crt"),
            kubelet_key: dir.join("kubelet.key"),
            kubelet_client_cert: dir.join("apiserver-kubelet-client.crt"),
            kubelet_client_key: dir.join("apiserver-kubelet-client.key"),
        };
        write(&pki.ca_cert, &ca.cert_pem(), 0o644)?;
        write(&pki.ca_key, &ca.key_pem(), 0o600)?;
        write(&pki.serving_cert, &serving.cert_pem, 0o644)?;
        write(&pki.serving_key, &serving.key_pem, 0o600)?;
        write(&pki.service_account_key, &sa_key.serialize_pem(), 0o600)?;
        write(&pki.service_account_pub, &sa_key.public_key_pem(), 0o644)?;
        write(&pki.kubelet_cert, &kubelet.cert_pem, 0o644)?;
        write(&pki.kubelet_key, &kubelet.key_pem, 0o600)?;
        write(&pki.kubelet_client_cert, &kubelet_client.cert_pem, 0o644)?;
        write(&pki.kubelet_client_key, &kubelet_client.key_pem, 0o600)?;
        Ok(pki)
    }
}

/// A certificate authority generated in memory, which signs serving certificates (the API server's, the OCI
/// registry's).
pub(crate) struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its private key, PEM-encoded.
pub(crate) struct ServingCertificate {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

impl Authority {
    /// A fresh self-signed CA named `common_name`.
    pub(crate) fn generate(common_name: &str) -> Result<Self> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        Ok(Self {
            issuer: CertifiedIssuer::self_signed(params, key)?,
        })
    }

    pub(crate) fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    pub(crate) fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// A server certificate valid for `names` (DNS names or IP addresses), signed by this CA.
    pub(crate) fn serving_certificate(
        &self,
        common_name: &str,
        names: Vec<String>,
    ) -> Result<ServingCertificate> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(ServingCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A client certificate for `common_name` in `organization` (a Kubernetes user and group), signed by
    /// this CA.
    pub(crate) fn client_certificate(
        &self,
        common_name: &str,
        organization: &str,
    ) -> Result<ServingCertificate> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, common_name);
        params
            .distinguished_name
            .push(DnType::OrganizationName, organization);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(ServingCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

pub(crate) fn write(path: &Path, contents: &str, mode: u32) -> Result<()> {
    fs::write(path, contents).map_err(Error::io(format!("writing {}", path.display())))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(Error::io(format!("setting permissions of {}", path.display())))
}
