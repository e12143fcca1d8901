//! Label selectors of a cluster's Pods and Jobs, in the host's selector syntax (`a=b,c=d`).

use kuberay_crds::constants::{labels, node_type};

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
