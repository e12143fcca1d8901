//! Compiled plugins on disk, so that a restart (or a second replica on the same volume) does not compile
//! again. An entry is keyed by the SHA-256 of the component and the engine's compatibility hash, and is
//! itself checksummed.
//!
//! # Trust
//!
//! Loading a precompiled artifact is `unsafe` in wasmtime because its machine code runs as is: whoever can
//! write to the cache directory can run code in the operator. The directory must therefore be writable only
//! by the operator (the default is private to it), and every entry is checked against a SHA-256 recorded
//! when this process family wrote it, which catches corruption and truncation (not an attacker who can
//! write both files).

use std::{
    fs,
    hash::{Hash, Hasher},
    io::Write,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};
use wasmtime::{Engine, component::Component};

/// Where a component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Cache,
    Compiled,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cache => "cache",
            Self::Compiled => "compiled",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("compiling the component: {0:#}")]
    Compile(wasmtime::Error),
}

pub struct CompileCache {
    dir: Option<PathBuf>,
    engine_hash: String,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

impl CompileCache {
    /// A cache in `dir` (created if missing, mode 0700), or none.
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let dir = dir.and_then(|dir| match create_private_dir(&dir) {
            Ok(()) => Some(dir),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "compiled-plugin cache disabled");
                None
            }
        });
        Self {
            dir,
            engine_hash: format!("{:016x}", hasher.finish()),
        }
    }

    fn entry(&self, digest: &str) -> Option<(PathBuf, PathBuf)> {
        let dir = self.dir.as_ref()?;
        let base = format!("{digest}-{}", self.engine_hash);
        Some((
            dir.join(format!("{base}.cwasm")),
            dir.join(format!("{base}.sha256")),
        ))
    }

    /// The component for `wasm` (whose SHA-256 is `digest`): from the cache if a valid entry exists,
    /// otherwise compiled and stored.
    pub fn load(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
    ) -> Result<(Component, Source), CacheError> {
        if let Some((artifact, checksum)) = self.entry(digest)
            && let Some(component) = self.read(engine, &artifact, &checksum)
        {
            return Ok((component, Source::Cache));
        }
        let component = Component::new(engine, wasm).map_err(CacheError::Compile)?;
        if let Some((artifact, checksum)) = self.entry(digest) {
            match component.serialize() {
                Ok(bytes) => {
                    if let Err(e) = write_atomically(&artifact, &bytes)
                        .and_then(|()| write_atomically(&checksum, sha256_hex(&bytes).as_bytes()))
                    {
                        tracing::warn!(path = %artifact.display(), error = %e, "could not store a compiled plugin");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not serialize a compiled plugin"),
            }
        }
        Ok((component, Source::Compiled))
    }

    fn read(&self, engine: &Engine, artifact: &Path, checksum: &Path) -> Option<Component> {
        let bytes = fs::read(artifact).ok()?;
        let recorded = fs::read_to_string(checksum).ok()?;
        if recorded.trim() != sha256_hex(&bytes) {
            tracing::warn!(path = %artifact.display(), "ignoring a compiled plugin whose checksum does not match");
            return None;
        }
        // SAFETY: wasmtime requires that deserialized bytes come from `Component::serialize` of a compatible
        // engine. These bytes were written by `load` above into a directory private to the operator, under a
        // key that includes the engine's compatibility hash, and they still match the checksum recorded when
        // they were written. wasmtime also re-checks the engine configuration embedded in the artifact and
        // rejects a mismatch with an error rather than undefined behaviour.
        #[allow(
            unsafe_code,
            reason = "loading a precompiled plugin artifact, see the SAFETY comment"
        )]
        let component = unsafe { Component::deserialize(engine, &bytes) };
        match component {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %artifact.display(), error = %e, "ignoring an unusable compiled plugin");
                None
            }
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mode = fs::metadata(dir)?.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is writable by others (mode {mode:o}); refusing to load code from it",
            dir.display()
        )));
    }
    Ok(())
}

/// Writes via a temporary file and a rename, so readers never see a partial entry.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let mut file = fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&tmp, path)
}
