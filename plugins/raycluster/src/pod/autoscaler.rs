//! The in-tree autoscaler's sidecar container on the head Pod, built as KubeRay builds it from the Ray image,
//! with `autoscalerOptions` overriding parts of it. Its ServiceAccount and Role are `crate::autoscaler`'s.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, ResourceRequirements},
    apimachinery::pkg::api::resource::Quantity,
};
use kuberay_crds::{AutoscalerOptions, constants::labels};
use kuberay_rules::operator_env::OperatorEnv;

use super::{env, shell_command};
use crate::consts::{AUTOSCALER_CONTAINER_NAME, env as env_names};

/// The command KubeRay runs, also exported as `KUBERAY_GEN_AUTOSCALER_START_CMD` so custom `args` can
/// wrap it.
pub const START_COMMAND: &str =
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)";

fn fixed_resources(cpu: &str, memory: &str) -> ResourceRequirements {
    let list = BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.to_string())),
        ("memory".to_string(), Quantity(memory.to_string())),
    ]);
    ResourceRequirements {
        limits: Some(list.clone()),
        requests: Some(list),
        ..ResourceRequirements::default()
    }
}

/// The autoscaler sidecar: the Ray image, 500m CPU and 512Mi, then the user's `autoscalerOptions`.
pub fn container(
    ray_image: Option<&str>,
    options: Option<&AutoscalerOptions>,
    env: &OperatorEnv,
) -> Container {
    let mut container = Container {
        name: AUTOSCALER_CONTAINER_NAME.into(),
        image: ray_image.map(str::to_string),
        image_pull_policy: Some("IfNotPresent".into()),
        env: Some(vec![
            env::label_field(env_names::RAY_CLUSTER_NAME, labels::RAY_CLUSTER),
            env::field(env_names::RAY_CLUSTER_NAMESPACE, "metadata.namespace"),
            env::field("RAY_HEAD_POD_NAME", "metadata.name"),
            env::value("KUBERAY_CRD_VER", "v1"),
            env::value(env_names::KUBERAY_GEN_AUTOSCALER_START_CMD, START_COMMAND),
        ]),
        command: Some(shell_command(env)),
        args: Some(vec![START_COMMAND.into()]),
        resources: Some(fixed_resources("500m", "512Mi")),
        ..Container::default()
    };
    apply_options(&mut container, options);
    container
}

/// Merges `autoscalerOptions` into the sidecar: scalar fields replace, lists are appended to.
pub fn apply_options(container: &mut Container, options: Option<&AutoscalerOptions>) {
    let Some(o) = options else {
        return;
    };
    if let Some(resources) = &o.resources {
        container.resources = Some(resources.clone());
    }
    if let Some(image) = &o.image {
        container.image = Some(image.clone());
    }
    if let Some(policy) = &o.image_pull_policy {
        container.image_pull_policy = Some(policy.clone());
    }
    let extend = |target: &mut Option<Vec<_>>, extra: &Option<Vec<_>>| {
        if let Some(extra) = extra.as_ref().filter(|e| !e.is_empty()) {
            target.get_or_insert_with(Vec::new).extend(extra.iter().cloned());
        }
    };
    extend(&mut container.env, &o.env);
    if let Some(extra) = o.env_from.as_ref().filter(|e| !e.is_empty()) {
        container
            .env_from
            .get_or_insert_with(Vec::new)
            .extend(extra.iter().cloned());
    }
    if let Some(extra) = o.volume_mounts.as_ref().filter(|e| !e.is_empty()) {
        container
            .volume_mounts
            .get_or_insert_with(Vec::new)
            .extend(extra.iter().cloned());
    }
    if let Some(security) = &o.security_context {
        container.security_context = Some(security.clone());
    }
    if let Some(command) = o.command.as_ref().filter(|c| !c.is_empty()) {
        container.command = Some(command.clone());
    }
    if let Some(args) = o.args.as_ref().filter(|a| !a.is_empty()) {
        container.args = Some(args.clone());
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::EnvVar;

    use super::*;

    #[test]
    fn default_container_matches_kuberay() {
        let c = container(Some("rayproject/ray:2.46.0"), None, &OperatorEnv::default());
        assert_eq!(c.name, "autoscaler");
        assert_eq!(c.image.as_deref(), Some("rayproject/ray:2.46.0"));
        assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(
            c.command,
            Some(vec!["/bin/bash".into(), "-c".into(), "--".into()])
        );
        assert_eq!(c.args, Some(vec![START_COMMAND.to_string()]));
        let names: Vec<&str> = c.env.iter().flatten().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "RAY_CLUSTER_NAME",
                "RAY_CLUSTER_NAMESPACE",
                "RAY_HEAD_POD_NAME",
                "KUBERAY_CRD_VER",
                "KUBERAY_GEN_AUTOSCALER_START_CMD"
            ]
        );
        let limits = c.resources.and_then(|r| r.limits).unwrap_or_default();
        assert_eq!(limits["cpu"].0, "500m");
        assert_eq!(limits["memory"].0, "512Mi");
    }

    #[test]
    fn options_override_the_container() {
        let options = AutoscalerOptions {
            image: Some("custom:1".into()),
            image_pull_policy: Some("Always".into()),
            env: Some(vec![EnvVar {
                name: "X".into(),
                value: Some("1".into()),
                value_from: None,
            }]),
            args: Some(vec!["ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD".into()]),
            ..AutoscalerOptions::default()
        };
        let c = container(Some("ray:1"), Some(&options), &OperatorEnv::default());
        assert_eq!(c.image.as_deref(), Some("custom:1"));
        assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
        assert_eq!(c.env.iter().flatten().last().map(|e| e.name.as_str()), Some("X"));
        assert_eq!(
            c.args,
            Some(vec!["ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD".into()])
        );
    }
}
