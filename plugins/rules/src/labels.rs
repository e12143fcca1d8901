//! The labels KubeRay puts on a cluster's Pods, and the label selectors of a cluster's Pods and Jobs in the
//! host's selector syntax (`a=b,c=d`). Everything that finds a cluster's Pods (the operator itself, the
//! autoscaler, Services, `kubectl`) selects on these, so the keys the operator owns cannot be overridden by
//! the user's template.

use std::collections::BTreeMap;

use kuberay_crds::constants::{labels, node_type};

use crate::{
    consts::{APPLICATION_NAME, COMPONENT_NAME},
    names,
};

/// The labels of a Ray Pod: KubeRay's, then the user's template labels and group `labels`, except that
/// the cluster, node type and group keys always keep KubeRay's values.
pub fn pod_labels(
    cluster: &str,
    node: &str,
    group: &str,
    template: Option<&BTreeMap<String, String>>,
    group_labels: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut result = BTreeMap::from([
        (labels::RAY_IS_RAY_NODE.to_string(), "yes".to_string()),
        (labels::RAY_CLUSTER.to_string(), cluster.to_string()),
        (labels::RAY_NODE_TYPE.to_string(), node.to_string()),
        (labels::RAY_NODE_GROUP.to_string(), group.to_string()),
        (
            labels::RAY_IDENTIFIER.to_string(),
            names::identifier(cluster, node),
        ),
        (
            labels::KUBERNETES_APPLICATION_NAME.to_string(),
            APPLICATION_NAME.to_string(),
        ),
        (
            labels::KUBERNETES_CREATED_BY.to_string(),
            COMPONENT_NAME.to_string(),
        ),
    ]);
    let protected = [labels::RAY_NODE_TYPE, labels::RAY_NODE_GROUP, labels::RAY_CLUSTER];
    for (key, value) in template
        .into_iter()
        .flatten()
        .chain(group_labels.into_iter().flatten())
    {
        if !protected.contains(&key.as_str()) {
            result.insert(key.clone(), value.clone());
        }
    }
    result
}

/// `key=value,...` for the given pairs.
pub fn selector(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Every Pod of a cluster.
pub fn all_pods(cluster: &str) -> String {
    selector(&[(labels::RAY_CLUSTER, cluster)])
}

/// The head Pod(s) of a cluster.
pub fn head_pods(cluster: &str) -> String {
    selector(&[
        (labels::RAY_CLUSTER, cluster),
        (labels::RAY_NODE_TYPE, node_type::HEAD),
    ])
}

/// The worker Pods of a cluster.
pub fn worker_pods(cluster: &str) -> String {
    selector(&[
        (labels::RAY_CLUSTER, cluster),
        (labels::RAY_NODE_TYPE, node_type::WORKER),
    ])
}

/// The Pods of one worker group.
pub fn group_pods(cluster: &str, group: &str) -> String {
    selector(&[(labels::RAY_CLUSTER, cluster), (labels::RAY_NODE_GROUP, group)])
}

/// The Redis cleanup Jobs of a GCS-FT cluster.
pub fn redis_cleanup_jobs(cluster: &str) -> String {
    selector(&[
        (labels::RAY_CLUSTER, cluster),
        (labels::RAY_NODE_TYPE, node_type::REDIS_CLEANUP),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_labels_merge_without_overriding_protected_keys() {
        let template = BTreeMap::from([
            ("ray.io/cluster".to_string(), "evil".to_string()),
            ("ray.io/group".to_string(), "evil".to_string()),
            ("ray.io/node-type".to_string(), "evil".to_string()),
            ("team".to_string(), "a".to_string()),
            ("app.kubernetes.io/name".to_string(), "mine".to_string()),
        ]);
        let group = BTreeMap::from([("team".to_string(), "b".to_string())]);
        let l = pod_labels("demo", "worker", "small", Some(&template), Some(&group));
        assert_eq!(l["ray.io/cluster"], "demo");
        assert_eq!(l["ray.io/group"], "small");
        assert_eq!(l["ray.io/node-type"], "worker");
        assert_eq!(l["ray.io/identifier"], "demo-worker");
        assert_eq!(l["ray.io/is-ray-node"], "yes");
        assert_eq!(l["app.kubernetes.io/created-by"], "kuberay-operator");
        assert_eq!(l["app.kubernetes.io/name"], "mine");
        assert_eq!(l["team"], "b");
    }

    #[test]
    fn selectors_name_the_cluster_and_the_node_type() {
        assert_eq!(all_pods("c"), "ray.io/cluster=c");
        assert_eq!(head_pods("c"), "ray.io/cluster=c,ray.io/node-type=head");
        assert_eq!(worker_pods("c"), "ray.io/cluster=c,ray.io/node-type=worker");
        assert_eq!(group_pods("c", "g"), "ray.io/cluster=c,ray.io/group=g");
        assert_eq!(
            redis_cleanup_jobs("c"),
            "ray.io/cluster=c,ray.io/node-type=redis-cleanup"
        );
    }
}
