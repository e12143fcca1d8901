//! What the four kinds share: the `managedBy` contract and its validation rules.

/// `spec.managedBy` of the KubeRay operator itself; an object without `managedBy` is also KubeRay's.
pub const MANAGED_BY_KUBERAY: &str = "ray.io/kuberay-operator";

/// `spec.managedBy` that hands an object to Kueue's MultiKueue, which dispatches it to a worker cluster;
/// the local operator must then leave it alone.
pub const MANAGED_BY_MULTIKUEUE: &str = "kueue.x-k8s.io/multikueue";

/// The CEL rules of every `managedBy` field: the API server, not the operator, refuses a foreign controller
/// and a change of hands, so two controllers can never fight over one object.
#[cfg(feature = "schema")]
pub(crate) fn managed_by_validations() -> serde_json::Value {
    serde_json::json!([
        {"rule": "self == oldSelf", "message": "the managedBy field is immutable"},
        {
            "rule": format!("self in ['{MANAGED_BY_KUBERAY}', '{MANAGED_BY_MULTIKUEUE}']"),
            "message": format!(
                "the managedBy field value must be either '{MANAGED_BY_KUBERAY}' or '{MANAGED_BY_MULTIKUEUE}'"
            ),
        },
    ])
}
