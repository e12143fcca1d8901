//! Cosign signatures of plugin artifacts: checked when a `ReconcilePlugin` names a public key
//! (`spec.verification.publicKey`), written by `kuberay-wasm plugin push --sign-key`.
//!
//! The scheme is cosign's classic keyed one, which needs nothing but the registry and the key (no network
//! service, no clock):
//! - the signatures of the manifest `sha256:<hex>` are an image tagged `sha256-<hex>.sig` in the same
//!   repository ([`signature_reference`]);
//! - each of its layers is one signature: media type [`SIMPLE_SIGNING_MEDIA_TYPE`], its blob the "simple
//!   signing" payload, a JSON document whose `critical.image.docker-manifest-digest` is the signed digest,
//!   `critical.type` is [`SIGNATURE_TYPE`] and `critical.identity.docker-reference` the repository the signer
//!   meant (`registry/repository`, Docker Hub as `index.docker.io`);
//! - the layer's annotation [`SIGNATURE_ANNOTATION`] is the base64 of an ECDSA P-256 signature (SHA-256,
//!   ASN.1 DER) over the exact bytes of that payload.
//!
//! A version is accepted when one layer is signed by the key for its digest and its repository. The
//! signature is checked before the payload is read as JSON, so a refusal says whether the key signed
//! something else or did not sign at all. The repository claim is checked although cosign's own `verify`
//! does not: a key that signs the plugins of several repositories signs each for its own. (So a signature
//! copied with its artifact to a mirror under another name is refused there; sign the mirror's copy.)
//!
//! What is read is bounded: the signature manifest ([`MAX_MANIFEST_BYTES`]), its layers ([`MAX_LAYERS`]; cosign
//! appends one per signing) and each payload ([`MAX_PAYLOAD_BYTES`], its declared size checked before it is
//! fetched, its digest after).
//!
//! Not supported: keyless signatures (a Fulcio certificate and the Rekor transparency log, which need those
//! services or their trust roots), signatures in the newer Sigstore bundle format (what cosign v3 writes
//! unless told `--new-bundle-format=false`), and keys other than ECDSA P-256 (cosign's default). The
//! `sigstore` crate does all of that but was not taken: its `cosign` feature brings Fulcio, OAuth, a web
//! browser launcher and aws-lc-rs for keyless signing, a second crypto and TLS stack for what is here a few
//! dozen lines over RustCrypto's `p256`.

use std::collections::BTreeMap;

use base64::Engine as _;
use oci_client::{
    Reference,
    manifest::{
        IMAGE_CONFIG_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
        OciImageManifest,
    },
    secrets::RegistryAuth,
};
use p256::{
    ecdsa::{
        self,
        signature::{Signer as _, Verifier as _},
    },
    elliptic_curve::{Generate as _, zeroize::Zeroizing},
    pkcs8::{
        DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _, EncodePublicKey as _, LineEnding,
    },
};
use serde::{Deserialize, Serialize};

use super::artifact::{self, ArtifactError, Registry};

/// The media type of a signature layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// `critical.type` of a cosign payload.
pub const SIGNATURE_TYPE: &str = "cosign container image signature";
/// The largest signature manifest read (a keyed layer's descriptor is about 300 bytes; keyless ones carry a
/// certificate and a transparency-log bundle of a few KiB).
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;
/// The most signatures (layers) one signature image may have.
pub const MAX_LAYERS: usize = 64;
/// The largest payload read (cosign's is about 250 bytes, more with annotations).
pub const MAX_PAYLOAD_BYTES: u64 = 16 << 10;
/// How many refused signatures an error lists.
const REFUSALS_LISTED: usize = 4;

/// Why a version's signature was not accepted, or a signature not written. [`SignatureError::reason`] is the
/// condition reason.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    #[error("the public key is not a PEM ECDSA P-256 public key: {0}")]
    InvalidPublicKey(String),
    #[error("the signing key is not an unencrypted PKCS#8 PEM ECDSA P-256 private key: {0}")]
    InvalidSigningKey(String),
    #[error(
        "{artifact} is not signed: the registry has no signature image {signatures} (where cosign puts the signatures of that digest; cosign v3 puts them there with `sign --new-bundle-format=false`)"
    )]
    NotSigned { artifact: String, signatures: String },
    #[error(
        "no signature of {artifact} verifies with the key {fingerprint}: {}",
        list(refusals)
    )]
    NoValidSignature {
        artifact: String,
        fingerprint: String,
        refusals: Vec<String>,
    },
    #[error("{signatures} is not a cosign signature image: {why}")]
    Malformed { signatures: String, why: String },
    #[error("reading or writing the signatures: {0}")]
    Registry(ArtifactError),
}

impl SignatureError {
    /// A short UpperCamelCase reason for conditions and Events.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidPublicKey(_) => "InvalidPublicKey",
            Self::InvalidSigningKey(_) => "InvalidSigningKey",
            Self::NotSigned { .. } => "SignatureMissing",
            Self::NoValidSignature { .. } | Self::Malformed { .. } => "SignatureInvalid",
            Self::Registry(e) => e.reason(),
        }
    }

    /// Worth trying again without a change of the spec: the registry could not be read, or the version is not
    /// signed yet (cosign signs an artifact after it is pushed).
    pub fn transient(&self) -> bool {
        match self {
            Self::NotSigned { .. } => true,
            Self::Registry(e) => matches!(
                e,
                ArtifactError::Unreachable(_) | ArtifactError::NotFound(_) | ArtifactError::Unauthorized(_)
            ),
            _ => false,
        }
    }
}

fn list(refusals: &[String]) -> String {
    let mut text = refusals
        .iter()
        .take(REFUSALS_LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if refusals.len() > REFUSALS_LISTED {
        text.push_str(&format!("; and {} more", refusals.len() - REFUSALS_LISTED));
    }
    text
}

/// An ECDSA P-256 public key, as `cosign generate-key-pair` and `kuberay-wasm plugin keygen` write it.
#[derive(Clone, Debug, PartialEq)]
pub struct PublicKey {
    key: ecdsa::VerifyingKey,
    fingerprint: String,
}

impl PublicKey {
    /// Reads a PEM `PUBLIC KEY` (SubjectPublicKeyInfo).
    pub fn from_pem(pem: &str) -> Result<Self, SignatureError> {
        let pem = pem.trim();
        if pem.is_empty() {
            return Err(SignatureError::InvalidPublicKey("it is empty".into()));
        }
        let key = ecdsa::VerifyingKey::from_public_key_pem(pem).map_err(|e| {
            SignatureError::InvalidPublicKey(if pem.contains("PRIVATE KEY-----") {
                "it is a private key; give its public key".into()
            } else if pem.contains("-----BEGIN PUBLIC KEY-----") {
                format!("not an ECDSA P-256 key ({e})")
            } else {
                format!("not a PEM `PUBLIC KEY` ({e})")
            })
        })?;
        Ok(Self::from_key(key))
    }

    fn from_key(key: ecdsa::VerifyingKey) -> Self {
        let fingerprint = key
            .to_public_key_der()
            .map(|der| artifact::sha256_digest(der.as_bytes()))
            .unwrap_or_default();
        Self { key, fingerprint }
    }

    /// `sha256:<hex>` of the key's DER SubjectPublicKeyInfo: the same for any PEM spelling of the key.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The key as a PEM `PUBLIC KEY`.
    pub fn to_pem(&self) -> Result<String, SignatureError> {
        self.key
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| SignatureError::InvalidPublicKey(e.to_string()))
    }

    fn verify(&self, payload: &[u8], signature: &ecdsa::Signature) -> bool {
        self.key.verify(payload, signature).is_ok()
    }
}

/// An ECDSA P-256 private key that signs plugin artifacts.
pub struct SigningKey {
    key: ecdsa::SigningKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public_key().fingerprint)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key from the operating system's randomness.
    pub fn generate() -> Result<Self, SignatureError> {
        let key = ecdsa::SigningKey::try_generate()
            .map_err(|e| SignatureError::InvalidSigningKey(format!("no randomness: {e}")))?;
        Ok(Self { key })
    }

    /// Reads an unencrypted PKCS#8 PEM `PRIVATE KEY`.
    pub fn from_pem(pem: &str) -> Result<Self, SignatureError> {
        let pem = pem.trim();
        let key = ecdsa::SigningKey::from_pkcs8_pem(pem).map_err(|e| {
            SignatureError::InvalidSigningKey(if pem.contains("ENCRYPTED SIGSTORE PRIVATE KEY")
                || pem.contains("ENCRYPTED COSIGN PRIVATE KEY")
            {
                "cosign's encrypted keys are not read; make one with `kuberay-wasm plugin keygen`, or sign with cosign".into()
            } else if pem.contains("-----BEGIN EC PRIVATE KEY-----") {
                "it is a SEC1 key; convert it with `openssl pkcs8 -topk8 -nocrypt`".into()
            } else {
                e.to_string()
            })
        })?;
        Ok(Self { key })
    }

    /// The key as an unencrypted PKCS#8 PEM `PRIVATE KEY`.
    pub fn to_pem(&self) -> Result<Zeroizing<String>, SignatureError> {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| SignatureError::InvalidSigningKey(e.to_string()))
    }

    /// Its public key.
    pub fn public_key(&self) -> PublicKey {
        PublicKey::from_key(*self.key.verifying_key())
    }

    /// The base64 ASN.1 DER signature of `payload`, as cosign's annotation holds it.
    fn sign(&self, payload: &[u8]) -> String {
        let signature: ecdsa::Signature = self.key.sign(payload);
        base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
    }
}

/// Where cosign keeps the signatures of `digest` (`alg:hex`): the tag `alg-hex.sig` of `reference`'s repository.
pub fn signature_reference(reference: &Reference, digest: &str) -> Reference {
    Reference::with_tag(
        reference.registry().to_string(),
        reference.repository().to_string(),
        format!("{}.sig", digest.replacen(':', "-", 1)),
    )
}

/// The repository as cosign names it in a payload's `docker-reference`.
fn cosign_identity(reference: &Reference) -> String {
    let registry = match reference.registry() {
        "docker.io" => "index.docker.io",
        other => other,
    };
    format!("{registry}/{}", reference.repository())
}

/// `registry/repository@digest`, for messages.
fn artifact_name(reference: &Reference, digest: &str) -> String {
    format!("{}/{}@{digest}", reference.registry(), reference.repository())
}

/// Cosign's simple-signing payload. The fields are in the order cosign's JSON has them, so the bytes this
/// writes are the bytes cosign writes for the same image.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    critical: Critical,
    #[serde(default)]
    optional: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    type_: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// The payload cosign signs for `digest` in `reference`'s repository.
fn payload(reference: &Reference, digest: &str) -> Vec<u8> {
    let payload = Payload {
        critical: Critical {
            identity: Identity {
                docker_reference: cosign_identity(reference),
            },
            image: Image {
                docker_manifest_digest: digest.into(),
            },
            type_: SIGNATURE_TYPE.into(),
        },
        optional: None,
    };
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// Why one signature (layer) was not accepted.
#[derive(Debug, PartialEq, thiserror::Error)]
enum Refusal {
    #[error("its media type is {0:?}, not {SIMPLE_SIGNING_MEDIA_TYPE}")]
    MediaType(String),
    #[error("it has no {SIGNATURE_ANNOTATION} annotation")]
    NoSignature,
    #[error("its signature is not base64 ASN.1 DER ECDSA ({0})")]
    Encoding(String),
    #[error("its payload could not be read ({0})")]
    Payload(String),
    #[error("its signature does not verify with the key (another key signed it, or the payload was altered)")]
    BadSignature,
    #[error("the key signed it, but it is not a cosign image signature ({0})")]
    NotCosign(String),
    #[error("the key signed it for {0}, not for this digest")]
    OtherDigest(String),
    #[error("the key signed it for the repository {0:?}, not this one")]
    OtherRepository(String),
}

/// The signature in a layer's annotation, decoded before its payload is fetched.
fn decode_signature(layer: &OciDescriptor) -> Result<ecdsa::Signature, Refusal> {
    if layer.media_type != SIMPLE_SIGNING_MEDIA_TYPE {
        return Err(Refusal::MediaType(layer.media_type.clone()));
    }
    let encoded = layer
        .annotations
        .as_ref()
        .and_then(|a| a.get(SIGNATURE_ANNOTATION))
        .ok_or(Refusal::NoSignature)?;
    let der = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| Refusal::Encoding(e.to_string()))?;
    ecdsa::Signature::from_der(&der).map_err(|e| Refusal::Encoding(e.to_string()))
}

/// Accepts `payload` if `key` signed it for `digest` in `reference`'s repository.
fn check_payload(
    payload: &[u8],
    signature: &ecdsa::Signature,
    key: &PublicKey,
    reference: &Reference,
    digest: &str,
) -> Result<(), Refusal> {
    if !key.verify(payload, signature) {
        return Err(Refusal::BadSignature);
    }
    let claims: Payload = serde_json::from_slice(payload).map_err(|e| Refusal::NotCosign(e.to_string()))?;
    let critical = claims.critical;
    if critical.type_ != SIGNATURE_TYPE {
        return Err(Refusal::NotCosign(format!("its type is {:?}", critical.type_)));
    }
    if critical.image.docker_manifest_digest != digest {
        return Err(Refusal::OtherDigest(critical.image.docker_manifest_digest));
    }
    // cosign writes the repository; with --sign-container-identity, any reference, which may carry a tag or a
    // digest: the repository is what must match (Docker Hub's two spellings are one).
    let claimed = critical.identity.docker_reference;
    let same = claimed
        .parse::<Reference>()
        .is_ok_and(|r| r.registry() == reference.registry() && r.repository() == reference.repository());
    if !same {
        return Err(Refusal::OtherRepository(claimed));
    }
    Ok(())
}

/// What verifying and signing need of a registry; a trait so that the tests can keep one in memory.
trait Store {
    /// The manifest `reference` names, at most `max` bytes; `None` when there is none.
    async fn manifest(&self, reference: &Reference, max: usize) -> Result<Option<Vec<u8>>, ArtifactError>;
    /// The blob `descriptor` names in `reference`'s repository, at most `max` bytes, its digest checked.
    async fn blob(
        &self,
        reference: &Reference,
        descriptor: &OciDescriptor,
        max: u64,
    ) -> Result<Vec<u8>, ArtifactError>;
    /// Pushes `blobs`, then `manifest` as `reference`.
    async fn push(
        &self,
        reference: &Reference,
        blobs: Vec<Vec<u8>>,
        manifest: &OciImageManifest,
    ) -> Result<String, ArtifactError>;
}

struct Remote<'a> {
    registry: &'a Registry,
    auth: &'a RegistryAuth,
}

impl Store for Remote<'_> {
    async fn manifest(&self, reference: &Reference, max: usize) -> Result<Option<Vec<u8>>, ArtifactError> {
        // cosign writes OCI's media type, or Docker's with COSIGN_DOCKER_MEDIA_TYPES=1.
        let accepted = [OCI_IMAGE_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE];
        self.registry.manifest(reference, self.auth, &accepted, max).await
    }

    async fn blob(
        &self,
        reference: &Reference,
        descriptor: &OciDescriptor,
        max: u64,
    ) -> Result<Vec<u8>, ArtifactError> {
        self.registry.blob(reference, self.auth, descriptor, max).await
    }

    async fn push(
        &self,
        reference: &Reference,
        blobs: Vec<Vec<u8>>,
        manifest: &OciImageManifest,
    ) -> Result<String, ArtifactError> {
        self.registry
            .push_image(reference, self.auth, blobs, manifest)
            .await
    }
}

/// Accepts the artifact `reference` names, whose manifest digest is `manifest_digest`, when its repository
/// holds a cosign signature of that digest that `key` verifies (see the module doc).
pub async fn verify(
    registry: &Registry,
    reference: &Reference,
    auth: &RegistryAuth,
    manifest_digest: &str,
    key: &PublicKey,
) -> Result<(), SignatureError> {
    verify_in(&Remote { registry, auth }, reference, manifest_digest, key).await
}

/// Signs the artifact `reference` names, whose manifest digest is `manifest_digest`, with `key`: appends a
/// signature to the cosign signature image of that digest (made if there is none; the same signature is
/// not added twice) and returns that image's reference.
pub async fn sign(
    registry: &Registry,
    reference: &Reference,
    auth: &RegistryAuth,
    manifest_digest: &str,
    key: &SigningKey,
) -> Result<Reference, SignatureError> {
    sign_in(&Remote { registry, auth }, reference, manifest_digest, key).await
}

/// The signature manifest of `digest`, if any, parsed and bounded.
async fn signature_manifest(
    store: &impl Store,
    signatures: &Reference,
) -> Result<Option<OciImageManifest>, SignatureError> {
    let malformed = |why: String| SignatureError::Malformed {
        signatures: signatures.whole(),
        why,
    };
    let raw = match store.manifest(signatures, MAX_MANIFEST_BYTES).await {
        Ok(Some(raw)) => raw,
        Ok(None) => return Ok(None),
        Err(e @ ArtifactError::Oversized { .. }) => return Err(malformed(e.to_string())),
        Err(e) => return Err(SignatureError::Registry(e)),
    };
    let manifest: OciImageManifest =
        serde_json::from_slice(&raw).map_err(|e| malformed(format!("its manifest: {e}")))?;
    if manifest.layers.len() > MAX_LAYERS {
        return Err(malformed(format!(
            "it has {} signatures, more than the {MAX_LAYERS} read",
            manifest.layers.len()
        )));
    }
    Ok(Some(manifest))
}

async fn verify_in(
    store: &impl Store,
    reference: &Reference,
    digest: &str,
    key: &PublicKey,
) -> Result<(), SignatureError> {
    let signatures = signature_reference(reference, digest);
    let manifest = signature_manifest(store, &signatures)
        .await?
        .filter(|m| !m.layers.is_empty())
        .ok_or_else(|| SignatureError::NotSigned {
            artifact: artifact_name(reference, digest),
            signatures: signatures.whole(),
        })?;
    let count = manifest.layers.len();
    let mut refusals = Vec::new();
    for (index, layer) in manifest.layers.iter().enumerate() {
        let refusal = match decode_signature(layer) {
            Err(refusal) => refusal,
            Ok(signature) => match store.blob(&signatures, layer, MAX_PAYLOAD_BYTES).await {
                Ok(payload) => match check_payload(&payload, &signature, key, reference, digest) {
                    Ok(()) => return Ok(()),
                    Err(refusal) => refusal,
                },
                Err(e @ (ArtifactError::Oversized { .. } | ArtifactError::DigestMismatch { .. })) => {
                    Refusal::Payload(e.to_string())
                }
                Err(e) => return Err(SignatureError::Registry(e)),
            },
        };
        refusals.push(format!("signature {} of {count}: {refusal}", index + 1));
    }
    Err(SignatureError::NoValidSignature {
        artifact: artifact_name(reference, digest),
        fingerprint: key.fingerprint().into(),
        refusals,
    })
}

/// The config of a signature image, byte for byte as cosign writes it (go-containerregistry's empty image with
/// the layers appended); nothing reads it but registries that want a config.
fn config(layers: &[OciDescriptor]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Config<'a> {
        architecture: &'a str,
        created: &'a str,
        history: Vec<History<'a>>,
        os: &'a str,
        rootfs: RootFs<'a>,
        config: serde_json::Map<String, serde_json::Value>,
    }
    #[derive(Serialize)]
    struct History<'a> {
        created: &'a str,
    }
    #[derive(Serialize)]
    struct RootFs<'a> {
        #[serde(rename = "type")]
        type_: &'a str,
        diff_ids: Vec<&'a str>,
    }
    let zero = "0001-01-01T00:00:00Z";
    let config = Config {
        architecture: "",
        created: zero,
        history: layers.iter().map(|_| History { created: zero }).collect(),
        os: "",
        rootfs: RootFs {
            type_: "layers",
            diff_ids: layers.iter().map(|l| l.digest.as_str()).collect(),
        },
        config: serde_json::Map::new(),
    };
    serde_json::to_vec(&config).unwrap_or_default()
}

async fn sign_in(
    store: &impl Store,
    reference: &Reference,
    digest: &str,
    key: &SigningKey,
) -> Result<Reference, SignatureError> {
    let signatures = signature_reference(reference, digest);
    let payload = payload(reference, digest);
    let layer = OciDescriptor {
        annotations: Some(BTreeMap::from([(
            SIGNATURE_ANNOTATION.to_string(),
            key.sign(&payload),
        )])),
        ..artifact::descriptor(SIMPLE_SIGNING_MEDIA_TYPE, &payload)
    };
    // Like cosign, keep the signatures already there (other keys, earlier signings), and do not add the same
    // one twice (ECDSA here is deterministic, RFC 6979: the same key signs the same payload the same way).
    let mut layers = signature_manifest(store, &signatures)
        .await?
        .map(|m| m.layers)
        .unwrap_or_default();
    layers.retain(|l| l.digest != layer.digest || l.annotations != layer.annotations);
    if layers.len() >= MAX_LAYERS {
        return Err(SignatureError::Malformed {
            signatures: signatures.whole(),
            why: format!("it has {} signatures; one more would not be read", layers.len()),
        });
    }
    layers.push(layer);
    let config = config(&layers);
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
        config: artifact::descriptor(IMAGE_CONFIG_MEDIA_TYPE, &config),
        layers,
        ..OciImageManifest::default()
    };
    store
        .push(&signatures, vec![payload, config], &manifest)
        .await
        .map_err(SignatureError::Registry)?;
    Ok(signatures)
}

#[cfg(test)]
mod tests {
    use std::{collections::HashMap, sync::Mutex};

    use super::*;

    /// Made by cosign v3.1.3: `cosign generate-key-pair`, then `cosign sign --key cosign.key --tlog-upload=false
    /// --use-signing-config=false --new-bundle-format=false` of an artifact pushed by `kuberay-wasm plugin push`
    /// to a registry on 127.0.0.1:5443; the payload and the annotation as the registry held them.
    const COSIGN_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEH3rkiUQJKjTw6+73Y/hRR9K25PJw
VT8MdeqZXQz6QbjisWyHtzSNC8vmHbS/ecIC1RLscCHiek+eaiFWwQyU7A==
-----END PUBLIC KEY-----
";
    const COSIGN_REPOSITORY: &str = "127.0.0.1:5443/plugins/other";
    const COSIGN_DIGEST: &str = "sha256:793ed4daf8ee922b4475275d4033abcb82fd05f6d6c844ffb6a15ec1ca689af8";
    const COSIGN_PAYLOAD: &str = r#"{"critical":{"identity":{"docker-reference":"127.0.0.1:5443/plugins/other"},"image":{"docker-manifest-digest":"sha256:793ed4daf8ee922b4475275d4033abcb82fd05f6d6c844ffb6a15ec1ca689af8"},"type":"cosign container image signature"},"optional":null}"#;
    const COSIGN_SIGNATURE: &str =
        "MEQCIHnYYYh3D6ASmFfD5swzElUJKnnezFUL48JopQ9zrXhuAiBX/JwGo521JzuVzJllKIyRREmEWXjegRH+aUYK2joVzA==";
    /// cosign's config blob for that one-signature image.
    const COSIGN_CONFIG: &str = r#"{"architecture":"","created":"0001-01-01T00:00:00Z","history":[{"created":"0001-01-01T00:00:00Z"}],"os":"","rootfs":{"type":"layers","diff_ids":["sha256:37ce7cf0b1959fb186fb40369b187e94a2cd2182a05065e5c722a8333afbeddc"]},"config":{}}"#;
    const P384_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEzJ9EyjCth46oAN+AVyHmr54L3l09uZrB
KrVL0SBVTsx2WKuLoWwsFt9+i5HiuLU094srw1zac5lVVyPTWKwlchTmURfR+yNq
MUg7ViGrhkoh8jPpjDyFk/lwjfCaaRNA
-----END PUBLIC KEY-----";
    const RSA_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCVp2kmFzqS089R6xhbCZxdF2M7
4EPkpfv6I+eteQIBD8DDJKJBFm5EamLKWz5boAH3TI9fQl3f6EbiJ+kKFbmqpexe
D70Eh95/xTLcMWtk92hWsxNnj1oHoFHBW9icd7LtxzBQXUzW9msk5Z6Jc210aRlk
rxd8LPgJELrmoxYdOwIDAQAB
-----END PUBLIC KEY-----";

    fn reference(text: &str) -> Reference {
        text.parse().unwrap()
    }

    fn digest_of(text: &str) -> String {
        artifact::sha256_digest(text.as_bytes())
    }

    /// A registry in memory, with [`Registry`]'s bounds and checks.
    #[derive(Default)]
    struct Memory {
        manifests: Mutex<HashMap<String, Vec<u8>>>,
        blobs: Mutex<HashMap<String, Vec<u8>>>,
        unreachable: bool,
    }

    impl Memory {
        fn put_manifest(&self, reference: &Reference, raw: Vec<u8>) {
            self.manifests.lock().unwrap().insert(reference.whole(), raw);
        }

        fn put_blob(&self, blob: &[u8]) {
            self.blobs
                .lock()
                .unwrap()
                .insert(artifact::sha256_digest(blob), blob.to_vec());
        }

        fn manifest_of(&self, reference: &Reference) -> OciImageManifest {
            let raw = self
                .manifests
                .lock()
                .unwrap()
                .get(&reference.whole())
                .cloned()
                .unwrap();
            serde_json::from_slice(&raw).unwrap()
        }

        /// Puts a signature image of `layers` (each a payload and the annotation's value, if any).
        fn put_signatures(&self, signatures: &Reference, layers: &[(&[u8], Option<&str>)]) {
            let layers: Vec<OciDescriptor> = layers
                .iter()
                .map(|(payload, signature)| {
                    self.put_blob(payload);
                    OciDescriptor {
                        annotations: signature
                            .map(|s| BTreeMap::from([(SIGNATURE_ANNOTATION.to_string(), s.to_string())])),
                        ..artifact::descriptor(SIMPLE_SIGNING_MEDIA_TYPE, payload)
                    }
                })
                .collect();
            let config = config(&layers);
            self.put_blob(&config);
            let manifest = OciImageManifest {
                schema_version: 2,
                media_type: Some(OCI_IMAGE_MEDIA_TYPE.into()),
                config: artifact::descriptor(IMAGE_CONFIG_MEDIA_TYPE, &config),
                layers,
                ..OciImageManifest::default()
            };
            self.put_manifest(signatures, serde_json::to_vec(&manifest).unwrap());
        }
    }

    impl Store for Memory {
        async fn manifest(
            &self,
            reference: &Reference,
            max: usize,
        ) -> Result<Option<Vec<u8>>, ArtifactError> {
            if self.unreachable {
                return Err(ArtifactError::Unreachable("connection refused".into()));
            }
            match self.manifests.lock().unwrap().get(&reference.whole()) {
                Some(raw) if raw.len() > max => Err(ArtifactError::Oversized {
                    what: "the manifest".into(),
                    limit: max as u64,
                }),
                found => Ok(found.cloned()),
            }
        }

        async fn blob(
            &self,
            _: &Reference,
            descriptor: &OciDescriptor,
            max: u64,
        ) -> Result<Vec<u8>, ArtifactError> {
            let oversized = || ArtifactError::Oversized {
                what: "the blob".into(),
                limit: max,
            };
            if descriptor.size as u64 > max {
                return Err(oversized());
            }
            let blob = self.blobs.lock().unwrap().get(&descriptor.digest).cloned();
            let blob = blob.ok_or_else(|| ArtifactError::NotFound(descriptor.digest.clone()))?;
            if blob.len() as u64 > max {
                return Err(oversized());
            }
            Ok(blob)
        }

        async fn push(
            &self,
            reference: &Reference,
            blobs: Vec<Vec<u8>>,
            manifest: &OciImageManifest,
        ) -> Result<String, ArtifactError> {
            for blob in blobs {
                self.put_blob(&blob);
            }
            let raw = serde_json::to_vec(manifest).unwrap();
            let digest = artifact::sha256_digest(&raw);
            self.put_manifest(reference, raw);
            Ok(digest)
        }
    }

    #[test]
    fn the_payload_and_the_tag_are_cosigns_byte_for_byte() {
        let image = reference(&format!("{COSIGN_REPOSITORY}@{COSIGN_DIGEST}"));
        assert_eq!(
            String::from_utf8(payload(&image, COSIGN_DIGEST)).unwrap(),
            COSIGN_PAYLOAD
        );
        assert_eq!(
            signature_reference(&image, COSIGN_DIGEST).whole(),
            "127.0.0.1:5443/plugins/other:sha256-793ed4daf8ee922b4475275d4033abcb82fd05f6d6c844ffb6a15ec1ca689af8.sig"
        );
        let layer = artifact::descriptor(SIMPLE_SIGNING_MEDIA_TYPE, COSIGN_PAYLOAD.as_bytes());
        assert_eq!(String::from_utf8(config(&[layer])).unwrap(), COSIGN_CONFIG);
        // Docker Hub, as go-containerregistry names it.
        for name in [
            "busybox",
            "docker.io/library/busybox",
            "index.docker.io/library/busybox:1",
        ] {
            assert_eq!(
                cosign_identity(&reference(name)),
                "index.docker.io/library/busybox",
                "{name}"
            );
        }
        assert_eq!(
            cosign_identity(&reference("ghcr.io/org/plugins/rc:v1")),
            "ghcr.io/org/plugins/rc"
        );
    }

    #[tokio::test]
    async fn a_signature_cosign_made_verifies() {
        let key = PublicKey::from_pem(COSIGN_PUBLIC_KEY).unwrap();
        let image = reference(&format!("{COSIGN_REPOSITORY}@{COSIGN_DIGEST}"));
        let store = Memory::default();
        store.put_signatures(
            &signature_reference(&image, COSIGN_DIGEST),
            &[(COSIGN_PAYLOAD.as_bytes(), Some(COSIGN_SIGNATURE))],
        );
        verify_in(&store, &image, COSIGN_DIGEST, &key).await.unwrap();
        // The same signature does not vouch for another digest (there is no signature image for it), nor does
        // it verify with another key.
        let other = digest_of("another artifact");
        let error = verify_in(&store, &image, &other, &key).await.unwrap_err();
        assert_eq!(error.reason(), "SignatureMissing", "{error}");
        let stranger = SigningKey::generate().unwrap().public_key();
        let error = verify_in(&store, &image, COSIGN_DIGEST, &stranger)
            .await
            .unwrap_err();
        assert_eq!(error.reason(), "SignatureInvalid", "{error}");
        assert!(
            error.to_string().contains("does not verify with the key"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn our_signatures_verify_and_keep_the_signatures_already_there() {
        let (alice, bob) = (SigningKey::generate().unwrap(), SigningKey::generate().unwrap());
        let image = reference("127.0.0.1:5000/plugins/rc:v1");
        let digest = digest_of("the artifact's manifest");
        let store = Memory::default();
        let signatures = sign_in(&store, &image, &digest, &alice).await.unwrap();
        assert_eq!(signatures, signature_reference(&image, &digest));
        verify_in(&store, &image, &digest, &alice.public_key())
            .await
            .unwrap();
        let error = verify_in(&store, &image, &digest, &bob.public_key())
            .await
            .unwrap_err();
        assert_eq!(error.reason(), "SignatureInvalid", "{error}");
        assert!(!error.transient());

        // cosign's layout: an OCI image manifest, one simple-signing layer whose blob is the payload and whose
        // annotation is the base64 DER signature, and the config cosign writes.
        let manifest = store.manifest_of(&signatures);
        assert_eq!(manifest.media_type.as_deref(), Some(OCI_IMAGE_MEDIA_TYPE));
        assert_eq!(manifest.config.media_type, IMAGE_CONFIG_MEDIA_TYPE);
        let [layer] = manifest.layers.as_slice() else {
            panic!("{manifest:?}")
        };
        assert_eq!(layer.media_type, SIMPLE_SIGNING_MEDIA_TYPE);
        assert_eq!(
            store.blob(&signatures, layer, 1 << 20).await.unwrap(),
            payload(&image, &digest)
        );
        let signature = decode_signature(layer).unwrap();
        assert!(alice.public_key().verify(&payload(&image, &digest), &signature));

        // A second key's signature is appended; signing again with the first adds nothing (RFC 6979).
        sign_in(&store, &image, &digest, &bob).await.unwrap();
        sign_in(&store, &image, &digest, &alice).await.unwrap();
        let manifest = store.manifest_of(&signatures);
        assert_eq!(manifest.layers.len(), 2);
        let config: serde_json::Value =
            serde_json::from_slice(&store.blob(&signatures, &manifest.config, 1 << 20).await.unwrap())
                .unwrap();
        let diff_ids: Vec<&str> = manifest.layers.iter().map(|l| l.digest.as_str()).collect();
        assert_eq!(config["rootfs"]["diff_ids"], serde_json::json!(diff_ids));
        for key in [&alice, &bob] {
            verify_in(&store, &image, &digest, &key.public_key())
                .await
                .unwrap();
        }
    }

    #[test]
    fn tampered_or_foreign_payloads_are_refused() {
        let key = SigningKey::generate().unwrap();
        let public = key.public_key();
        let image = reference(
            "127.0.0.1:5000/plugins/rc@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        );
        let digest = digest_of("manifest");
        let signed = |payload: &[u8]| decode_signature(&signed_layer(&key, payload)).unwrap();
        let check = |payload: &[u8], signature: &ecdsa::Signature| {
            check_payload(payload, signature, &public, &image, &digest)
        };
        let good = payload(&image, &digest);
        assert_eq!(check(&good, &signed(&good)), Ok(()));

        // One byte changed after signing.
        let mut altered = good.clone();
        let at = altered.len() - 20;
        altered[at] ^= 1;
        assert_eq!(check(&altered, &signed(&good)), Err(Refusal::BadSignature));
        // Signed by another key.
        let stranger = SigningKey::generate().unwrap();
        let theirs = decode_signature(&signed_layer(&stranger, &good)).unwrap();
        assert_eq!(check(&good, &theirs), Err(Refusal::BadSignature));
        // Signed by the key, for another digest.
        let other = digest_of("another manifest");
        let for_other = payload(&image, &other);
        assert_eq!(
            check(&for_other, &signed(&for_other)),
            Err(Refusal::OtherDigest(other))
        );
        // Signed by the key, for another repository.
        let elsewhere = payload(&reference("127.0.0.1:5000/plugins/evil"), &digest);
        assert_eq!(
            check(&elsewhere, &signed(&elsewhere)),
            Err(Refusal::OtherRepository("127.0.0.1:5000/plugins/evil".into()))
        );
        // Signed by the key, but not a cosign image signature.
        let claims = |identity: &str, type_: &str| {
            serde_json::to_vec(&serde_json::json!({"critical": {
                "identity": {"docker-reference": identity},
                "image": {"docker-manifest-digest": digest},
                "type": type_,
            }, "optional": {"by": "test"}}))
            .unwrap()
        };
        let attestation = claims("127.0.0.1:5000/plugins/rc", "https://in-toto.io/Statement/v1");
        assert!(matches!(
            check(&attestation, &signed(&attestation)),
            Err(Refusal::NotCosign(_))
        ));
        assert!(matches!(
            check(b"not json", &signed(b"not json")),
            Err(Refusal::NotCosign(_))
        ));
        // The repository may carry a tag or a digest (cosign's --sign-container-identity); annotations are
        // the signer's business.
        for identity in [
            "127.0.0.1:5000/plugins/rc:v1",
            "127.0.0.1:5000/plugins/rc@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        ] {
            let payload = claims(identity, SIGNATURE_TYPE);
            assert_eq!(check(&payload, &signed(&payload)), Ok(()), "{identity}");
        }
        // Docker Hub's two spellings are one repository.
        let hub = reference("docker.io/org/rc");
        let payload = claims("index.docker.io/org/rc", SIGNATURE_TYPE);
        assert_eq!(
            check_payload(&payload, &signed(&payload), &public, &hub, &digest),
            Ok(())
        );
    }

    fn signed_layer(key: &SigningKey, payload: &[u8]) -> OciDescriptor {
        layer_with(SIMPLE_SIGNING_MEDIA_TYPE, payload, Some(&key.sign(payload)))
    }

    fn layer_with(media_type: &str, payload: &[u8], signature: Option<&str>) -> OciDescriptor {
        OciDescriptor {
            annotations: signature
                .map(|s| BTreeMap::from([(SIGNATURE_ANNOTATION.to_string(), s.to_string())])),
            ..artifact::descriptor(media_type, payload)
        }
    }

    #[test]
    fn a_layer_must_carry_a_der_signature() {
        let key = SigningKey::generate().unwrap();
        let layer = signed_layer(&key, b"payload");
        assert!(decode_signature(&layer).is_ok());
        let wrong_type = layer_with(
            "application/vnd.oci.image.layer.v1.tar",
            b"payload",
            Some(&key.sign(b"payload")),
        );
        assert!(matches!(
            decode_signature(&wrong_type),
            Err(Refusal::MediaType(_))
        ));
        assert_eq!(
            decode_signature(&layer_with(SIMPLE_SIGNING_MEDIA_TYPE, b"payload", None)),
            Err(Refusal::NoSignature)
        );
        for bad in ["not base64!", "", "AAAA"] {
            let layer = layer_with(SIMPLE_SIGNING_MEDIA_TYPE, b"payload", Some(bad));
            assert!(
                matches!(decode_signature(&layer), Err(Refusal::Encoding(_))),
                "{bad:?}"
            );
        }
        // The fixed-size r||s encoding (what some tools write) is not cosign's.
        let der = decode_signature(&layer).unwrap();
        let raw = base64::engine::general_purpose::STANDARD.encode(der.to_bytes());
        let layer = layer_with(SIMPLE_SIGNING_MEDIA_TYPE, b"payload", Some(&raw));
        assert!(matches!(decode_signature(&layer), Err(Refusal::Encoding(_))));
    }

    #[tokio::test]
    async fn what_the_registry_holds_decides() {
        let key = SigningKey::generate().unwrap();
        let public = key.public_key();
        let image = reference("127.0.0.1:5000/plugins/rc:v1");
        let digest = digest_of("manifest");
        let signatures = signature_reference(&image, &digest);
        let good = payload(&image, &digest);
        let good_signature = key.sign(&good);
        let verify = async |store: &Memory| verify_in(store, &image, &digest, &public).await;

        // No signature image: not signed (yet: worth retrying).
        let store = Memory::default();
        let error = verify(&store).await.unwrap_err();
        assert_eq!(
            (error.reason(), error.transient()),
            ("SignatureMissing", true),
            "{error}"
        );
        assert!(error.to_string().contains(&signatures.whole()), "{error}");
        // One without layers is none either.
        store.put_signatures(&signatures, &[]);
        assert_eq!(verify(&store).await.unwrap_err().reason(), "SignatureMissing");

        // Not an image manifest, too large, too many layers.
        store.put_manifest(&signatures, b"not json".to_vec());
        let error = verify(&store).await.unwrap_err();
        assert!(matches!(error, SignatureError::Malformed { .. }), "{error}");
        store.put_manifest(&signatures, vec![b' '; MAX_MANIFEST_BYTES + 1]);
        assert!(matches!(
            verify(&store).await.unwrap_err(),
            SignatureError::Malformed { .. }
        ));
        let many: Vec<(&[u8], Option<&str>)> =
            vec![(good.as_slice(), Some(good_signature.as_str())); MAX_LAYERS + 1];
        store.put_signatures(&signatures, &many);
        let error = verify(&store).await.unwrap_err();
        assert!(error.to_string().contains("more than the 64 read"), "{error}");
        assert_eq!((error.reason(), error.transient()), ("SignatureInvalid", false));

        // At least one good signature among bad ones is enough, wherever it is.
        let stranger = SigningKey::generate().unwrap().sign(&good);
        let bad: (&[u8], Option<&str>) = (good.as_slice(), Some(stranger.as_str()));
        store.put_signatures(
            &signatures,
            &[
                bad,
                (b"{}", None),
                (good.as_slice(), Some(good_signature.as_str())),
            ],
        );
        verify(&store).await.unwrap();
        // Only bad ones: each is said why, the first few of them.
        store.put_signatures(&signatures, &[bad; 6]);
        let error = verify(&store).await.unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("signature 4 of 6") && !text.contains("signature 5 of 6"),
            "{text}"
        );
        assert!(
            text.contains("and 2 more") && text.contains(public.fingerprint()),
            "{text}"
        );

        // A payload larger than its bound, or whose blob is not what the layer names, is not read.
        let large = vec![b' '; MAX_PAYLOAD_BYTES as usize + 1];
        store.put_signatures(
            &signatures,
            &[(large.as_slice(), Some(key.sign(&large).as_str()))],
        );
        let error = verify(&store).await.unwrap_err();
        assert!(error.to_string().contains("payload could not be read"), "{error}");
        store.put_signatures(&signatures, &[(good.as_slice(), Some(good_signature.as_str()))]);
        let payload_digest = artifact::sha256_digest(&good);
        store.blobs.lock().unwrap().remove(&payload_digest);
        let error = verify(&store).await.unwrap_err();
        assert_eq!(
            (error.reason(), error.transient()),
            ("ArtifactNotFound", true),
            "{error}"
        );

        // The registry down: worth retrying.
        let down = Memory {
            unreachable: true,
            ..Memory::default()
        };
        let error = verify(&down).await.unwrap_err();
        assert_eq!(
            (error.reason(), error.transient()),
            ("RegistryUnavailable", true),
            "{error}"
        );
    }

    #[test]
    fn keys_are_p256_pem_and_say_what_they_are_not() {
        let key = PublicKey::from_pem(COSIGN_PUBLIC_KEY).unwrap();
        // The fingerprint is the key's, not its spelling's.
        let padded = format!("\n  {}\n\n", COSIGN_PUBLIC_KEY.trim());
        assert_eq!(
            PublicKey::from_pem(&padded).unwrap().fingerprint(),
            key.fingerprint()
        );
        assert_eq!(PublicKey::from_pem(&key.to_pem().unwrap()).unwrap(), key);
        assert!(key.fingerprint().starts_with("sha256:") && key.fingerprint().len() == 71);

        let refused = |pem: &str| match PublicKey::from_pem(pem) {
            Err(e @ SignatureError::InvalidPublicKey(_)) => {
                assert_eq!(e.reason(), "InvalidPublicKey");
                e.to_string()
            }
            other => panic!("{other:?}"),
        };
        assert!(refused("").contains("empty"));
        assert!(refused("  \n").contains("empty"));
        assert!(refused("ssh-ed25519 AAAAC3Nza").contains("not a PEM"));
        assert!(refused(P384_PUBLIC_KEY).contains("not an ECDSA P-256 key"));
        assert!(refused(RSA_PUBLIC_KEY).contains("not an ECDSA P-256 key"));
        let private = SigningKey::generate().unwrap();
        assert!(refused(&private.to_pem().unwrap()).contains("it is a private key"));

        // A signing key round-trips through its PEM; cosign's encrypted keys and SEC1 keys are refused with a
        // hint.
        let again = SigningKey::from_pem(&private.to_pem().unwrap()).unwrap();
        assert_eq!(again.public_key(), private.public_key());
        assert_ne!(again.public_key(), SigningKey::generate().unwrap().public_key());
        let encrypted = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\neyJrZGYiOnt9fQ==\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
        let sec1 = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n";
        for (pem, hint) in [
            (encrypted, "cosign's encrypted keys"),
            (sec1, "openssl pkcs8"),
            (COSIGN_PUBLIC_KEY, ""),
        ] {
            let error = SigningKey::from_pem(pem).unwrap_err();
            assert_eq!(error.reason(), "InvalidSigningKey");
            assert!(error.to_string().contains(hint), "{error}");
        }
    }
}
