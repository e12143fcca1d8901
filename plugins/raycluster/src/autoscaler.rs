//! The in-tree autoscaler: a sidecar on the head Pod that watches Ray's demand and scales worker groups by
//! patching the RayCluster. KubeRay builds the container from the Ray image and lets `autoscalerOptions`
//! override parts of it, and it needs a ServiceAccount with a Role to read Pods and patch the cluster.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        core::v1::{Container, ResourceRequirements, ServiceAccount},
        rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject},
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use kuberay_crds::{AutoscalerOptions, RayCluster, constants::labels};
use kuberay_rules::names;

use crate::{
    cluster::Identity,
    consts::{APPLICATION_NAME, AUTOSCALER_CONTAINER_NAME, COMPONENT_NAME, env as env_names},
    pod::{env, shell_command},
};
use kuberay_rules::operator_env::OperatorEnv;

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

/// The head's ServiceAccount: the one named in the head template, else one named after the cluster.
pub fn service_account_name(cluster: &RayCluster, id: &Identity) -> String {
    user_service_account(cluster).map_or_else(|| id.name.clone(), str::to_string)
}

/// The ServiceAccount the user named in the head template; the user must then create it.
pub fn user_service_account(cluster: &RayCluster) -> Option<&str> {
    cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn rbac_labels(id: &Identity) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::RAY_CLUSTER.to_string(), id.name.clone()),
        (
            labels::KUBERNETES_APPLICATION_NAME.to_string(),
            APPLICATION_NAME.to_string(),
        ),
        (
            labels::KUBERNETES_CREATED_BY.to_string(),
            COMPONENT_NAME.to_string(),
        ),
    ])
}

fn meta(name: String, id: &Identity) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(id.namespace.clone()),
        labels: Some(rbac_labels(id)),
        ..ObjectMeta::default()
    }
}

pub fn build_service_account(cluster: &RayCluster, id: &Identity) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(names::check_name(&service_account_name(cluster, id)), id),
        ..ServiceAccount::default()
    }
}

fn rule(group: &str, resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_string()]),
        resources: Some(vec![resource.to_string()]),
        verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
        ..PolicyRule::default()
    }
}

/// What Ray's autoscaler does with its ServiceAccount (Ray 2.60, `ray/autoscaler/_private/kuberay` and the
/// v2 KubeRay cloud provider): `get` its RayCluster and JSON-patch its worker groups' `replicas` and
/// `workersToDelete`; `get` the head Pod and `list` the cluster's Pods by label; and, for in-place Pod
/// resizing (the `ray.io/ippr` annotation), `patch` a Pod's `ray.io/ippr-status` annotation and its
/// `resize` subresource. It never watches. KubeRay grants the same on every Pod and RayCluster of the
/// namespace plus `watch` on Pods; here `rayclusters` is limited to the cluster's own name and `watch` is
/// left out. Pod names are generated, so the Pod rules cannot be narrowed by name.
pub fn build_role(id: &Identity) -> Role {
    let own_cluster = PolicyRule {
        resource_names: Some(vec![id.name.clone()]),
        ..rule("ray.io", "rayclusters", &["get", "patch"])
    };
    Role {
        metadata: meta(names::check_name(&id.name), id),
        rules: Some(vec![
            rule("", "pods", &["get", "list", "patch"]),
            rule("", "pods/resize", &["patch"]),
            own_cluster,
        ]),
    }
}

pub fn build_role_binding(cluster: &RayCluster, id: &Identity) -> RoleBinding {
    RoleBinding {
        metadata: meta(names::check_name(&id.name), id),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: names::check_name(&id.name),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names::check_name(&service_account_name(cluster, id)),
            namespace: Some(id.namespace.clone()),
            ..Subject::default()
        }]),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::EnvVar;
    use kuberay_crds::AutoscalerOptions;

    use super::*;

    #[test]
    fn the_role_names_the_whole_cluster_name_where_its_own_name_is_cut() {
        let id = Identity {
            name: format!("{}-cluster", "a".repeat(60)),
            namespace: "ns".into(),
            uid: "u".into(),
            cluster_domain: "cluster.local".into(),
            env: OperatorEnv::default(),
        };
        let role = build_role(&id);
        assert_eq!(role.metadata.name, Some(names::check_name(&id.name)));
        assert_ne!(role.metadata.name.as_deref(), Some(id.name.as_str()));
        let rules = role.rules.unwrap_or_default();
        let clusters = rules
            .iter()
            .find(|r| r.resources == Some(vec!["rayclusters".to_string()]))
            .unwrap_or_else(|| panic!("no rayclusters rule in {rules:?}"));
        assert_eq!(clusters.resource_names, Some(vec![id.name.clone()]));
        assert_eq!(clusters.verbs, ["get", "patch"]);
        for rule in &rules {
            assert!(!rule.verbs.iter().any(|v| v == "watch"), "{rule:?}");
        }
    }

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
