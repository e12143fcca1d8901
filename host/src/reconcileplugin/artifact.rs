//! Plugin components as OCI artifacts, in the layout the WebAssembly tooling uses (the CNCF "Wasm OCI
//! Artifact" layout): an image manifest whose config has the media type [`CONFIG_MEDIA_TYPE`] and whose one
//! layer is the component, [`LAYER_MEDIA_TYPE`]. Pulled by digest for `ReconcilePlugin` resources, pushed by
//! `kuberay-wasm plugin push`.
//!
//! A pull is bounded before anything large is read: the manifest must pin what it describes (its digest is
//! checked against the reference's), the layer must declare a size within [`MAX_COMPONENT_BYTES`] and is
//! read into a buffer that refuses to grow past it, and the layer's bytes must hash to the digest the
//! manifest names.
//!
//! This is the one module that talks to registries: `signature.rs` reads and writes cosign's signature images
//! through [`Registry::manifest`], [`Registry::blob`] and [`Registry::push_image`], bounded the same way.

use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use oci_client::secrets::RegistryAuth;
use oci_client::{
    Client, Reference,
    client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol},
    manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest},
};
use sha2::{Digest as _, Sha256};

use crate::sandbox::MAX_COMPONENT_BYTES;

/// The config media type of a WebAssembly artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a WebAssembly component.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer media type of older wasm tooling (wasm-to-oci), accepted when pulling.
const LEGACY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// The largest manifest read (a wasm artifact's is well under 1 KiB).
const MAX_MANIFEST_BYTES: usize = 64 << 10;

/// Why an artifact could not be pulled or pushed. [`ArtifactError::reason`] is the condition reason.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("{0:?} is not a registry reference: {1}")]
    Reference(String, String),
    #[error(
        "{0:?} names a tag, not a digest: pin it as <repository>@sha256:<digest> (the operator was not started with --allow-plugin-tags)"
    )]
    NotPinned(String),
    #[error("the registry refused the credentials: {0}")]
    Unauthorized(String),
    #[error("not found in the registry: {0}")]
    NotFound(String),
    #[error("the registry could not be reached: {0}")]
    Unreachable(String),
    #[error("the manifest's digest is {actual}, not the {expected} the reference pins")]
    DigestMismatch { expected: String, actual: String },
    #[error("not a WebAssembly component artifact: {0}")]
    NotAComponent(String),
    #[error("the component is {0} bytes, more than the {MAX_COMPONENT_BYTES} a plugin may have")]
    TooLarge(u64),
    #[error("{what} is larger than the {limit} bytes read")]
    Oversized { what: String, limit: u64 },
    #[error("the registry client: {0}")]
    Client(String),
}

impl ArtifactError {
    /// A short UpperCamelCase reason for conditions and Events.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Reference(..) | Self::NotPinned(_) => "InvalidArtifact",
            Self::Unauthorized(_) => "RegistryUnauthorized",
            Self::NotFound(_) => "ArtifactNotFound",
            Self::Unreachable(_) | Self::Client(_) => "RegistryUnavailable",
            Self::DigestMismatch { .. } => "DigestMismatch",
            Self::NotAComponent(_) | Self::TooLarge(_) | Self::Oversized { .. } => "NotAComponent",
        }
    }
}

/// A pulled component.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// `sha256:<hex>` of the manifest: what a resource pins.
    pub manifest_digest: String,
    pub wasm: Vec<u8>,
}

/// How the registry client connects.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// PEM certificates trusted besides the system's (a private registry's CA).
    pub extra_roots: Vec<Vec<u8>>,
    /// Connect and read timeout of each request.
    pub timeout: Duration,
}

/// Parses `reference` and, unless `allow_tags`, requires it to pin a digest.
pub fn parse_reference(reference: &str, allow_tags: bool) -> Result<Reference, ArtifactError> {
    let parsed: Reference = reference
        .parse()
        .map_err(|e: oci_client::ParseError| ArtifactError::Reference(reference.into(), e.to_string()))?;
    if parsed.digest().is_none() && !allow_tags {
        return Err(ArtifactError::NotPinned(reference.into()));
    }
    Ok(parsed)
}

/// A client of OCI registries. Every operation runs on a client of its own: oci-client keeps the first
/// credentials (and tokens) it is given per registry for its lifetime, so a shared client would pull for one
/// resource with another's credentials, and a rotated pull Secret would never take effect.
pub struct Registry {
    options: RegistryOptions,
}

impl Registry {
    /// A client with `options`.
    pub fn new(options: &RegistryOptions) -> Result<Self, ArtifactError> {
        // reqwest built without a provider takes the process default, and panics when there is none: install
        // ring, the one kube uses (an error only says another was installed first, which then serves).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = Self {
            options: options.clone(),
        };
        // The options are checked now (a CA that is not PEM), not at the first pull.
        registry.client()?;
        Ok(registry)
    }

    /// A client with no credentials or tokens yet.
    fn client(&self) -> Result<Client, ArtifactError> {
        let config = ClientConfig {
            protocol: ClientProtocol::Https,
            extra_root_certificates: self
                .options
                .extra_roots
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.clone(),
                })
                .collect(),
            // A manifest list is not a plugin: refuse rather than pick a platform.
            platform_resolver: None,
            connect_timeout: Some(self.options.timeout),
            read_timeout: Some(self.options.timeout),
            ..ClientConfig::default()
        };
        Client::try_from(config).map_err(|e| ArtifactError::Client(e.to_string()))
    }

    /// Pulls the component `reference` names, checking every digest on the way.
    pub async fn pull(&self, reference: &Reference, auth: &RegistryAuth) -> Result<Pulled, ArtifactError> {
        let client = self.client()?;
        let (raw, _) = client
            .pull_manifest_raw(reference, auth, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .map_err(|e| classify(reference, e))?;
        if raw.len() > MAX_MANIFEST_BYTES {
            return Err(ArtifactError::NotAComponent(format!(
                "its manifest is {} bytes",
                raw.len()
            )));
        }
        let manifest_digest = match reference.digest() {
            Some(pinned) => check_digest(pinned, &raw)?,
            None => sha256_digest(&raw),
        };
        let layer = component_layer(&raw)?;
        let mut wasm = BoundedBuffer::new(MAX_COMPONENT_BYTES);
        client
            .pull_blob(reference, &layer, &mut wasm)
            .await
            .map_err(|e| match wasm.overflowed {
                true => ArtifactError::TooLarge(wasm.len),
                false => classify(reference, e),
            })?;
        let wasm = wasm.data;
        check_digest(&layer.digest, &wasm)?;
        Ok(Pulled {
            manifest_digest,
            wasm,
        })
    }

    /// Pushes `wasm` as a component artifact to `reference` (a tag, or none) and returns the manifest's
    /// digest, which a `ReconcilePlugin` pins.
    pub async fn push(
        &self,
        reference: &Reference,
        auth: &RegistryAuth,
        wasm: Vec<u8>,
    ) -> Result<String, ArtifactError> {
        let layer_digest = sha256_digest(&wasm);
        let config = serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer_digest],
        });
        let config = serde_json::to_vec(&config).map_err(|e| ArtifactError::Client(e.to_string()))?;
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
            config: descriptor(CONFIG_MEDIA_TYPE, &config),
            layers: vec![descriptor(LAYER_MEDIA_TYPE, &wasm)],
            artifact_type: Some(CONFIG_MEDIA_TYPE.into()),
            ..OciImageManifest::default()
        };
        self.push_image(reference, auth, vec![wasm, config], &manifest)
            .await
    }

    /// Pushes `blobs`, then `manifest` (an OCI image manifest naming them, or blobs already in the repository)
    /// to `reference`; returns the manifest's digest.
    pub async fn push_image(
        &self,
        reference: &Reference,
        auth: &RegistryAuth,
        blobs: Vec<Vec<u8>>,
        manifest: &OciImageManifest,
    ) -> Result<String, ArtifactError> {
        let client = self.client()?;
        client
            .auth(reference, auth, oci_client::RegistryOperation::Push)
            .await
            .map_err(|e| classify(reference, e))?;
        for blob in blobs {
            let digest = sha256_digest(&blob);
            client
                .push_blob(reference, blob, &digest)
                .await
                .map_err(|e| classify(reference, e))?;
        }
        let manifest = serde_json::to_vec(manifest).map_err(|e| ArtifactError::Client(e.to_string()))?;
        let digest = sha256_digest(&manifest);
        let content_type = http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE);
        client
            .push_manifest_raw(reference, manifest, content_type)
            .await
            .map_err(|e| classify(reference, e))?;
        Ok(digest)
    }

    /// The raw manifest `reference` names, if the registry has one of the `accepted` media types, at most `max`
    /// bytes (the client reads a manifest whole: the bound is checked after, as [`Registry::pull`] does).
    pub async fn manifest(
        &self,
        reference: &Reference,
        auth: &RegistryAuth,
        accepted: &[&str],
        max: usize,
    ) -> Result<Option<Vec<u8>>, ArtifactError> {
        let raw = match self.client()?.pull_manifest_raw(reference, auth, accepted).await {
            Ok((raw, _)) => raw,
            Err(e) => {
                return match classify(reference, e) {
                    ArtifactError::NotFound(_) => Ok(None),
                    other => Err(other),
                };
            }
        };
        if raw.len() > max {
            return Err(ArtifactError::Oversized {
                what: format!("the manifest {reference}"),
                limit: max as u64,
            });
        }
        Ok(Some(raw.to_vec()))
    }

    /// The blob `descriptor` names in `reference`'s repository, read up to `max` bytes (its declared size is
    /// checked first), its digest checked.
    pub async fn blob(
        &self,
        reference: &Reference,
        auth: &RegistryAuth,
        descriptor: &OciDescriptor,
        max: u64,
    ) -> Result<Vec<u8>, ArtifactError> {
        let oversized = || ArtifactError::Oversized {
            what: format!("the blob {}", descriptor.digest),
            limit: max,
        };
        if !u64::try_from(descriptor.size).is_ok_and(|size| size <= max) {
            return Err(oversized());
        }
        let client = self.client()?;
        client
            .auth(reference, auth, oci_client::RegistryOperation::Pull)
            .await
            .map_err(|e| classify(reference, e))?;
        let mut buffer = BoundedBuffer::new(max);
        client
            .pull_blob(reference, descriptor, &mut buffer)
            .await
            .map_err(|e| match buffer.overflowed {
                true => oversized(),
                false => classify(reference, e),
            })?;
        check_digest(&descriptor.digest, &buffer.data)?;
        Ok(buffer.data)
    }
}

/// The digest of `bytes`, if it is `expected` (what the registry served is what was pinned or listed).
fn check_digest(expected: &str, bytes: &[u8]) -> Result<String, ArtifactError> {
    let actual = sha256_digest(bytes);
    if actual != expected {
        return Err(ArtifactError::DigestMismatch {
            expected: expected.into(),
            actual,
        });
    }
    Ok(actual)
}

/// The descriptor of `blob` with `media_type`.
pub fn descriptor(media_type: &str, blob: &[u8]) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.into(),
        digest: sha256_digest(blob),
        size: i64::try_from(blob.len()).unwrap_or(i64::MAX),
        ..OciDescriptor::default()
    }
}

/// The one component layer of a manifest, if it is a wasm artifact's.
fn component_layer(raw: &[u8]) -> Result<OciDescriptor, ArtifactError> {
    let manifest: OciImageManifest = serde_json::from_slice(raw)
        .map_err(|e| ArtifactError::NotAComponent(format!("its manifest: {e}")))?;
    let [layer] = manifest.layers.as_slice() else {
        return Err(ArtifactError::NotAComponent(format!(
            "it has {} layers, not one",
            manifest.layers.len()
        )));
    };
    if layer.media_type != LAYER_MEDIA_TYPE && layer.media_type != LEGACY_LAYER_MEDIA_TYPE {
        return Err(ArtifactError::NotAComponent(format!(
            "its layer is {:?}, not {LAYER_MEDIA_TYPE}",
            layer.media_type
        )));
    }
    let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
    if size > MAX_COMPONENT_BYTES {
        return Err(ArtifactError::TooLarge(size));
    }
    Ok(layer.clone())
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    for byte in hash {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

fn classify(reference: &Reference, error: oci_client::errors::OciDistributionError) -> ArtifactError {
    use oci_client::errors::OciDistributionError as E;
    let text = format!("{reference}: {error}");
    match &error {
        E::AuthenticationFailure(_) | E::UnauthorizedError { .. } => ArtifactError::Unauthorized(text),
        E::ImageManifestNotFoundError(_) => ArtifactError::NotFound(text),
        E::RequestError(e) if e.is_connect() || e.is_timeout() => ArtifactError::Unreachable(text),
        // A registry with basic authentication (no token service) answers a wrong password this way.
        E::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::Unauthorized | oci_client::errors::OciErrorCode::Denied
                )
            }) =>
        {
            ArtifactError::Unauthorized(text)
        }
        E::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::ManifestUnknown
                        | oci_client::errors::OciErrorCode::NameUnknown
                        | oci_client::errors::OciErrorCode::BlobUnknown
                )
            }) =>
        {
            ArtifactError::NotFound(text)
        }
        E::ServerError { code: 404, .. } => ArtifactError::NotFound(text),
        E::ServerError { code: 401 | 403, .. } => ArtifactError::Unauthorized(text),
        _ => ArtifactError::Unreachable(text),
    }
}

/// A buffer that refuses to grow past `limit` bytes.
struct BoundedBuffer {
    data: Vec<u8>,
    len: u64,
    limit: u64,
    overflowed: bool,
}

impl BoundedBuffer {
    fn new(limit: u64) -> Self {
        Self {
            data: Vec::new(),
            len: 0,
            limit,
            overflowed: false,
        }
    }
}

impl tokio::io::AsyncWrite for BoundedBuffer {
    fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.len += buf.len() as u64;
        if self.len > self.limit {
            self.overflowed = true;
            return Poll::Ready(Err(std::io::Error::other("the blob is larger than its bound")));
        }
        self.data.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_must_pin_a_digest_unless_tags_are_allowed() {
        let digest = format!("sha256:{}", "a".repeat(64));
        assert!(parse_reference(&format!("127.0.0.1:5000/plugins/rc@{digest}"), false).is_ok());
        assert!(matches!(
            parse_reference("127.0.0.1:5000/plugins/rc:v2", false),
            Err(ArtifactError::NotPinned(_))
        ));
        assert!(parse_reference("127.0.0.1:5000/plugins/rc:v2", true).is_ok());
        assert!(matches!(
            parse_reference("Not A Reference!", true),
            Err(ArtifactError::Reference(..))
        ));
    }

    #[test]
    fn bytes_that_are_not_what_was_pinned_are_refused() {
        let pinned = sha256_digest(b"the manifest");
        assert_eq!(check_digest(&pinned, b"the manifest").unwrap(), pinned);
        let error = check_digest(&pinned, b"another manifest").unwrap_err();
        assert_eq!(error.reason(), "DigestMismatch");
        assert!(error.to_string().contains(&pinned), "{error}");
    }

    #[test]
    fn only_a_one_layer_wasm_manifest_within_the_size_bound_is_a_component() {
        let manifest = |layers: serde_json::Value| {
            serde_json::to_vec(&serde_json::json!({
                "schemaVersion": 2,
                "mediaType": OCI_IMAGE_MEDIA_TYPE,
                "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": sha256_digest(b"{}"), "size": 2},
                "layers": layers,
            }))
            .unwrap_or_default()
        };
        let layer = |media_type: &str, size: u64| serde_json::json!({"mediaType": media_type, "digest": sha256_digest(b"x"), "size": size});
        assert!(component_layer(&manifest(serde_json::json!([layer(LAYER_MEDIA_TYPE, 1)]))).is_ok());
        assert!(component_layer(&manifest(serde_json::json!([layer(LEGACY_LAYER_MEDIA_TYPE, 1)]))).is_ok());
        for bad in [
            serde_json::json!([]),
            serde_json::json!([layer(LAYER_MEDIA_TYPE, 1), layer(LAYER_MEDIA_TYPE, 1)]),
            serde_json::json!([layer("application/vnd.oci.image.layer.v1.tar+gzip", 1)]),
            serde_json::json!([layer(LAYER_MEDIA_TYPE, MAX_COMPONENT_BYTES + 1)]),
        ] {
            assert!(component_layer(&manifest(bad.clone())).is_err(), "{bad}");
        }
        assert!(component_layer(b"not json").is_err());
    }
}
