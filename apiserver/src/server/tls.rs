//! TLS for both ports: the server's certificate and key, and optionally the CAs whose client certificates
//! are accepted as identities. Clients without a certificate are still let in (they authenticate with a
//! bearer token); a certificate that does not verify ends the handshake.

use std::{path::Path, sync::Arc};

use anyhow::Context;
use rustls::{
    RootCertStore, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::WebPkiClientVerifier,
};

/// A server configuration offering HTTP/2 and HTTP/1.1 (gRPC needs h2).
pub fn server_config(cert: &Path, key: &Path, client_ca: Option<&Path>) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing the certificates in {}", cert.display()))?;
    anyhow::ensure!(!chain.is_empty(), "{} holds no certificate", cert.display());
    let key =
        PrivateKeyDer::from_pem_file(key).with_context(|| format!("reading the key {}", key.display()))?;
    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = RootCertStore::empty();
            for ca in
                CertificateDer::pem_file_iter(path).with_context(|| format!("reading {}", path.display()))?
            {
                roots
                    .add(ca.with_context(|| format!("parsing {}", path.display()))?)
                    .with_context(|| format!("adding a CA of {}", path.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .context("building the client certificate verifier")?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .context("the TLS certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
