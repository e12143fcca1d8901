//! Environment variables: the API's `EnvironmentVariables` (literal values and values from ConfigMaps,
//! Secrets, resource fields or Pod fields) as a container's `env`, and the autoscaler's `env`/`envFrom`.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{
    ConfigMapEnvSource, ConfigMapKeySelector, EnvFromSource, EnvVar, EnvVarSource, ObjectFieldSelector,
    ResourceFieldSelector, SecretEnvSource, SecretKeySelector,
};

use crate::api::{EnvValueFrom, EnvironmentVariables, env_value_from::Source};

/// The variables as container `env` entries: literal values first, then references, each in name order
/// (KubeRay's order is Go's random map order).
pub(crate) fn to_env_vars(vars: Option<&EnvironmentVariables>) -> Vec<EnvVar> {
    let Some(vars) = vars else {
        return Vec::new();
    };
    let mut values: Vec<_> = vars.values.iter().collect();
    values.sort();
    let mut refs: Vec<_> = vars.values_from.iter().collect();
    refs.sort_by(|a, b| a.0.cmp(b.0));
    let literal = values.into_iter().map(|(name, value)| EnvVar {
        name: name.clone(),
        value: Some(value.clone()),
        value_from: None,
    });
    let referenced = refs.into_iter().map(|(name, from)| EnvVar {
        name: name.clone(),
        value: None,
        value_from: Some(value_source(from)),
    });
    literal.chain(referenced).collect()
}

fn value_source(from: &EnvValueFrom) -> EnvVarSource {
    let (name, key) = (from.name.clone(), from.key.clone());
    match from.source() {
        Source::Configmap => EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name,
                key,
                optional: None,
            }),
            ..Default::default()
        },
        Source::Secret => EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name,
                key,
                optional: None,
            }),
            ..Default::default()
        },
        Source::Resourcefield => EnvVarSource {
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: Some(name),
                resource: key,
                divisor: None,
            }),
            ..Default::default()
        },
        Source::Field => EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: key,
                api_version: None,
            }),
            ..Default::default()
        },
    }
}

/// Appends `more` to `env`; a variable already there is replaced in place (the later definition wins, as
/// it would in the container, without a duplicate entry).
pub(crate) fn merge(env: &mut Vec<EnvVar>, more: Vec<EnvVar>) {
    for var in more {
        match env.iter_mut().find(|v| v.name == var.name) {
            Some(existing) => *existing = var,
            None => env.push(var),
        }
    }
}

/// A container's variables as the API's, without the `reserved` ones KubeRay or the operator set.
pub(crate) fn from_env_vars(env: &[EnvVar], reserved: &[&str]) -> EnvironmentVariables {
    let mut vars = EnvironmentVariables::default();
    for var in env.iter().filter(|v| !reserved.contains(&v.name.as_str())) {
        match &var.value_from {
            None => {
                vars.values
                    .insert(var.name.clone(), var.value.clone().unwrap_or_default());
            }
            Some(source) => {
                if let Some(from) = value_from(source) {
                    vars.values_from.insert(var.name.clone(), from);
                }
            }
        }
    }
    vars
}

fn value_from(source: &EnvVarSource) -> Option<EnvValueFrom> {
    let (source, name, key) = if let Some(r) = &source.config_map_key_ref {
        (Source::Configmap, r.name.clone(), r.key.clone())
    } else if let Some(r) = &source.secret_key_ref {
        (Source::Secret, r.name.clone(), r.key.clone())
    } else if let Some(r) = &source.resource_field_ref {
        let container = r.container_name.clone().unwrap_or_default();
        (Source::Resourcefield, container, r.resource.clone())
    } else if let Some(r) = &source.field_ref {
        (Source::Field, String::new(), r.field_path.clone())
    } else {
        return None;
    };
    Some(EnvValueFrom {
        source: source.into(),
        name,
        key,
    })
}

/// The autoscaler's variables: literal values as `env`, ConfigMap and Secret references as whole
/// `envFrom` sources (the key is ignored, as KubeRay ignores it; other sources are refused by validation).
pub(crate) fn to_autoscaler_env(
    vars: &EnvironmentVariables,
) -> (Option<Vec<EnvVar>>, Option<Vec<EnvFromSource>>) {
    let env = to_env_vars(Some(&EnvironmentVariables {
        values: vars.values.clone(),
        values_from: HashMap::new(),
    }));
    let mut refs: Vec<_> = vars.values_from.iter().collect();
    refs.sort_by(|a, b| a.0.cmp(b.0));
    let env_from: Vec<_> = refs.into_iter().filter_map(|(_, from)| env_from(from)).collect();
    (super::non_empty_vec(env), super::non_empty_vec(env_from))
}

fn env_from(from: &EnvValueFrom) -> Option<EnvFromSource> {
    let name = from.name.clone();
    match from.source() {
        Source::Configmap => Some(EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource { name, optional: None }),
            ..Default::default()
        }),
        Source::Secret => Some(EnvFromSource {
            secret_ref: Some(SecretEnvSource { name, optional: None }),
            ..Default::default()
        }),
        Source::Resourcefield | Source::Field => None,
    }
}

/// The autoscaler's `env` and `envFrom` as the API's variables; `envFrom` sources have no name of their
/// own, so they are keyed by position ("0", "1", ...), as KubeRay keys them.
pub(crate) fn from_autoscaler_env(
    env: Option<&Vec<EnvVar>>,
    env_from: Option<&Vec<EnvFromSource>>,
) -> Option<EnvironmentVariables> {
    let env = env.map_or(&[][..], Vec::as_slice);
    let env_from = env_from.map_or(&[][..], Vec::as_slice);
    if env.is_empty() && env_from.is_empty() {
        return None;
    }
    let values = env
        .iter()
        .map(|v| (v.name.clone(), v.value.clone().unwrap_or_default()))
        .collect();
    let values_from = env_from
        .iter()
        .enumerate()
        .filter_map(|(i, source)| {
            let (source, name) = match (&source.config_map_ref, &source.secret_ref) {
                (Some(c), _) => (Source::Configmap, c.name.clone()),
                (None, Some(s)) => (Source::Secret, s.name.clone()),
                (None, None) => return None,
            };
            let from = EnvValueFrom {
                source: source.into(),
                name,
                key: String::new(),
            };
            Some((i.to_string(), from))
        })
        .collect();
    Some(EnvironmentVariables { values, values_from })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(source: Source, name: &str, key: &str) -> EnvValueFrom {
        EnvValueFrom {
            source: source.into(),
            name: name.into(),
            key: key.into(),
        }
    }

    fn sample() -> EnvironmentVariables {
        EnvironmentVariables {
            values: HashMap::from([("B".into(), "2".into()), ("A".into(), "1".into())]),
            values_from: HashMap::from([
                ("CM".into(), from(Source::Configmap, "cm", "k")),
                ("SEC".into(), from(Source::Secret, "s", "password")),
                (
                    "RES".into(),
                    from(Source::Resourcefield, "ray-head", "limits.cpu"),
                ),
                ("FIELD".into(), from(Source::Field, "", "status.hostIP")),
            ]),
        }
    }

    #[test]
    fn every_source_round_trips_in_name_order() {
        let env = to_env_vars(Some(&sample()));
        let names: Vec<_> = env.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "CM", "FIELD", "RES", "SEC"]);
        let secret = env[5].value_from.as_ref().and_then(|s| s.secret_key_ref.as_ref());
        assert_eq!(
            secret.map(|s| (s.name.as_str(), s.key.as_str())),
            Some(("s", "password"))
        );
        let resource = env[4]
            .value_from
            .as_ref()
            .and_then(|s| s.resource_field_ref.as_ref());
        assert_eq!(
            resource.and_then(|r| r.container_name.as_deref()),
            Some("ray-head")
        );
        assert_eq!(from_env_vars(&env, &[]), sample());
    }

    #[test]
    fn reserved_names_are_left_out_and_later_definitions_win() {
        let mut env = to_env_vars(Some(&EnvironmentVariables {
            values: HashMap::from([("MY_POD_IP".into(), "x".into()), ("A".into(), "1".into())]),
            ..Default::default()
        }));
        merge(
            &mut env,
            to_env_vars(Some(&EnvironmentVariables {
                values: HashMap::from([("A".into(), "2".into())]),
                ..Default::default()
            })),
        );
        assert_eq!(env.len(), 2);
        let back = from_env_vars(&env, &["MY_POD_IP"]);
        assert_eq!(back.values, HashMap::from([("A".into(), "2".into())]));
    }

    #[test]
    fn autoscaler_env_uses_env_from_for_references() {
        let (env, env_from) = to_autoscaler_env(&sample());
        assert_eq!(env.as_ref().map(Vec::len), Some(2));
        // Only the ConfigMap and the Secret can be whole sources.
        assert_eq!(env_from.as_ref().map(Vec::len), Some(2));
        let back = from_autoscaler_env(env.as_ref(), env_from.as_ref()).unwrap_or_default();
        assert_eq!(back.values, sample().values);
        assert_eq!(back.values_from.len(), 2);
        assert_eq!(back.values_from["0"].name, "cm");
        assert_eq!(back.values_from["1"].name, "s");
        assert_eq!(from_autoscaler_env(None, None), None);
    }
}
