//! `kuberay-wasm plugin run PLUGIN.wasm --object OBJ.yaml`: one reconcile of one object, offline. The plugin
//! is loaded and granted as the operator loads and grants it (`Sandbox`, the policy), called in the same
//! sandbox with the same limits and budgets, and every host call it makes is judged by the operator's own
//! code: the grant check of `sandbox::gate`, then `admission` (names, namespace, ownership and
//! adoption, provenance and content, Pod Security) against an in-memory cluster (`cluster.rs`) holding the
//! object and the state given with `--objects`. Admitted writes are committed to that cluster; the report
//! lists the host calls, what was refused and why (the operator's messages), the events and log lines, the
//! outcome, and the writes as a diff against the given state (`report.rs`).
//!
//! What differs from the operator: nothing is sent to an API server (no webhooks, quotas or API-server
//! validation; server-side apply is approximated by a merge), there are no Ray heads (every Ray request
//! fails as unavailable), and every kind not known to be cluster-scoped is taken as served and namespaced.

mod checked;
mod cluster;
mod grant;
mod host;
mod report;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use kuberay_admission::strip_host_condition;
use kuberay_plugin_sdk::Kind;
use serde::Deserialize;
use serde_json::Value;

pub use self::{
    checked::CheckedHost,
    host::{CallResult, HostCall},
    report::Report,
};
use self::{cluster::MemoryCluster, host::OfflineHost};
use crate::{
    admission::{Admission, Primary},
    metrics::Metrics,
    policy::{Policy, PolicyError, Profile},
    sandbox::{
        CallBudget, CallLimits, ChildCompiler, Export, LoadError, Sandbox, SandboxConfig, SandboxError,
        compile_cache::sha256_hex,
    },
};

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The component.
    pub plugin: PathBuf,
    /// The object to reconcile (one YAML or JSON document).
    pub object: PathBuf,
    /// Other objects that exist (YAML documents, or a `List`), in the object's namespace unless they name one.
    pub objects: Option<PathBuf>,
    /// The grant: a policy entry, a `ReconcilePlugin` or its `grant`, or a policy file.
    pub grant: Option<PathBuf>,
    /// The policy whose entry and defaults apply (the built-in one when `None`).
    pub policy: Option<PathBuf>,
    /// The Pod Security level the object's namespace enforces (else a Namespace of `objects` says, else the
    /// policy's `namespaceDefault`).
    pub namespace_level: Option<Profile>,
    /// Where the component is compiled (in this process when `None`).
    pub compiler: Option<ChildCompiler>,
    /// Where compiled components are kept between runs (as the operator's `--cache-dir`); a private
    /// temporary directory, removed afterwards, when `None`.
    pub cache_dir: Option<PathBuf>,
    /// Wall time of the call (the operator's `--plugin-timeout`).
    pub timeout: Duration,
    /// Linear memory of the call (the operator's `--plugin-memory-mib`), in bytes.
    pub memory_bytes: usize,
}

/// Why a run could not be made (a plugin that fails or is refused is a run, reported).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A file could not be read.
    #[error("reading {path}")]
    Read { path: String, source: std::io::Error },
    /// A file is not what it should be (an object, objects, a grant).
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    /// The policy (`--policy`, or the one the grant makes) is invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The sandbox could not be set up.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The plugin could not be loaded, or its grant refuses it (the operator's load refusal).
    #[error("loading {path}")]
    Load { path: String, source: LoadError },
    /// No temporary directory for the compiled component.
    #[error("a temporary directory for compiled components: {0}")]
    TempDir(std::io::Error),
}

fn read(path: &Path) -> Result<Vec<u8>, RunError> {
    std::fs::read(path).map_err(|source| RunError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn input(path: &Path, message: impl Into<String>) -> RunError {
    RunError::Input {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// The documents of a YAML (or JSON) file; a `List`'s items count as documents.
fn documents(path: &Path) -> Result<Vec<Value>, RunError> {
    let text = String::from_utf8(read(path)?).map_err(|_| input(path, "not UTF-8 text"))?;
    let mut out = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = Value::deserialize(document).map_err(|e| input(path, e.to_string()))?;
        match value {
            Value::Null => {}
            Value::Object(ref map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
                let items = map.get("items").and_then(Value::as_array).cloned();
                out.extend(items.unwrap_or_default());
            }
            Value::Object(_) => out.push(value),
            _ => return Err(input(path, "a document that is not an object")),
        }
    }
    Ok(out)
}

/// Runs one reconcile (or cleanup) as `options` say.
pub async fn run(options: &RunOptions) -> Result<Report, RunError> {
    let wasm = read(&options.plugin)?;
    let origin = options.plugin.display().to_string();
    let mut given = documents(&options.object)?;
    if given.len() != 1 {
        return Err(input(&options.object, "give exactly one object to reconcile"));
    }
    let object = given.remove(0);
    let state = match &options.objects {
        Some(path) => documents(path)?,
        None => Vec::new(),
    };
    let (base, base_source) = match &options.policy {
        Some(path) => (Policy::read(path)?, format!("the policy {}", path.display())),
        None => (Policy::builtin(), "the built-in policy".to_string()),
    };
    // Without a cache directory, a private one for this run (removed when `_private` drops): the component
    // is compiled once for describing and loading.
    let (cache_dir, _private) = match &options.cache_dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let private = tempfile::tempdir().map_err(RunError::TempDir)?;
            (private.path().join("compiled"), Some(private))
        }
    };
    let sandbox = Sandbox::new(
        SandboxConfig {
            cache_dir: Some(cache_dir),
            limits: CallLimits {
                timeout: options.timeout,
                memory_bytes: options.memory_bytes,
                budget: CallBudget::default(),
            },
            policy: Arc::new(base.clone()),
            max_concurrent_calls: 2,
            compiler: options.compiler.clone(),
            // The configuration a plugin reads in a cluster with the default domain.
            base_config: crate::sandbox::default_base_config(),
        },
        Metrics::new(),
    )?;
    let load_error = |source| RunError::Load {
        path: origin.clone(),
        source,
    };
    let metadata = sandbox
        .describe(wasm.clone(), &origin)
        .await
        .map_err(load_error)?;
    let digest = sha256_hex(&wasm);
    let grant_text = match &options.grant {
        Some(path) => {
            let text = String::from_utf8(read(path)?).map_err(|_| input(path, "not UTF-8 text"))?;
            Some((path.display().to_string(), text))
        }
        None => None,
    };
    let chosen = grant::choose(
        &base,
        &base_source,
        &metadata,
        Some(&digest),
        grant_text.as_ref().map(|(p, t)| (p.as_str(), t.as_str())),
    )?;
    let plugin = sandbox
        .load_artifact(&chosen.policy, &chosen.name, wasm, &origin)
        .await
        .map_err(load_error)?;

    let kind = Kind::of_object(&object).ok_or_else(|| input(&options.object, "no apiVersion and kind"))?;
    if kind != plugin.metadata.reconciles {
        return Err(input(
            &options.object,
            format!("a {kind}; the plugin reconciles {}", plugin.metadata.reconciles),
        ));
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or_else(|| input(&options.object, "no metadata.name"))?
        .to_string();
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_string();
    let mut levels = BTreeMap::new();
    if let Some(level) = options.namespace_level {
        levels.insert(namespace.clone(), level.name().to_string());
    }
    let cluster = MemoryCluster::new(state, &namespace, levels)
        .map_err(|m| input(options.objects.as_deref().unwrap_or(&options.object), m))?;
    let primary = cluster
        .insert(object, &namespace)
        .map_err(|m| input(&options.object, m))?;
    let cluster = Arc::new(cluster);
    let before = cluster.snapshot();

    let mut report = Report::new(&plugin, &chosen.source, &kind, &namespace, &name);
    // As the operator decides: `cleanup` while the object is being deleted and carries the plugin's
    // finalizer; nothing at all while it is being deleted without it.
    let export = if primary.pointer("/metadata/deletionTimestamp").is_some() {
        let finalizers = primary.pointer("/metadata/finalizers").and_then(Value::as_array);
        match &plugin.grant.finalizer {
            Some(f) if finalizers.is_some_and(|all| all.iter().any(|x| x == f)) => Export::Cleanup,
            _ => {
                report.not_called(
                    "the object is being deleted and does not carry the plugin's finalizer: the operator does not call the plugin",
                );
                return Ok(report);
            }
        }
    } else {
        Export::Reconcile
    };
    let uid = primary
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let admission = Admission::new(
        cluster.clone(),
        Primary {
            kind,
            namespace: namespace.clone(),
            name: name.clone(),
            uid,
        },
        plugin.grant.clone(),
        &chosen.name,
        plugin.grant.finalizer.clone(),
    );
    let journal = Arc::new(Mutex::new(host::Journal::default()));
    let host = Arc::new(OfflineHost::new(
        admission,
        cluster.clone(),
        plugin.grant.clone(),
        journal.clone(),
    ));
    let mut for_plugin = primary;
    strip_host_condition(&mut for_plugin);
    let context = sandbox.context(&plugin, format!("{namespace}/{name}"), host);
    let outcome = sandbox
        .call(&plugin, context, export, for_plugin.to_string(), 0)
        .await;
    let journal = std::mem::take(&mut *journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    report.called(export, journal, outcome, &before, &cluster.snapshot());
    Ok(report)
}
