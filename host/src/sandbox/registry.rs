//! The plugins of a directory, by the kind each reconciles, reloaded while the operator runs: a changed file
//! is compiled and validated before it replaces the running version (calls in flight finish on the old
//! one), a file that fails to load leaves the previous version in place, and a removed file makes its kind
//! unavailable so that its objects are reported rather than silently ignored.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
    time::SystemTime,
};

use kuberay_plugin_sdk::{Kind, PluginMetadata};
use kuberay_rules::{
    batch_scheduler::{BATCH_SCHEDULER, BatchScheduler},
    config::{CLUSTER_DOMAIN, FEATURE_GATES, KUBERAY_CONFIGURATION, KUBERAY_ENV},
};
use wasmtime::{Engine, component::Linker};

use crate::host_api::HostApi;

use super::{
    budget::TokenBucket,
    call::{self, CallFailure, CallLimits, CallState, Export},
    compile::ChildCompiler,
    compile_cache::CompileCache,
    engine::{EngineConfig, EpochTicker, engine},
    gate::CallContext,
    log_guard,
    plugin::{self, LoadError, LoadedPlugin},
};
use crate::{
    kuberay_env::KubeRayEnv,
    kuberay_flags::FeatureGates,
    metrics::{CallLabels, LoadLabels, Metrics},
    policy::{LoadRefusal, Policy},
};

#[derive(Debug, Clone)]
pub struct SandboxConfig {
    pub cache_dir: Option<PathBuf>,
    pub limits: CallLimits,
    /// The administrator's policy: which plugin files may load and what each is granted.
    pub policy: Arc<Policy>,
    /// Calls that may run at once; the instance pool is sized from it.
    pub max_concurrent_calls: u32,
    /// Where plugin components are compiled: in a child process with OS-enforced bounds, or (`None`) in
    /// this process, bounded by the static limits only (see `compile.rs`).
    pub compiler: Option<ChildCompiler>,
    /// The operator's settings plugins read through the WIT `config` interface (`clusterDomain`, `featureGates`), under each
    /// entry's own `config`.
    pub base_config: serde_json::Map<String, serde_json::Value>,
}

/// The operator's part of every plugin's configuration: the cluster's DNS domain (`--cluster-domain`, or
/// `CLUSTER_DOMAIN` as for KubeRay), KubeRay's feature gates (`--feature-gates`), KubeRay's environment
/// toggles the operator was started with, its batch scheduler (`--batch-scheduler`) and, with `--config`, what
/// KubeRay's Configuration file adds to Ray Pods.
pub fn base_config(
    cluster_domain: &str,
    gates: &FeatureGates,
    env: &KubeRayEnv,
    batch_scheduler: Option<BatchScheduler>,
    pod_defaults: Option<&serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    [
        (CLUSTER_DOMAIN.to_string(), cluster_domain.into()),
        (FEATURE_GATES.to_string(), gates.to_config()),
        (KUBERAY_ENV.to_string(), env.to_config()),
    ]
    .into_iter()
    .chain(batch_scheduler.map(|s| (BATCH_SCHEDULER.to_string(), s.name().into())))
    .chain(pod_defaults.map(|d| (KUBERAY_CONFIGURATION.to_string(), d.clone())))
    .collect()
}

/// [`base_config`] of an operator started with KubeRay's defaults in a cluster with the default domain, as
/// plugins read it outside a cluster (`plugin run`, `plugin check`).
pub fn default_base_config() -> serde_json::Map<String, serde_json::Value> {
    base_config(
        kuberay_rayhead::DEFAULT_CLUSTER_DOMAIN,
        &FeatureGates::default(),
        &KubeRayEnv::default(),
        None,
        None,
    )
}

/// What serves a kind.
#[derive(Clone)]
pub(crate) enum PluginSlot {
    Ready(Arc<LoadedPlugin>),
    /// The plugin that served the kind is gone or broken.
    Unavailable {
        plugin: String,
        reason: String,
    },
}

struct FileState {
    modified: Option<SystemTime>,
    len: u64,
    kind: Option<Kind>,
}

pub struct Sandbox {
    engine: Engine,
    linker: Linker<CallState>,
    cache: Arc<CompileCache>,
    config: SandboxConfig,
    /// The policy in force: `config.policy`, with the entries of `ReconcilePlugin` resources merged in.
    policy: RwLock<Arc<Policy>>,
    metrics: Metrics,
    by_kind: RwLock<HashMap<Kind, PluginSlot>>,
    files: Mutex<HashMap<PathBuf, FileState>>,
    /// Each policy entry's written bytes across calls, kept across reloads of its file.
    write_rates: Mutex<HashMap<String, Arc<TokenBucket>>>,
    ticker: EpochTicker,
}

/// Why the sandbox could not be set up or scan its directory.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("setting up wasmtime: {0:#}")]
    Wasmtime(wasmtime::Error),
    #[error("reading the plugin directory {path}: {source}")]
    Directory { path: String, source: std::io::Error },
}

/// What a scan changed.
#[derive(Debug, Default)]
pub(crate) struct ScanReport {
    /// Kinds served by a plugin for the first time.
    pub new_kinds: Vec<Kind>,
    pub loaded: Vec<String>,
    pub failed: Vec<(PathBuf, String)>,
}

impl Sandbox {
    pub fn new(config: SandboxConfig, metrics: Metrics) -> Result<Arc<Self>, SandboxError> {
        let engine = engine(EngineConfig {
            memory_bytes: config.limits.memory_bytes,
            max_concurrent_calls: config.max_concurrent_calls,
        })
        .map_err(SandboxError::Wasmtime)?;
        let linker = plugin::linker(&engine).map_err(SandboxError::Wasmtime)?;
        let cache = Arc::new(CompileCache::new(&engine, config.cache_dir.clone()));
        let ticker = EpochTicker::start(&engine);
        Ok(Arc::new(Self {
            engine,
            linker,
            cache,
            policy: RwLock::new(config.policy.clone()),
            config,
            metrics,
            by_kind: RwLock::default(),
            files: Mutex::default(),
            write_rates: Mutex::default(),
            ticker,
        }))
    }

    /// Loads one plugin file without registering it.
    pub async fn load_file(&self, path: &Path) -> Result<LoadedPlugin, LoadError> {
        let _running = self.ticker.running();
        let policy = self.policy();
        let mut plugin = self.loader(&policy).load(path).await?;
        self.share_write_rate(&mut plugin);
        Ok(plugin)
    }

    /// Compiles and validates `wasm` (from `origin`, for messages) as the plugin of the entry `name` of
    /// `policy`, a policy that may not be in force yet: nothing serves it until [`Sandbox::serve`].
    pub(crate) async fn load_artifact(
        &self,
        policy: &Policy,
        name: &str,
        wasm: Vec<u8>,
        origin: &str,
    ) -> Result<LoadedPlugin, LoadError> {
        let _running = self.ticker.running();
        let Some(entry) = policy.entry_named(name) else {
            return Err(LoadError::Refused(LoadRefusal {
                entry: "unknown".into(),
                reason: "unknown-plugin",
                message: format!("the policy has no entry named {name:?}"),
            }));
        };
        let digest = super::compile_cache::sha256_hex(&wasm);
        let mut plugin = self
            .loader(policy)
            .load_bytes(entry, wasm, digest, origin)
            .await?;
        self.share_write_rate(&mut plugin);
        Ok(plugin)
    }

    /// What the component `wasm` (from `origin`, for messages) says about itself, before any policy is
    /// consulted (see `plugin::Loader::describe`).
    pub(crate) async fn describe(&self, wasm: Vec<u8>, origin: &str) -> Result<PluginMetadata, LoadError> {
        let _running = self.ticker.running();
        let policy = self.policy();
        let digest = super::compile_cache::sha256_hex(&wasm);
        self.loader(&policy).describe(wasm, &digest, origin).await
    }

    /// Puts `policy` in force and `plugin` (loaded under it) in place of whatever served its kind; calls in
    /// flight finish on the version they started with. True when the kind is served for the first time.
    pub(crate) fn serve(&self, policy: Arc<Policy>, plugin: LoadedPlugin, origin: &str) -> bool {
        *self.write_policy() = policy;
        let mut report = ScanReport::default();
        self.register(origin, plugin, &mut report);
        self.metrics.plugins_loaded.set(self.ready_count() as i64);
        !report.new_kinds.is_empty()
    }

    /// Drops the entry `name` of a `ReconcilePlugin` resource from the policy in force; `kind`, which it
    /// served, becomes unavailable for `reason`.
    pub(crate) fn withdraw(&self, name: &str, kind: Option<&Kind>, reason: String) {
        let policy = self.policy().without_resource(name);
        *self.write_policy() = Arc::new(policy);
        if let Some(kind) = kind {
            self.unserve(kind, name, reason);
        }
    }

    /// Makes `kind`, which the plugin `plugin` served, unavailable for `reason`.
    pub(crate) fn unserve(&self, kind: &Kind, plugin: &str, reason: String) {
        tracing::error!(%plugin, %kind, "{reason}; its objects are no longer reconciled");
        self.write_kinds().insert(
            kind.clone(),
            PluginSlot::Unavailable {
                plugin: plugin.to_string(),
                reason,
            },
        );
        self.metrics.plugins_loaded.set(self.ready_count() as i64);
    }

    /// The policy in force.
    pub(crate) fn policy(&self) -> Arc<Policy> {
        self.policy
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn loader<'a>(&'a self, policy: &'a Policy) -> plugin::Loader<'a> {
        plugin::Loader {
            engine: &self.engine,
            linker: &self.linker,
            cache: &self.cache,
            compiler: self.config.compiler.as_ref(),
            policy,
            limits: self.config.limits,
            metrics: &self.metrics,
            base_config: &self.config.base_config,
        }
    }

    /// A reload does not refill the entry's bucket (its budget is the policy's, fixed while running).
    fn share_write_rate(&self, plugin: &mut LoadedPlugin) {
        let mut rates = self
            .write_rates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        plugin.write_rate = rates
            .entry(plugin.grant.entry.clone())
            .or_insert_with(|| plugin.write_rate.clone())
            .clone();
    }

    /// Loads new and changed `*.wasm` files of `dir` and retires removed ones.
    pub(crate) async fn scan(&self, dir: &Path) -> Result<ScanReport, SandboxError> {
        let mut report = ScanReport::default();
        let mut present = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|source| SandboxError::Directory {
            path: dir.display().to_string(),
            source,
        })?;
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
            .collect();
        paths.sort();
        for path in paths {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            present.push(path.clone());
            let (modified, len) = (meta.modified().ok(), meta.len());
            let unchanged = self
                .lock_files()
                .get(&path)
                .is_some_and(|f| f.modified == modified && f.len == len);
            if unchanged {
                continue;
            }
            let previous_kind = self.lock_files().get(&path).and_then(|f| f.kind.clone());
            let loaded = match self.load_file(&path).await {
                Ok(plugin) => self.refuse_escalation(plugin, previous_kind.as_ref()),
                Err(e) => Err(e),
            };
            match loaded {
                Ok(plugin) => {
                    let kind = plugin.metadata.reconciles.clone();
                    if let Some(conflict) = self.conflicting_file(&kind, &path) {
                        let reason = format!(
                            "{kind} is already reconciled by the plugin in {}",
                            conflict.display()
                        );
                        tracing::error!(path = %path.display(), "plugin not loaded: {reason}");
                        self.metrics.plugin_refused(&plugin.grant.entry, "kind-clash");
                        report.failed.push((path.clone(), reason));
                        // The version already running from this file (if any) keeps running, and must stop
                        // when the file goes: the file still serves the kind it served.
                        self.lock_files().insert(
                            path,
                            FileState {
                                modified,
                                len,
                                kind: previous_kind,
                            },
                        );
                        continue;
                    }
                    // A file that now reconciles another kind no longer serves the one it used to.
                    if let Some(previous) = previous_kind.as_ref().filter(|previous| **previous != kind) {
                        let reason = format!("the plugin in {} now reconciles {kind}", path.display());
                        tracing::warn!(kind = %previous, "{reason}");
                        let plugin_name = plugin.metadata.name.clone();
                        self.write_kinds().insert(
                            previous.clone(),
                            PluginSlot::Unavailable {
                                plugin: plugin_name,
                                reason,
                            },
                        );
                    }
                    self.register(&path.display().to_string(), plugin, &mut report);
                    self.lock_files().insert(
                        path,
                        FileState {
                            modified,
                            len,
                            kind: Some(kind),
                        },
                    );
                }
                Err(e) => {
                    if let Some(refusal) = e.refusal() {
                        self.metrics.plugin_refused(&refusal.entry, refusal.reason);
                    }
                    // Parts of it (a compiler's message, names) may come from the file.
                    let reason = log_guard::escape(&e.to_string(), log_guard::MAX_LOG_TEXT);
                    match &previous_kind {
                        Some(kind) => tracing::error!(
                            path = %path.display(), %kind,
                            "plugin update failed to load; the previous version keeps running: {reason}"
                        ),
                        None => tracing::error!(path = %path.display(), "plugin failed to load: {reason}"),
                    }
                    report.failed.push((path.clone(), reason));
                    self.lock_files().insert(
                        path,
                        FileState {
                            modified,
                            len,
                            kind: previous_kind,
                        },
                    );
                }
            }
        }
        self.retire_missing(&present);
        self.metrics.plugins_loaded.set(self.ready_count() as i64);
        Ok(report)
    }

    /// Refuses an update that holds more than the version running for the same kind.
    fn refuse_escalation(
        &self,
        plugin: LoadedPlugin,
        previous: Option<&Kind>,
    ) -> Result<LoadedPlugin, LoadError> {
        let Some(PluginSlot::Ready(running)) = previous.and_then(|kind| self.plugin_for(kind)) else {
            return Ok(plugin);
        };
        match plugin.grant.exceeds(&running.grant) {
            None => Ok(plugin),
            Some(more) => Err(LoadError::Refused(LoadRefusal {
                entry: plugin.grant.entry.clone(),
                reason: "escalation",
                message: format!(
                    "the update asks for {more}, which the running version was not granted (restart the operator to grant it)"
                ),
            })),
        }
    }

    fn register(&self, origin: &str, plugin: LoadedPlugin, report: &mut ScanReport) {
        let kind = plugin.metadata.reconciles.clone();
        let name = plugin.grant.entry.clone();
        self.metrics
            .plugin_loads
            .get_or_create(&LoadLabels {
                plugin: name.clone(),
                source: plugin.source.as_str().into(),
            })
            .inc();
        tracing::info!(
            plugin = %name, version = %plugin.metadata.version, %kind, %origin,
            digest = %&plugin.digest[..12], source = plugin.source.as_str(), grant = ?plugin.grant.describe(),
            withheld = ?plugin.grant.withheld, "plugin loaded"
        );
        let previous = self
            .write_kinds()
            .insert(kind.clone(), PluginSlot::Ready(Arc::new(plugin)));
        if previous.is_none() {
            report.new_kinds.push(kind);
        }
        report.loaded.push(name);
    }

    fn conflicting_file(&self, kind: &Kind, path: &Path) -> Option<PathBuf> {
        self.lock_files()
            .iter()
            .find(|(p, f)| p.as_path() != path && f.kind.as_ref() == Some(kind))
            .map(|(p, _)| p.clone())
    }

    fn retire_missing(&self, present: &[PathBuf]) {
        let gone: Vec<(PathBuf, Option<Kind>)> = self
            .lock_files()
            .iter()
            .filter(|(p, _)| !present.contains(p))
            .map(|(p, f)| (p.clone(), f.kind.clone()))
            .collect();
        for (path, kind) in gone {
            self.lock_files().remove(&path);
            let Some(kind) = kind else { continue };
            let mut kinds = self.write_kinds();
            let plugin = match kinds.get(&kind) {
                Some(PluginSlot::Ready(p)) => p.metadata.name.clone(),
                Some(PluginSlot::Unavailable { plugin, .. }) => plugin.clone(),
                None => continue,
            };
            tracing::error!(%plugin, %kind, path = %path.display(), "plugin file removed; its objects are no longer reconciled");
            kinds.insert(
                kind,
                PluginSlot::Unavailable {
                    plugin,
                    reason: format!("the plugin file {} was removed", path.display()),
                },
            );
        }
    }

    /// What serves `kind`, if anything ever did.
    pub(crate) fn plugin_for(&self, kind: &Kind) -> Option<PluginSlot> {
        self.by_kind
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(kind)
            .cloned()
    }

    /// Every ready plugin.
    pub(crate) fn plugins(&self) -> Vec<Arc<LoadedPlugin>> {
        self.by_kind
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter_map(|s| match s {
                PluginSlot::Ready(p) => Some(p.clone()),
                PluginSlot::Unavailable { .. } => None,
            })
            .collect()
    }

    fn ready_count(&self) -> usize {
        self.plugins().len()
    }

    /// Runs `reconcile` or `cleanup` of `plugin` for one object.
    pub async fn call(
        &self,
        plugin: &LoadedPlugin,
        context: CallContext,
        export: Export,
        object: String,
        attempt: u32,
    ) -> Result<Option<std::time::Duration>, CallFailure> {
        let _running = self.ticker.running();
        let started = std::time::Instant::now();
        let state = CallState::new(context, &self.config.limits);
        let request = super::bindings::wit_reconciler::Request { object, attempt };
        let result = call::call(
            &self.engine,
            plugin.pre(),
            state,
            export,
            &request,
            self.config.limits,
        )
        .await;
        self.metrics
            .plugin_call_duration
            .get_or_create(&CallLabels {
                plugin: plugin.grant.entry.clone(),
                export: export.name().into(),
            })
            .observe(started.elapsed().as_secs_f64());
        result
    }

    /// A context for calling `plugin` on behalf of `object` with `host`.
    pub fn context(&self, plugin: &LoadedPlugin, object: String, host: Arc<dyn HostApi>) -> CallContext {
        plugin.context(object, host, self.metrics.clone())
    }

    fn lock_files(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, FileState>> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_policy(&self) -> std::sync::RwLockWriteGuard<'_, Arc<Policy>> {
        self.policy
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_kinds(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Kind, PluginSlot>> {
        self.by_kind
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
