//! Which built-in kinds are cluster-scoped, for the in-memory clusters that have no discovery to ask (the
//! operator asks the API server). Plugins write only namespaced kinds, so a cluster-scoped kind taken for a
//! namespaced one would let a test pass that the operator refuses.

use kuberay_core::Kind;

/// Built-in kinds that are cluster-scoped (group, kind), whatever their version.
pub const CLUSTER_SCOPED: [(&str, &str); 24] = [
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("node.k8s.io", "RuntimeClass"),
    ("networking.k8s.io", "IngressClass"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("gateway.networking.k8s.io", "GatewayClass"),
    ("plugins.kuberay-wasm.io", "ReconcilePlugin"),
];

/// Whether `kind` is one of the built-in cluster-scoped kinds (any version).
pub fn is_cluster_scoped(kind: &Kind) -> bool {
    CLUSTER_SCOPED.contains(&(kind.group.as_str(), kind.kind.as_str()))
}
