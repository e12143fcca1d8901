//! Certificates and keys for a throw-away control plane: a CA, the API server's serving certificate and the
//! key pair that signs service-account tokens. Everything is generated fresh for each environment and lives
//! only in its temporary directory.

use std::{fs, os::unix::fs::PermissionsExt, path::Path};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
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
}

/// The first address of the service CIDR, which the API server reserves for the `kubernetes` Service.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

impl Pki {
    /// Generates everything; `extra_addresses` are more names or IPs the API server is reached at.
    pub fn generate(dir: &Path, extra_addresses: &[String]) -> Result<Self> {
        fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;

        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kuberay-testenv-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, &ca_key);

        let serving_key = KeyPair::generate()?;
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
        let mut serving_params = CertificateParams::new(names)?;
        serving_params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        serving_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let serving_cert = serving_params.signed_by(&serving_key, &issuer)?;

        let sa_key = KeyPair::generate()?;

        let pki = Self {
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            serving_cert: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            service_account_key: dir.join("sa.key"),
            service_account_pub: dir.join("sa.pub"),
        };
        write(&pki.ca_cert, &ca_cert.pem(), 0o644)?;
        write(&pki.ca_key, &ca_key.serialize_pem(), 0o600)?;
        write(&pki.serving_cert, &serving_cert.pem(), 0o644)?;
        write(&pki.serving_key, &serving_key.serialize_pem(), 0o600)?;
        write(&pki.service_account_key, &sa_key.serialize_pem(), 0o600)?;
        write(&pki.service_account_pub, &sa_key.public_key_pem(), 0o644)?;
        Ok(pki)
    }
}

pub(crate) fn write(path: &Path, contents: &str, mode: u32) -> Result<()> {
    fs::write(path, contents).map_err(Error::io(format!("writing {}", path.display())))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(Error::io(format!("setting permissions of {}", path.display())))
}
