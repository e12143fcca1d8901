//! The in-tree autoscaler: a sidecar on the head Pod that watches Ray's demand and scales worker groups by
//! patching the RayCluster (its container is `crate::pod::autoscaler`'s). It needs a ServiceAccount with a
//! Role to read Pods and patch the cluster: those are built here.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        core::v1::ServiceAccount,
        rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kuberay_crds::{RayCluster, constants::labels};
use kuberay_rules::names;

use crate::{
    cluster::Identity,
    consts::{APPLICATION_NAME, COMPONENT_NAME},
};

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
    use kuberay_rules::operator_env::OperatorEnv;

    use super::*;

    #[test]
    fn the_role_names_the_whole_cluster_name_where_its_own_name_is_cut() {
        let id = Identity {
            name: format!("{}-cluster", "a".repeat(60)),
            namespace: "ns".into(),
            uid: "u".into(),
            cluster_domain: "cluster.local".into(),
            env: OperatorEnv::default(),
            batch_scheduler: None,
            gates: kuberay_rules::cluster_spec::Gates::default(),
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
}
