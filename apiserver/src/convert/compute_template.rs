//! Compute templates: stored as ConfigMaps named after the template, in KubeRay's layout (string data
//! keys `name`, `namespace`, `cpu`, `memory`, `memory_unit`, `gpu`, `gpu_accelerator`,
//! `extended_resources` and `tolerations` as JSON), so templates written by KubeRay's apiserver and by this
//! one are interchangeable.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::{
    api::core::v1::{ConfigMap, Toleration},
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use serde::{Deserialize, Serialize};

use super::labels;
use crate::api::{ComputeTemplate, PodToleration};

/// `memory_unit` when the template names none (KubeRay's default, also for templates written before the
/// unit existed, which meant Gi).
pub(crate) const DEFAULT_MEMORY_UNIT: &str = "Gi";
/// The GPU resource when `gpu_accelerator` is empty.
pub(crate) const DEFAULT_GPU_ACCELERATOR: &str = "nvidia.com/gpu";

/// A toleration as KubeRay stores it: Go's JSON of the message, empty fields left out.
#[derive(Serialize, Deserialize, Default)]
struct StoredToleration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    operator: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    effect: String,
}

/// The unit the template's memory is counted in.
pub(crate) fn memory_unit(template: &ComputeTemplate) -> &str {
    if template.memory_unit.is_empty() {
        DEFAULT_MEMORY_UNIT
    } else {
        &template.memory_unit
    }
}

/// The template's memory as a Kubernetes quantity (`4Gi`).
pub(crate) fn memory_quantity(template: &ComputeTemplate) -> String {
    format!("{}{}", template.memory, memory_unit(template))
}

/// The ConfigMap that stores `template` (already validated, namespace set).
pub(crate) fn to_config_map(template: &ComputeTemplate) -> ConfigMap {
    let extended: BTreeMap<_, _> = template.extended_resources.iter().collect();
    // Go writes a map that protobuf decoding left nil as `null`.
    let extended = if extended.is_empty() {
        "null".to_owned()
    } else {
        serde_json::to_string(&extended).unwrap_or_else(|_| "null".to_owned())
    };
    let mut data = BTreeMap::from([
        ("name", template.name.clone()),
        ("namespace", template.namespace.clone()),
        ("cpu", template.cpu.to_string()),
        ("memory", template.memory.to_string()),
        ("memory_unit", memory_unit(template).to_owned()),
        ("gpu", template.gpu.to_string()),
        ("gpu_accelerator", template.gpu_accelerator.clone()),
        ("extended_resources", extended),
    ]);
    if !template.tolerations.is_empty() {
        let stored: Vec<_> = template.tolerations.iter().map(stored_toleration).collect();
        if let Ok(json) = serde_json::to_string(&stored) {
            data.insert("tolerations", json);
        }
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(template.name.clone()),
            namespace: Some(template.namespace.clone()),
            labels: Some(BTreeMap::from([
                (
                    labels::CONFIG_TYPE.to_owned(),
                    labels::CONFIG_TYPE_TEMPLATE.to_owned(),
                ),
                (labels::COMPUTE_TEMPLATE.to_owned(), template.name.clone()),
            ])),
            ..Default::default()
        },
        data: Some(data.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
        ..Default::default()
    }
}

fn stored_toleration(t: &PodToleration) -> StoredToleration {
    StoredToleration {
        key: t.key.clone(),
        operator: t.operator.clone(),
        value: t.value.clone(),
        effect: t.effect.clone(),
    }
}

/// The template a ConfigMap stores. Unreadable values read as zero or empty (and are logged), as KubeRay
/// reads them: listing templates must not fail because one was edited by hand.
pub(crate) fn from_config_map(config_map: &ConfigMap) -> ComputeTemplate {
    let empty = BTreeMap::new();
    let data = config_map.data.as_ref().unwrap_or(&empty);
    let name = config_map.metadata.name.clone().unwrap_or_default();
    let text = |key: &str| data.get(key).cloned().unwrap_or_default();
    let number = |key: &str| {
        let value = text(key);
        value.parse::<u32>().unwrap_or_else(|_| {
            if !value.is_empty() {
                tracing::warn!(template = %name, key, value, "compute template: not a whole number");
            }
            0
        })
    };
    ComputeTemplate {
        name: name.clone(),
        namespace: config_map.metadata.namespace.clone().unwrap_or_default(),
        cpu: number("cpu"),
        memory: number("memory"),
        gpu: number("gpu"),
        gpu_accelerator: text("gpu_accelerator"),
        memory_unit: text("memory_unit"),
        extended_resources: json_or_default(&name, "extended_resources", data.get("extended_resources")),
        tolerations: json_or_default::<Vec<StoredToleration>>(&name, "tolerations", data.get("tolerations"))
            .into_iter()
            .map(|t| PodToleration {
                key: t.key,
                operator: t.operator,
                value: t.value,
                effect: t.effect,
            })
            .collect(),
    }
}

fn json_or_default<T: serde::de::DeserializeOwned + Default>(
    template: &str,
    key: &str,
    json: Option<&String>,
) -> T {
    let Some(json) = json else {
        return T::default();
    };
    match serde_json::from_str::<Option<T>>(json) {
        Ok(value) => value.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(template, key, %error, "compute template: unreadable JSON");
            T::default()
        }
    }
}

/// The Pod tolerations of a template, mapped as KubeRay maps them: operator `Exists` or else `Equal`,
/// effect `NoExecute`, `NoSchedule` or else `PreferNoSchedule`.
pub(crate) fn tolerations(template: &ComputeTemplate) -> Vec<Toleration> {
    template
        .tolerations
        .iter()
        .map(|t| {
            let operator = if t.operator == "Exists" { "Exists" } else { "Equal" };
            let effect = match t.effect.as_str() {
                "NoExecute" | "NoSchedule" => t.effect.as_str(),
                _ => "PreferNoSchedule",
            };
            Toleration {
                key: super::non_empty(&t.key),
                operator: Some(operator.to_owned()),
                value: super::non_empty(&t.value),
                effect: Some(effect.to_owned()),
                toleration_seconds: None,
            }
        })
        .collect()
}

/// The resource the template's GPUs are counted in: its accelerator, or [`DEFAULT_GPU_ACCELERATOR`].
pub(crate) fn gpu_resource(template: &ComputeTemplate) -> &str {
    if template.gpu_accelerator.is_empty() {
        DEFAULT_GPU_ACCELERATOR
    } else {
        &template.gpu_accelerator
    }
}

/// Requests (equal to limits) of a container sized by `template`: whole CPUs, memory in the template's
/// unit, and the GPUs and extended resources it names.
pub(crate) fn resources(template: &ComputeTemplate) -> BTreeMap<String, Quantity> {
    let mut resources = BTreeMap::from([
        ("cpu".to_owned(), Quantity(template.cpu.to_string())),
        ("memory".to_owned(), Quantity(memory_quantity(template))),
    ]);
    if template.gpu > 0 {
        resources.insert(
            gpu_resource(template).to_owned(),
            Quantity(template.gpu.to_string()),
        );
    }
    let extended: HashMap<_, _> = template
        .extended_resources
        .iter()
        .filter(|(_, n)| **n > 0)
        .collect();
    for (name, count) in extended {
        resources.insert(name.clone(), Quantity(count.to_string()));
    }
    resources
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::convert::fixtures::gpu_template;

    #[test]
    fn config_map_has_kuberays_layout() {
        let cm = to_config_map(&gpu_template());
        assert_eq!(cm.metadata.name.as_deref(), Some("gpu-small"));
        let labels = cm.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["ray.io/config-type"], "compute-template");
        assert_eq!(labels["ray.io/compute-template"], "gpu-small");
        let data = cm.data.clone().unwrap_or_default();
        assert_eq!(data["cpu"], "4");
        assert_eq!(data["memory"], "16");
        assert_eq!(data["memory_unit"], "Gi");
        assert_eq!(data["gpu"], "1");
        assert_eq!(data["gpu_accelerator"], "nvidia.com/a100");
        assert_eq!(data["extended_resources"], r#"{"vpc.amazonaws.com/efa":2}"#);
        assert_eq!(
            data["tolerations"],
            r#"[{"key":"gpu","operator":"Equal","value":"a100","effect":"NoSchedule"}]"#
        );
    }

    #[test]
    fn round_trip() {
        assert_eq!(from_config_map(&to_config_map(&gpu_template())), gpu_template());
        let plain = ComputeTemplate {
            name: "small".into(),
            namespace: "ns".into(),
            cpu: 1,
            memory: 2,
            ..Default::default()
        };
        let cm = to_config_map(&plain);
        assert_eq!(
            cm.data.as_ref().map(|d| d["extended_resources"].as_str()),
            Some("null")
        );
        assert!(cm.data.as_ref().is_some_and(|d| !d.contains_key("tolerations")));
        // The default unit is written out, as KubeRay writes it.
        let back = from_config_map(&cm);
        assert_eq!(
            back,
            ComputeTemplate {
                memory_unit: "Gi".into(),
                ..plain
            }
        );
    }

    #[test]
    fn hand_edited_templates_still_read() {
        let mut cm = to_config_map(&gpu_template());
        if let Some(data) = cm.data.as_mut() {
            data.insert("cpu".into(), "lots".into());
            data.insert("tolerations".into(), "not json".into());
            data.remove("memory_unit");
        }
        let back = from_config_map(&cm);
        assert_eq!(back.cpu, 0);
        assert!(back.tolerations.is_empty());
        assert_eq!(memory_quantity(&back), "16Gi");
    }

    #[test]
    fn resources_and_tolerations_for_pods() {
        let r = resources(&gpu_template());
        assert_eq!(r["cpu"].0, "4");
        assert_eq!(r["memory"].0, "16Gi");
        assert_eq!(r["nvidia.com/a100"].0, "1");
        assert_eq!(r["vpc.amazonaws.com/efa"].0, "2");
        let mut t = gpu_template();
        t.gpu_accelerator.clear();
        t.tolerations[0].effect = "whatever".into();
        t.tolerations[0].operator = "Exists".into();
        assert_eq!(resources(&t)["nvidia.com/gpu"].0, "1");
        let tol = &tolerations(&t)[0];
        assert_eq!(tol.effect.as_deref(), Some("PreferNoSchedule"));
        assert_eq!(tol.operator.as_deref(), Some("Exists"));
    }
}
