//! Invalid clusters are reported with KubeRay's event and left alone; clusters another controller manages
//! are not touched at all.

mod common;

use common::*;
use kuberay_plugin_sdk::{
    EventType, Plugin, ReconcileError,
    serde_json::{Value, json},
};

fn rejected(cluster: Value, reason: &str, contains: &str) {
    let host = host(cluster);
    let result = reconcile(&host);
    let Err(ReconcileError::InvalidObject(message)) = result else {
        panic!("expected InvalidObject, got {result:?}");
    };
    assert!(
        message.contains(contains),
        "{message:?} should contain {contains:?}"
    );
    let events = host.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_type, EventType::Warning);
    assert_eq!(events[0].reason, reason);
    assert_eq!(events[0].action, "Validate");
    assert_eq!(host.writes(), [], "nothing is created for an invalid cluster");
}

#[test]
fn invalid_specs_are_rejected_with_kuberays_rules() {
    let spec = "InvalidRayClusterSpec";
    let mut c = sample(1);
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = json!([]);
    rejected(c, spec, "headGroupSpec should have at least one container");

    let mut c = sample(1);
    c["spec"]["workerGroupSpecs"][0]["minReplicas"] = json!(5);
    c["spec"]["workerGroupSpecs"][0]["maxReplicas"] = json!(2);
    rejected(
        c,
        spec,
        "worker group small-group has minReplicas 5 greater than maxReplicas 2",
    );

    let mut c = sample(1);
    c["spec"]["workerGroupSpecs"][0]
        .as_object_mut()
        .map(|g| g.remove("maxReplicas"));
    rejected(
        c,
        spec,
        "must set both minReplicas and maxReplicas when autoscaling is disabled",
    );

    let mut c = sample(1);
    c["spec"]["headGroupSpec"]["rayStartParams"] = json!({"num-cpus": "1"});
    c["spec"]["headGroupSpec"]["resources"] = json!({"CPU": "1"});
    rejected(
        c,
        spec,
        "resource fields should not be set in both rayStartParams and Resources for Head group",
    );

    let mut c = sample(1);
    c["spec"]["workerGroupSpecs"][0]["rayStartParams"] = json!({"labels": "a=b"});
    rejected(
        c,
        spec,
        "rayStartParams['labels'] is not supported for small-group group",
    );

    let mut c = sample(1);
    c["spec"]["headGroupSpec"]["labels"] = json!({"bad key!": "v"});
    rejected(c, spec, "invalid label key for Head group");

    let mut c = sample(1);
    c["metadata"]["annotations"] = json!({"ray.io/ft-enabled": "true"});
    c["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "r:6379"});
    rejected(c, spec, "annotation and GcsFaultToleranceOptions are both set");

    let mut c = sample(1);
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "RAY_REDIS_ADDRESS", "value": "r:6379"}]);
    rejected(
        c,
        spec,
        "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance",
    );

    let mut c = sample(1);
    c["spec"]["gcsFaultToleranceOptions"] = json!({"backend": "rocksdb"});
    rejected(
        c,
        spec,
        "requires the GCSFaultToleranceEmbeddedStorage feature gate",
    );

    let mut c = sample(1);
    c["spec"]["enableInTreeAutoscaling"] = json!(true);
    c["spec"]["autoscalerOptions"] = json!({"version": "v2"});
    c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["restartPolicy"] = json!("Always");
    rejected(
        c,
        spec,
        "restartPolicy for worker group small-group should be Never or unset when using autoscaler V2",
    );

    let mut c = sample(1);
    c["spec"]["workerGroupSpecs"][0]["idleTimeoutSeconds"] = json!(60);
    rejected(
        c,
        spec,
        "idleTimeoutSeconds is set, but autoscaler v2 is not enabled",
    );

    let mut c = sample(1);
    c["spec"]["authOptions"] = json!({"mode": "token"});
    c["spec"]["rayVersion"] = json!("2.46.0");
    rejected(
        c,
        spec,
        "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.46.0",
    );

    let mut c = sample(1);
    c["spec"]["upgradeStrategy"] = json!({"type": "Recreate"});
    c["metadata"]["labels"] = json!({"ray.io/originated-from-crd": "RayJob"});
    rejected(
        c,
        spec,
        "upgradeStrategy cannot be set when RayCluster is created by RayJob",
    );
}

#[test]
fn invalid_metadata_is_rejected() {
    let mut c = sample(1);
    c["metadata"]["name"] = json!("a".repeat(54));
    rejected(
        c,
        "InvalidRayClusterMetadata",
        "RayCluster name should be no more than 53 characters",
    );
    let mut c = sample(1);
    c["metadata"]["name"] = json!("1cluster");
    // KubeRay prints Kubernetes' own messages, as Go prints a list of them.
    rejected(
        c,
        "InvalidRayClusterMetadata",
        "RayCluster name should be a valid DNS1035 label: [a DNS-1035 label must consist of lower case \
         alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric \
         character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]",
    );
}

#[test]
fn an_unreadable_object_is_invalid_not_a_crash() {
    let mut c = sample(1);
    c["spec"]["workerGroupSpecs"] = json!("not a list");
    let host = host(c);
    assert!(matches!(reconcile(&host), Err(ReconcileError::InvalidObject(_))));
    assert_eq!(event_reasons(&host), ["InvalidRayClusterSpec"]);
    let host =
        common::host(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "x"}}));
    assert!(matches!(reconcile(&host), Err(ReconcileError::InvalidObject(_))));
}

#[test]
fn both_suspend_conditions_true_is_an_invalid_status() {
    let mut c = sample(1);
    c["status"] = json!({"conditions": [
        {"type": "RayClusterSuspending", "status": "True", "reason": "x", "message": "", "lastTransitionTime": "2027-01-01T00:00:00Z"},
        {"type": "RayClusterSuspended", "status": "True", "reason": "x", "message": "", "lastTransitionTime": "2027-01-01T00:00:00Z"}
    ]});
    let host = host(c);
    assert!(matches!(reconcile(&host), Err(ReconcileError::Transient(_))));
    assert_eq!(event_reasons(&host), ["InvalidRayClusterStatus"]);
}

#[test]
fn autoscaler_v1_restart_policy_is_warned_about_once_per_generation() {
    let mut c = sample(1);
    c["spec"]["enableInTreeAutoscaling"] = json!(true);
    c["spec"]["autoscalerOptions"] = json!({"version": "v1"});
    c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["restartPolicy"] = json!("Always");
    let host = host(c);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let warning = host
        .events()
        .into_iter()
        .find(|e| e.reason == "InvalidRayClusterSpec");
    assert!(warning.is_some_and(|e| e.note.contains(
        "restartPolicy for worker groups [small-group] should be Never or unset when using autoscaler V1"
    )));
    assert_eq!(
        heads(&host).len(),
        1,
        "only a warning: the cluster is still reconciled"
    );
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(!event_reasons(&host).contains(&"InvalidRayClusterSpec".to_string()));
}

#[test]
fn clusters_managed_elsewhere_are_left_alone() {
    let mut c = sample(1);
    c["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    let host = host(c);
    let outcome = reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.requeue_after, None);
    assert_eq!(host.writes(), []);
    assert!(host.events().is_empty());

    let mut c = sample(0);
    c["spec"]["managedBy"] = json!("ray.io/kuberay-operator");
    let host = common::host(c);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(heads(&host).len(), 1);
}

#[test]
fn metadata_declares_kinds_capabilities_and_the_finalizer() {
    let metadata = kuberay_plugin_raycluster::RayClusterPlugin::metadata();
    assert_eq!(metadata.name, "raycluster");
    assert_eq!(metadata.reconciles.to_string(), "ray.io/v1/RayCluster");
    let owns: Vec<String> = metadata.owns.iter().map(ToString::to_string).collect();
    assert_eq!(
        owns,
        [
            "v1/Pod",
            "v1/Service",
            "v1/ServiceAccount",
            "rbac.authorization.k8s.io/v1/Role",
            "rbac.authorization.k8s.io/v1/RoleBinding",
            "networking.k8s.io/v1/Ingress",
            "networking.k8s.io/v1/NetworkPolicy",
            "batch/v1/Job",
            "v1/PersistentVolumeClaim",
            "v1/Secret",
            "scheduling.volcano.sh/v1beta1/PodGroup",
            "scheduling.x-k8s.io/v1alpha1/PodGroup",
            "cert-manager.io/v1/Issuer",
            "cert-manager.io/v1/Certificate"
        ]
    );
    assert_eq!(
        metadata.finalizer.as_deref(),
        Some("ray.io/gcs-ft-redis-cleanup-finalizer")
    );
    assert!(!metadata.uses_ray_head);
    assert!(metadata.capabilities.iter().all(|c| !c.verbs.is_empty()));
}
