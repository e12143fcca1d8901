//! Building container environments the way KubeRay does: plain values and downward-API fields, added once,
//! never over a variable the user set.

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, ObjectFieldSelector};

/// Whether `container` already has a variable `name`.
pub fn exists(container: &Container, name: &str) -> bool {
    container.env.iter().flatten().any(|e| e.name == name)
}

/// `name=value`.
pub fn value(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        value_from: None,
    }
}

/// A variable read from the Pod's own metadata (downward API).
pub fn field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_string(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// Appends `var`, whatever the container has.
pub fn push(container: &mut Container, var: EnvVar) {
    container.env.get_or_insert_with(Vec::new).push(var);
}

/// Appends `var` unless the container already has a variable of that name (the user's wins).
pub fn push_if_absent(container: &mut Container, var: EnvVar) {
    if !exists(container, &var.name) {
        push(container, var);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_variables_win() {
        let mut c = Container::default();
        push_if_absent(&mut c, value("A", "user"));
        push_if_absent(&mut c, value("A", "operator"));
        push_if_absent(&mut c, field("B", "metadata.name"));
        assert!(exists(&c, "B"));
        let values: Vec<_> = c.env.iter().flatten().map(|v| v.value.clone()).collect();
        assert_eq!(values, [Some("user".to_string()), None]);
        push(&mut c, value("A", "again"));
        assert_eq!(c.env.as_ref().map(Vec::len), Some(3));
    }
}
