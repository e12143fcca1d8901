//! A loaded plugin: its compiled component with imports resolved (instantiated afresh for every call), its
//! metadata, and its grant: what it asked for intersected with the administrator's policy entry for its file.

use std::{path::Path, sync::Arc};

use kuberay_plugin_sdk::{Capability, Kind, PluginMetadata, Verb};
use tokio::io::AsyncReadExt;
use wasmtime::{
    Engine,
    component::{Component, Linker},
};

use super::{
    bindings::{ReconcilePlugin, ReconcilePluginPre, wit_reconciler, wit_types},
    budget::TokenBucket,
    call::{self, CallLimits, CallState},
    compile::{self, ChildCompiler, CompileError, MAX_COMPONENT_BYTES},
    compile_cache::{CompileCache, Source, sha256_hex},
    gate::CallContext,
    log_guard::{self, LogRate},
};
use crate::{
    host_api::HostApi,
    metrics::Metrics,
    policy::{Entry, Grant, LoadRefusal, Policy, entry_for, grant_for_entry},
};

/// Longest plugin version kept (the rest is cut, with a note).
const MAX_VERSION_TEXT: usize = 128;

/// Why a plugin file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("not a usable component: {0}")]
    Component(String),
    #[error("the component does not implement the kuberay:plugin reconcile-plugin world: {0}")]
    World(String),
    #[error("calling metadata: {0}")]
    Metadata(String),
    #[error("invalid metadata: {0}")]
    InvalidMetadata(String),
    #[error("refused by the policy: {0}")]
    Refused(LoadRefusal),
    /// A bound on compiling it (`sandbox::compile`) was breached.
    #[error("refused: {0}")]
    Limit(LoadRefusal),
}

impl LoadError {
    /// The refusal, if the file was refused (by the policy or a compile bound) rather than broken.
    pub fn refusal(&self) -> Option<&LoadRefusal> {
        match self {
            Self::Refused(refusal) | Self::Limit(refusal) => Some(refusal),
            _ => None,
        }
    }
}

/// A plugin ready to be called.
pub struct LoadedPlugin {
    pub metadata: PluginMetadata,
    /// SHA-256 of the component file.
    pub digest: String,
    pub(crate) source: Source,
    pub grant: Arc<Grant>,
    pre: ReconcilePluginPre<CallState>,
    /// The rate limit of its log lines, shared by all its calls.
    log_rate: Arc<LogRate>,
    /// Its written bytes across calls; the sandbox shares one per policy entry across reloads.
    pub(crate) write_rate: Arc<TokenBucket>,
    /// Its configuration, a JSON object (see the WIT `config` interface).
    pub config: Arc<str>,
}

impl LoadedPlugin {
    pub(crate) fn pre(&self) -> &ReconcilePluginPre<CallState> {
        &self.pre
    }

    /// The context of one call for the object `object` (`namespace/name`).
    pub(crate) fn context(&self, object: String, host: Arc<dyn HostApi>, metrics: Metrics) -> CallContext {
        CallContext {
            plugin: self.grant.entry.as_str().into(),
            primary_kind: self.metadata.reconciles.clone(),
            grant: self.grant.clone(),
            object,
            host,
            metrics,
            log_rate: self.log_rate.clone(),
            write_rate: self.write_rate.clone(),
            config: self.config.clone(),
        }
    }
}

/// The linker every plugin is instantiated with: WASI p2 (which a Rust guest always imports, backed by an
/// empty context) and the kuberay:plugin interfaces.
pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    ReconcilePlugin::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)?;
    Ok(linker)
}

/// What loading a plugin needs from the sandbox.
pub(crate) struct Loader<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) linker: &'a Linker<CallState>,
    pub(crate) cache: &'a Arc<CompileCache>,
    /// Where components are compiled; in process (static limits only) when `None`.
    pub(crate) compiler: Option<&'a ChildCompiler>,
    pub(crate) policy: &'a Policy,
    pub(crate) limits: CallLimits,
    pub(crate) metrics: &'a Metrics,
    /// The operator's part of every plugin's configuration.
    pub(crate) base_config: &'a serde_json::Map<String, serde_json::Value>,
}

impl Loader<'_> {
    /// Compiles (or loads from the cache) and validates the component at `path`. Only a file the policy
    /// lists (with the digest it pins, if it pins one) is compiled at all.
    pub(crate) async fn load(&self, path: &Path) -> Result<LoadedPlugin, LoadError> {
        let file = path.file_name().map(|f| f.to_string_lossy()).unwrap_or_default();
        let wasm = read_component(path, self.policy, &file).await?;
        let digest = sha256_hex(&wasm);
        let entry = entry_for(self.policy, &file, &digest).map_err(LoadError::Refused)?;
        self.load_bytes(entry, wasm, digest, &path.display().to_string())
            .await
    }

    /// Compiles (or loads from the cache) and validates `wasm` (SHA-256 `digest`, from `origin`: a file or
    /// an artifact, for messages) as the plugin of `entry`, one of the loader's policy.
    pub(crate) async fn load_bytes(
        &self,
        entry: &Entry,
        wasm: Vec<u8>,
        digest: String,
        origin: &str,
    ) -> Result<LoadedPlugin, LoadError> {
        let (pre, source) = self.compile(&entry.name, wasm, &digest).await?;
        let log_rate = Arc::new(LogRate::default());
        let mut config = self.base_config.clone();
        config.extend(entry.config.clone());
        let config: Arc<str> = serde_json::Value::Object(config).to_string().into();
        let metadata = self.metadata(&pre, origin, &log_rate, &config).await?;
        let grant =
            grant_for_entry(self.policy, entry, &metadata, self.limits.budget).map_err(LoadError::Refused)?;
        let rates = grant.budget.rates;
        Ok(LoadedPlugin {
            metadata,
            digest,
            source,
            grant: Arc::new(grant),
            pre,
            log_rate,
            write_rate: Arc::new(TokenBucket::new(
                rates.write_bytes_burst,
                rates.write_bytes_per_second,
            )),
            config,
        })
    }

    /// What the component `wasm` (SHA-256 `digest`, from `origin`) says about itself, whatever the policy
    /// says about it: compiled (or loaded from the cache) within the same bounds, then asked for its metadata
    /// with no host access. For tools (`plugin run`) that pick a grant by the plugin's name.
    pub(crate) async fn describe(
        &self,
        wasm: Vec<u8>,
        digest: &str,
        origin: &str,
    ) -> Result<PluginMetadata, LoadError> {
        let (pre, _) = self.compile("unknown", wasm, digest).await?;
        self.metadata(&pre, origin, &Arc::new(LogRate::default()), &Arc::from("{}"))
            .await
    }

    /// Compiles (or loads from the cache) `wasm` for the entry `entry` (for refusals) and resolves its imports.
    async fn compile(
        &self,
        entry: &str,
        wasm: Vec<u8>,
        digest: &str,
    ) -> Result<(ReconcilePluginPre<CallState>, Source), LoadError> {
        if wasm.len() as u64 > MAX_COMPONENT_BYTES {
            return Err(compile_failure(
                entry,
                CompileError::TooLarge(format!("more than {MAX_COMPONENT_BYTES} bytes")),
            ));
        }
        let compiled = compile::component(self.engine, self.cache, self.compiler, wasm, digest).await;
        let (component, source) = compiled.map_err(|e| compile_failure(entry, e))?;
        Ok((self.pre(&component)?, source))
    }

    fn pre(&self, component: &Component) -> Result<ReconcilePluginPre<CallState>, LoadError> {
        let instance_pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|e| LoadError::World(format!("{e:#}")))?;
        ReconcilePluginPre::new(instance_pre).map_err(|e| LoadError::World(format!("{e:#}")))
    }

    /// Asks the plugin for its metadata, with no host access at all: a plugin's description may not depend
    /// on the cluster. Its identity is not known yet: metrics say `unknown` (a file name is not a bounded
    /// label).
    async fn metadata(
        &self,
        pre: &ReconcilePluginPre<CallState>,
        origin: &str,
        log_rate: &Arc<LogRate>,
        config: &Arc<str>,
    ) -> Result<PluginMetadata, LoadError> {
        let grant = Arc::new(Grant::default());
        let probe = CallContext {
            plugin: "unknown".into(),
            primary_kind: Kind::new("", "", ""),
            write_rate: Arc::new(TokenBucket::new(0, 0)),
            grant,
            object: format!("(metadata of {origin})"),
            host: Arc::new(super::host_api_denied::DeniedHost),
            metrics: self.metrics.clone(),
            log_rate: log_rate.clone(),
            config: config.clone(),
        };
        let state = CallState::new(probe, &self.limits);
        let raw = call::metadata(self.engine, pre, state, self.limits)
            .await
            .map_err(|e| LoadError::Metadata(e.to_string()))?;
        convert_metadata(raw)
    }
}

/// Reads a component file, refusing one larger than [`MAX_COMPONENT_BYTES`] without reading it all.
async fn read_component(path: &Path, policy: &Policy, file: &str) -> Result<Vec<u8>, LoadError> {
    let read_error = |source| LoadError::Read {
        path: path.display().to_string(),
        source,
    };
    let opened = tokio::fs::File::open(path).await.map_err(read_error)?;
    let mut wasm = Vec::new();
    opened
        .take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut wasm)
        .await
        .map_err(read_error)?;
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        let entry = policy.entry_for_file(file).map_or("unknown", |e| e.name.as_str());
        return Err(compile_failure(
            entry,
            CompileError::TooLarge(format!("more than {MAX_COMPONENT_BYTES} bytes")),
        ));
    }
    Ok(wasm)
}

/// A compile that failed: a refusal when it breached a bound, else a component that is not usable.
fn compile_failure(entry: &str, error: CompileError) -> LoadError {
    match error.bound() {
        Some(reason) => LoadError::Limit(LoadRefusal {
            entry: entry.to_string(),
            reason,
            message: error.to_string(),
        }),
        None => LoadError::Component(error.to_string()),
    }
}

fn kind(k: wit_types::Kind) -> Kind {
    Kind {
        group: k.group,
        version: k.version,
        kind: k.kind,
    }
}

/// Checks what a plugin says about itself and converts it to the SDK's types.
fn convert_metadata(m: wit_reconciler::PluginMetadata) -> Result<PluginMetadata, LoadError> {
    let bad = |reason: String| Err(LoadError::InvalidMetadata(reason));
    let valid_name = !m.name.is_empty()
        && m.name.len() <= 63
        && m.name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid_name {
        return bad(format!(
            "plugin name {:?} must be 1-63 lowercase letters, digits or '-'",
            m.name
        ));
    }
    if !kuberay_plugin_sdk::wit_compatible(&m.wit_version) {
        return bad(format!(
            "plugin {} was built against kuberay:plugin@{}; this host implements {} (a plugin of the same \
             major and an equal or older minor version loads)",
            m.name,
            log_guard::escape(&m.wit_version, 64),
            kuberay_plugin_sdk::WIT_VERSION,
        ));
    }
    let reconciles = kind(m.reconciles);
    if reconciles.version.is_empty() || reconciles.kind.is_empty() {
        return bad(format!("plugin {} does not name the kind it reconciles", m.name));
    }
    let verb = |v: wit_reconciler::Verb| match v {
        wit_reconciler::Verb::Get => Verb::Get,
        wit_reconciler::Verb::List => Verb::List,
        wit_reconciler::Verb::Create => Verb::Create,
        wit_reconciler::Verb::Apply => Verb::Apply,
        wit_reconciler::Verb::ApplyStatus => Verb::ApplyStatus,
        wit_reconciler::Verb::Delete => Verb::Delete,
        wit_reconciler::Verb::Finalize => Verb::Finalize,
        wit_reconciler::Verb::RecordEvent => Verb::RecordEvent,
    };
    let metadata = PluginMetadata {
        name: m.name,
        // Logged at load and printed by `inspect`: escaped like the plugin's log lines.
        version: log_guard::escape(&m.version, MAX_VERSION_TEXT),
        reconciles,
        owns: m.owns.into_iter().map(kind).collect(),
        capabilities: m
            .capabilities
            .into_iter()
            .map(|c| Capability {
                kind: kind(c.kind),
                verbs: c.verbs.into_iter().map(verb).collect(),
            })
            .collect(),
        finalizer: m.finalizer,
        uses_ray_head: m.uses_ray_head,
    };
    // Kinds end up in API paths: the same rules as at every host call.
    let kinds = metadata.capabilities.iter().map(|c| &c.kind);
    for k in kinds.chain(&metadata.owns).chain([&metadata.reconciles]) {
        if let Err(e) = kuberay_admission::names::kind(k) {
            return bad(format!("plugin {}: {e}", metadata.name));
        }
    }
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(name: &str, wit_version: &str, kind: &str) -> wit_reconciler::PluginMetadata {
        wit_reconciler::PluginMetadata {
            name: name.into(),
            version: "1".into(),
            wit_version: wit_version.into(),
            reconciles: wit_types::Kind {
                group: "ray.io".into(),
                version: "v1".into(),
                kind: kind.into(),
            },
            owns: vec![],
            capabilities: vec![],
            finalizer: None,
            uses_ray_head: false,
        }
    }

    #[test]
    fn a_version_or_wit_version_cannot_forge_a_log_line() {
        let forged = "1.0\n2026-01-01T00:00:00Z  INFO kuberay_wasm: forged\u{1b}[2K\r";
        let mut raw = metadata("raycluster", "0.1.0", "RayCluster");
        raw.version = forged.into();
        let converted = convert_metadata(raw).expect("valid metadata");
        assert!(
            !converted.version.chars().any(char::is_control),
            "{:?}",
            converted.version
        );
        assert!(
            converted.version.starts_with("1.0\\n2026"),
            "{}",
            converted.version
        );
        let Err(LoadError::InvalidMetadata(message)) =
            convert_metadata(metadata("raycluster", forged, "RayCluster"))
        else {
            panic!("a forged wit version was accepted");
        };
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }

    #[test]
    fn metadata_that_lies_or_is_malformed_is_refused() {
        assert!(convert_metadata(metadata("raycluster", "0.1.0", "RayCluster")).is_ok());
        // An older minor of the same major is fine; a newer minor or another major is not.
        assert!(convert_metadata(metadata("raycluster", "0.0.3", "RayCluster")).is_ok());
        for (name, version, kind) in [
            ("raycluster", "0.2.0", "RayCluster"),
            ("raycluster", "1.0.0", "RayCluster"),
            ("raycluster", "garbage", "RayCluster"),
            ("Ray Cluster", "0.1.0", "RayCluster"),
            ("", "0.1.0", "RayCluster"),
            ("raycluster", "0.1.0", ""),
            ("raycluster", "0.1.0", "RayCluster/proxy"),
            ("raycluster", "0.1.0", "Ray Cluster"),
        ] {
            assert!(
                matches!(
                    convert_metadata(metadata(name, version, kind)),
                    Err(LoadError::InvalidMetadata(_))
                ),
                "{name:?} {version:?} {kind:?} was accepted"
            );
        }
    }
}
