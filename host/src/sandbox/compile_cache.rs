//! Compiled plugins on disk, so that a restart (or a second replica on the same volume) does not compile
//! again. An entry is keyed by the SHA-256 of the component and the engine's compatibility hash, and is
//! itself checksummed.
//!
//! # Trust
//!
//! Loading a precompiled artifact is `unsafe` in wasmtime because its machine code runs as is: whoever can
//! write to the cache directory can run code in the operator. The directory must therefore be the
//! operator's own: a real directory (not a symlink) owned by the operator's user with mode 0700. One that
//! is more open but writable by no one else is tightened to 0700; one owned by someone else, a symlink,
//! or one others could write to is refused, and the operator compiles every plugin instead. Entries are
//! written through unpredictable temporary files in the directory and renamed into place, and every entry
//! is checked against a SHA-256 recorded when this process family wrote it, which catches corruption and
//! truncation (not an attacker who can write both files).

use std::{
    fs,
    hash::{Hash, Hasher},
    io::Write,
    os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt},
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};
use wasmtime::{Engine, component::Component};

/// Where a component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Cache,
    Compiled,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Cache => "cache",
            Self::Compiled => "compiled",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheError {
    #[error("compiling the component: {0:#}")]
    Compile(wasmtime::Error),
    #[error("loading the compiled component: {0:#}")]
    Load(wasmtime::Error),
}

pub(crate) struct CompileCache {
    dir: Option<PathBuf>,
    engine_hash: String,
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

impl CompileCache {
    /// A cache in `dir` (created if missing, mode 0700), or none.
    pub(crate) fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
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

    /// The cached component of `digest`, if a valid entry exists.
    pub(crate) fn cached(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let (artifact, checksum) = self.entry(digest)?;
        self.read(engine, &artifact, &checksum)
    }

    /// Compiles `wasm` (whose SHA-256 is `digest`) in this process and stores it.
    pub(crate) fn compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
    ) -> Result<Component, CacheError> {
        let component = Component::new(engine, wasm).map_err(CacheError::Compile)?;
        if self.dir.is_some() {
            match component.serialize() {
                // The stored entry, mapped, replaces the copy in memory (see `read`).
                Ok(bytes) => {
                    if let Some(mapped) = self.store(engine, digest, &bytes) {
                        return Ok(mapped);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not serialize a compiled plugin"),
            }
        }
        Ok(component)
    }

    /// The component of `artifact`, which a compile child (`compile.rs`) made of the component whose SHA-256
    /// is `digest`: stored and mapped from the cache, or deserialized without one.
    pub(crate) fn load_artifact(
        &self,
        engine: &Engine,
        digest: &str,
        artifact: &[u8],
    ) -> Result<Component, CacheError> {
        if let Some(mapped) = self.store(engine, digest, artifact) {
            return Ok(mapped);
        }
        // SAFETY: wasmtime requires that deserialized bytes come from `Engine::precompile_component` (or
        // `Component::serialize`) of a compatible engine. These come from `precompile_component` in a child
        // process running this very executable (the parent hands it its own path) with the engine settings
        // of `engine::base_config`, through a pipe only that child writes; wasmtime re-checks the engine
        // configuration recorded in the artifact and rejects a mismatch with an error rather than undefined
        // behaviour. The compiler's output is trusted as it is in process (see `compile.rs`).
        #[allow(
            unsafe_code,
            reason = "loading a precompiled plugin artifact, see the SAFETY comment"
        )]
        let component = unsafe { Component::deserialize(engine, artifact) };
        component.map_err(CacheError::Load)
    }

    /// Stores a serialized component of `digest` and maps it back; `None` without a cache or when it could
    /// not be stored.
    fn store(&self, engine: &Engine, digest: &str, bytes: &[u8]) -> Option<Component> {
        let (artifact, checksum) = self.entry(digest)?;
        match write_atomically(&artifact, bytes)
            .and_then(|()| write_atomically(&checksum, sha256_hex(bytes).as_bytes()))
        {
            Ok(()) => self.read(engine, &artifact, &checksum),
            Err(e) => {
                tracing::warn!(path = %artifact.display(), error = %e, "could not store a compiled plugin");
                None
            }
        }
    }

    fn read(&self, engine: &Engine, artifact: &Path, checksum: &Path) -> Option<Component> {
        let recorded = fs::read_to_string(checksum).ok()?;
        if recorded.trim() != sha256_hex(&fs::read(artifact).ok()?) {
            tracing::warn!(path = %artifact.display(), "ignoring a compiled plugin whose checksum does not match");
            return None;
        }
        // SAFETY: wasmtime requires that deserialized code come from `Component::serialize` (or
        // `Engine::precompile_component`) of a compatible engine and, for a mapped file, that the file is not
        // modified while mapped. These bytes were written by `store` above (from `Component::serialize` in
        // this process, or `precompile_component` in a compile child running this executable, see
        // `load_artifact`) into a directory private to the operator, under a key that includes the engine's
        // compatibility hash, and they still match the checksum recorded when they were written.
        // Entries are only ever written to a temporary file and renamed into place, so a mapped file is
        // never changed: a new entry is a new file. wasmtime also re-checks the engine configuration
        // embedded in the artifact and rejects a mismatch with an error rather than undefined behaviour.
        // Mapping the file instead of copying it keeps the plugins' code out of the operator's anonymous
        // memory: only the pages that run are resident, and the kernel may drop them again.
        #[allow(
            unsafe_code,
            reason = "loading a precompiled plugin artifact, see the SAFETY comment"
        )]
        let component = unsafe { Component::deserialize_file(engine, artifact) };
        match component {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %artifact.display(), error = %e, "ignoring an unusable compiled plugin");
                None
            }
        }
    }
}

/// Creates `dir` (mode 0700) or checks that an existing one is the operator's own, tightening its mode to
/// 0700 when only read or search rights were too open.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let refuse = |why: String| {
        Err(std::io::Error::other(format!(
            "{}: {why}; refusing to load code from it",
            dir.display()
        )))
    };
    // Not followed: a symlink could point anywhere, and where it points can change.
    let meta = fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() {
        return refuse("it is a symlink".into());
    }
    if !meta.is_dir() {
        return refuse("it is not a directory".into());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    #[allow(unsafe_code, reason = "geteuid, see the SAFETY comment")]
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return refuse(format!(
            "it is owned by uid {}, not by the operator's uid {me}",
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return refuse(format!("it is writable by others (mode {mode:o})"));
    }
    if mode != 0o700 {
        tracing::info!(dir = %dir.display(), mode = format!("{mode:o}"), "making the compiled-plugin cache private (mode 700)");
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Writes via an unpredictable temporary file in the same directory and a rename, so readers never see a
/// partial entry and no one can prepare the temporary file's name in advance.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut file = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> tempfile::TempDir {
        tempfile::tempdir().expect("a scratch directory")
    }

    #[test]
    fn a_new_directory_is_private() {
        let root = scratch();
        let dir = root.path().join("a/cache");
        create_private_dir(&dir).expect("created");
        let mode = fs::metadata(&dir).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn an_open_directory_is_tightened_and_a_writable_one_refused() {
        let root = scratch();
        let dir = root.path().join("cache");
        fs::create_dir(&dir).expect("created");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        create_private_dir(&dir).expect("tightened");
        assert_eq!(
            fs::metadata(&dir).expect("exists").permissions().mode() & 0o777,
            0o700
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).expect("chmod");
        let refused = create_private_dir(&dir).expect_err("world-writable accepted");
        assert!(refused.to_string().contains("writable by others"), "{refused}");
    }

    #[test]
    fn a_symlink_is_refused() {
        let root = scratch();
        let real = root.path().join("real");
        fs::create_dir(&real).expect("created");
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).expect("chmod");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let refused = create_private_dir(&link).expect_err("symlink accepted");
        assert!(refused.to_string().contains("symlink"), "{refused}");
        // And a cache on it is disabled: it compiles instead of reading or writing there.
        let engine = Engine::default();
        let cache = CompileCache::new(&engine, Some(link));
        assert!(cache.entry("x").is_none());
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        // SAFETY: geteuid has no preconditions.
        #[allow(unsafe_code, reason = "geteuid in a test")]
        let me = unsafe { libc::geteuid() };
        let root = scratch();
        // As root, a directory given to `nobody`; otherwise `/`, which is root's.
        let other = if me == 0 {
            let dir = root.path().join("theirs");
            fs::create_dir(&dir).expect("created");
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
            std::os::unix::fs::chown(&dir, Some(65534), None).expect("chown");
            dir
        } else {
            PathBuf::from("/")
        };
        let refused = create_private_dir(&other).expect_err("another user's directory accepted");
        assert!(refused.to_string().contains("owned by uid"), "{refused}");
    }

    #[test]
    fn entries_are_written_without_leftover_temporary_files() {
        let root = scratch();
        let target = root.path().join("entry.cwasm");
        write_atomically(&target, b"bytes").expect("written");
        assert_eq!(fs::read(&target).expect("read"), b"bytes");
        let names: Vec<String> = fs::read_dir(root.path())
            .expect("listed")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["entry.cwasm".to_string()]);
    }
}
