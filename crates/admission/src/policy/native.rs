//! The grant of a plugin that is not loaded from a file the policy names: a plugin compiled natively for its
//! unit tests (the SDK's `FakeHost`, `CheckedHost`) or a component run offline (`plugin run`). It gets the
//! policy's entry named like the plugin, else exactly what the plugin asks for under the policy's
//! `defaults`; either way the grant is then made as the operator makes it ([`grant_for_entry`]: what the
//! plugin asks for **and** what the entry allows).

use kuberay_core::{PluginMetadata, Verb};
use serde_json::{Map, Value, json};

use super::{
    Grant, LoadRefusal, Policy, PolicyError,
    file::{Entry, verb_name},
    grant_for_entry,
};
use crate::budget::CallBudget;

/// The grant a plugin asks for, as a policy entry's keys: its owned kinds, verbs, Ray heads and finalizer.
pub fn asked_for(metadata: &PluginMetadata) -> Map<String, Value> {
    let owns: Vec<String> = metadata.owns.iter().map(ToString::to_string).collect();
    let mut verbs = Map::new();
    for capability in &metadata.capabilities {
        let names = verbs
            .entry(capability.kind.to_string())
            .or_insert_with(|| json!([]));
        if let Some(names) = names.as_array_mut() {
            names.extend(capability.verbs.iter().map(|v: &Verb| json!(verb_name(*v))));
        }
    }
    let mut fields = Map::new();
    fields.insert("owns".into(), json!(owns));
    fields.insert("verbs".into(), Value::Object(verbs));
    fields.insert("rayHeads".into(), json!(metadata.uses_ray_head));
    if let Some(finalizer) = &metadata.finalizer {
        fields.insert("finalizer".into(), json!(finalizer));
    }
    fields
}

/// `base` with the entry `name` reconciling `reconciles` granted `grant` (a policy entry's keys but its
/// identity) in place of any entry of that name or kind.
pub fn with_entry(
    base: &Policy,
    name: &str,
    reconciles: &str,
    grant: &Map<String, Value>,
) -> Result<Policy, PolicyError> {
    let replaced: Vec<String> = base
        .entries()
        .iter()
        .filter(|e| e.name == name || e.reconciles.to_string() == reconciles)
        .map(|e| e.name.clone())
        .collect();
    let policy = base.clone().without(&replaced)?;
    // A policy entry's `config` is the resource's `spec.config`, not part of its grant.
    let mut grant = grant.clone();
    let config = grant.remove("config");
    policy.with_resource(name, reconciles, &grant, config.as_ref())
}

/// `base` if it has an entry named like the plugin, else `base` with an entry granting what the plugin asks
/// for under its defaults; and whether that entry was added.
pub fn with_plugin(base: &Policy, metadata: &PluginMetadata) -> Result<(Policy, bool), PolicyError> {
    if base.entry_named(&metadata.name).is_some() {
        return Ok((base.clone(), false));
    }
    let policy = with_entry(
        base,
        &metadata.name,
        &metadata.reconciles.to_string(),
        &asked_for(metadata),
    )?;
    Ok((policy, true))
}

/// A plugin's grant within a policy, and its entry's configuration.
#[derive(Debug, Clone)]
pub struct PluginGrant {
    pub grant: Grant,
    /// The entry's `config` (what the plugin's `config()` returns, over the operator's base configuration).
    pub config: Map<String, Value>,
}

/// Why a plugin would not run under a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NativeRefusal {
    #[error("the operator would not load the plugin: {0}")]
    Policy(String),
    #[error("the operator would not load the plugin: {0}")]
    Refused(#[from] LoadRefusal),
}

/// The grant of the plugin `metadata` under `base` ([`with_plugin`], then [`grant_for_entry`] with the
/// operator's default budget).
pub fn grant_for_plugin(base: &Policy, metadata: &PluginMetadata) -> Result<PluginGrant, NativeRefusal> {
    let (policy, _) = with_plugin(base, metadata).map_err(|e| NativeRefusal::Policy(e.to_string()))?;
    let entry: &Entry = policy
        .entry_named(&metadata.name)
        .ok_or_else(|| NativeRefusal::Policy(format!("no policy entry named {:?}", metadata.name)))?;
    let grant = grant_for_entry(&policy, entry, metadata, CallBudget::default())?;
    Ok(PluginGrant {
        grant,
        config: entry.config.clone(),
    })
}
