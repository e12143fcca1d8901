//! Which grant `plugin run` runs a plugin under: the `--grant` file (a policy entry, a `ReconcilePlugin` or
//! its `grant`, or a whole policy file), else the policy's entry named like the plugin, else what the plugin asks
//! for under the policy's `defaults`. Whatever the source, the grant is then made as the operator makes it
//! (`policy::grant_for_entry`, through `Sandbox::load_artifact`; the choice without `--grant` is
//! `policy::native`'s, shared with the SDK's `FakeHost`): what the plugin asks for **and** what the
//! entry allows.

use kuberay_plugin_sdk::PluginMetadata;
use serde_json::{Map, Value};

use super::RunError;
use crate::policy::{
    Policy,
    native::{with_entry, with_plugin},
};

/// A policy holding the entry to run the plugin under, that entry's name, and where it came from.
pub(crate) struct Chosen {
    pub(crate) policy: Policy,
    pub(crate) name: String,
    pub(crate) source: String,
}

/// The fields of a policy entry that name the plugin rather than grant it something.
const IDENTITY: [&str; 4] = ["name", "file", "sha256", "reconciles"];

/// Chooses the grant for the plugin `metadata` (component digest `digest`, none for a plugin compiled
/// natively, whose pins are not checked) within `base` (described as
/// `base_source`); `grant` is the `--grant` file's path and text, if given.
pub(crate) fn choose(
    base: &Policy,
    base_source: &str,
    metadata: &PluginMetadata,
    digest: Option<&str>,
    grant: Option<(&str, &str)>,
) -> Result<Chosen, RunError> {
    let Some((path, text)) = grant else {
        let (policy, added) = with_plugin(base, metadata)?;
        let source = if added {
            format!(
                "what the plugin asks for, under the defaults of {base_source} (it has no entry {:?})",
                metadata.name
            )
        } else {
            format!("the entry {:?} of {base_source}", metadata.name)
        };
        return Ok(Chosen {
            policy,
            name: metadata.name.clone(),
            source,
        });
    };
    let invalid = |message: String| RunError::Input {
        path: path.to_string(),
        message,
    };
    let value: Value = serde_yaml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    // A list of entries (to append to a policy's `plugins:`, as `policy-entry.yaml`): the plugin's.
    let value = match value {
        Value::Array(entries) if entries.len() == 1 => entries.into_iter().next().unwrap_or_default(),
        Value::Array(entries) => entries
            .into_iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(metadata.name.as_str()))
            .ok_or_else(|| invalid(format!("no entry named {:?}, the plugin's name", metadata.name)))?,
        other => other,
    };
    let Value::Object(mut fields) = value else {
        return Err(invalid(
            "not a policy entry, a ReconcilePlugin grant or a policy file".into(),
        ));
    };
    // A whole ReconcilePlugin resource: its name, its kind and its grant.
    if fields.get("kind").and_then(Value::as_str) == Some("ReconcilePlugin") {
        let resource = Value::Object(fields);
        let at = |pointer: &str| resource.pointer(pointer).cloned().unwrap_or_default();
        let mut entry = match at("/spec/grant") {
            Value::Object(grant) => grant,
            Value::Null => Map::new(),
            _ => return Err(invalid("spec.grant is not a map".into())),
        };
        entry.insert("name".into(), at("/metadata/name"));
        entry.insert("reconciles".into(), at("/spec/reconciles"));
        if let Some(config) = resource.pointer("/spec/config") {
            entry.insert("config".into(), config.clone());
        }
        fields = entry;
    }
    if fields.contains_key("plugins") {
        let policy = Policy::parse(text).map_err(|e| invalid(e.to_string()))?;
        let Some(entry) = policy.entry_named(&metadata.name) else {
            return Err(invalid(format!(
                "the policy has no entry named {:?}, the plugin's name",
                metadata.name
            )));
        };
        check_pin(entry.sha256.as_deref(), digest).map_err(invalid)?;
        return Ok(Chosen {
            name: metadata.name.clone(),
            source: format!("the entry {:?} of the policy {path}", metadata.name),
            policy,
        });
    }
    let text_of =
        |fields: &Map<String, Value>, key: &str| fields.get(key).and_then(Value::as_str).map(str::to_string);
    let name = text_of(&fields, "name").unwrap_or_else(|| metadata.name.clone());
    let reconciles = text_of(&fields, "reconciles").unwrap_or_else(|| metadata.reconciles.to_string());
    check_pin(text_of(&fields, "sha256").as_deref(), digest).map_err(invalid)?;
    fields.retain(|key, _| !IDENTITY.contains(&key.as_str()));
    let policy = with_entry(base, &name, &reconciles, &fields).map_err(|e| invalid(e.to_string()))?;
    Ok(Chosen {
        policy,
        name,
        source: format!("{path}, under the defaults of {base_source}"),
    })
}

/// Refuses a pin that is not the component's digest, as the operator does.
fn check_pin(pin: Option<&str>, digest: Option<&str>) -> Result<(), String> {
    let Some(digest) = digest else { return Ok(()) };
    match pin.map(|p| p.trim_start_matches("sha256:").to_ascii_lowercase()) {
        Some(pin) if pin != digest => Err(format!(
            "the file's sha256 {digest} is not the one the policy pins ({pin})"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use kuberay_plugin_sdk::{Capability, Kind, Verb};

    use super::*;

    fn metadata() -> PluginMetadata {
        let widgets = Kind::new("example.com", "v1", "Widget");
        let config_maps = Kind::new("", "v1", "ConfigMap");
        PluginMetadata {
            name: "widget".into(),
            version: "1".into(),
            reconciles: widgets.clone(),
            owns: vec![config_maps.clone()],
            capabilities: vec![
                Capability::new(widgets, &[Verb::ApplyStatus]),
                Capability::new(config_maps, &[Verb::Get, Verb::Apply]),
            ],
            finalizer: None,
            uses_ray_head: false,
        }
    }

    fn chosen(grant: Option<&str>) -> Result<Chosen, RunError> {
        choose(
            &Policy::builtin(),
            "the built-in policy",
            &metadata(),
            Some(&"a".repeat(64)),
            grant.map(|text| ("grant.yaml", text)),
        )
    }

    #[test]
    fn each_form_of_grant_gives_an_entry_named_after_the_plugin() {
        let entry = "- {name: widget, file: widget.wasm, reconciles: example.com/v1/Widget, verbs: {v1/ConfigMap: [get]}}";
        let resource = "apiVersion: plugins.kuberay-wasm.io/v1alpha1\nkind: ReconcilePlugin\n\
                        metadata: {name: widget}\nspec: {reconciles: example.com/v1/Widget, artifact: x,\n\
                        grant: {verbs: {v1/ConfigMap: [get]}}}";
        let grant = "verbs: {v1/ConfigMap: [get]}";
        for text in [entry, resource, grant] {
            let chosen = chosen(Some(text)).unwrap();
            assert_eq!(chosen.name, "widget");
            let entry = chosen.policy.entry_named("widget").unwrap();
            assert_eq!(entry.verbs.len(), 1, "{text}");
            assert!(
                chosen.policy.entry_named("raycluster").is_some(),
                "the rest stays"
            );
        }
        // No grant: what it asks for, under the defaults.
        let asked = chosen(None).unwrap();
        let entry = asked.policy.entry_named("widget").unwrap();
        assert_eq!(entry.verbs.len(), 2);
        assert!(asked.source.contains("what the plugin asks for"));
    }

    #[test]
    fn a_pin_that_is_not_the_component_and_a_policy_without_the_plugin_are_refused() {
        let pinned = format!("sha256: {}", "b".repeat(64));
        let error = chosen(Some(&pinned)).err().unwrap().to_string();
        assert!(error.contains("is not the one the policy pins"), "{error}");
        let policy = "plugins: [{name: other, file: o.wasm, reconciles: example.com/v1/Other}]";
        let error = chosen(Some(policy)).err().unwrap().to_string();
        assert!(error.contains("no entry named \"widget\""), "{error}");
    }
}
