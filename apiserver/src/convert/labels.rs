//! The labels and annotations KubeRay's apiserver puts on what it creates, and those it leaves out when it
//! reads objects back. Values are KubeRay's: clients and the KubeRay dashboard select on them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The cluster's name (on a RayJob: the job's name).
pub(crate) const CLUSTER_NAME: &str = "ray.io/cluster-name";
pub(crate) const USER: &str = "ray.io/user";
pub(crate) const VERSION: &str = "ray.io/version";
/// The `Cluster.Environment` enum name (`DEV`, ...).
pub(crate) const ENVIRONMENT: &str = "ray.io/environment";
pub(crate) const APP_NAME: &str = "app.kubernetes.io/name";
pub(crate) const APP_NAME_VALUE: &str = "kuberay";
/// Objects without this label (value [`MANAGED_BY_VALUE`]) are invisible to the API.
pub(crate) const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub(crate) const MANAGED_BY_VALUE: &str = "kuberay-apiserver";

/// When the API created the object (Go's `time.Time.String()` of the server's clock).
pub(crate) const CREATION_TIMESTAMP: &str = "ray.io/creation-timestamp";
/// When the API last replaced a RayService.
pub(crate) const UPDATE_TIMESTAMP: &str = "ray.io/update-timestamp";
/// On a Pod template: the compute template that sized it.
pub(crate) const COMPUTE_TEMPLATE: &str = "ray.io/compute-template";
/// On a Pod template: the image the request named (empty when it was derived from the version).
pub(crate) const COMPUTE_IMAGE: &str = "ray.io/compute-image";
/// `"true"` on a Cluster opens the Serve ports of the head.
pub(crate) const ENABLE_SERVE_SERVICE: &str = "ray.io/enable-serve-service";

/// On compute-template ConfigMaps: [`CONFIG_TYPE_TEMPLATE`].
pub(crate) const CONFIG_TYPE: &str = "ray.io/config-type";
pub(crate) const CONFIG_TYPE_TEMPLATE: &str = "compute-template";

/// Annotations of Ray Pod templates that KubeRay, the operator or network plugins set; they are not
/// returned as the group's own annotations.
pub(crate) const NODE_DEFAULT_ANNOTATIONS: &[&str] = &[
    COMPUTE_IMAGE,
    "openshift.io/scc",
    "cni.projectcalico.org/podIP",
    "ray.io/health-state",
    "ray.io/ft-enabled",
    "cni.projectcalico.org/podIPs",
    "cni.projectcalico.org/containerID",
    COMPUTE_TEMPLATE,
    "k8s.v1.cni.cncf.io/network-status",
    "k8s.v1.cni.cncf.io/networks-status",
];

/// Labels of Ray Pod templates that the operator sets; they are not returned as the group's own labels.
pub(crate) const NODE_DEFAULT_LABELS: &[&str] = &[
    "app.kubernetes.io/created-by",
    APP_NAME,
    "ray.io/cluster",
    "ray.io/cluster-dashboard",
    "ray.io/group",
    "ray.io/identifier",
    "ray.io/is-ray-node",
    "ray.io/node-type",
];

/// The labels of every RayCluster, RayJob and RayService the API creates: the application and the
/// managed-by label that makes it visible, plus `extra`.
pub(crate) fn managed_labels<'a>(
    extra: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, String> {
    [(APP_NAME, APP_NAME_VALUE), (MANAGED_BY, MANAGED_BY_VALUE)]
        .into_iter()
        .chain(extra)
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Whether `metadata` carries the label `key=value`.
pub(crate) fn has_label(metadata: &ObjectMeta, key: &str, value: &str) -> bool {
    metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(key))
        .is_some_and(|v| v == value)
}

/// The value of label `key`, or "".
pub(crate) fn label<'a>(metadata: &'a ObjectMeta, key: &str) -> &'a str {
    metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(key))
        .map_or("", String::as_str)
}
