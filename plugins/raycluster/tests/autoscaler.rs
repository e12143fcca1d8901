//! Autoscaling: the sidecar on the head, the v1/v2 differences, and the autoscaler's RBAC.

mod common;

use common::*;
use kuberay_plugin_sdk::{
    Kind, ReconcileError,
    serde_json::{Value, json},
    testing::FakeHost,
};

fn autoscaled(version: Option<&str>) -> Value {
    let mut cluster = sample(1);
    cluster["spec"]["enableInTreeAutoscaling"] = json!(true);
    if let Some(v) = version {
        cluster["spec"]["autoscalerOptions"] = json!({"version": v});
    }
    cluster
}

fn first(host: &FakeHost, kind: Kind) -> Value {
    host.objects(&kind).into_iter().next().unwrap_or(Value::Null)
}

#[test]
fn the_head_gets_the_autoscaler_sidecar_and_no_monitor() {
    let host = host(autoscaled(None));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let head = &heads(&host)[0];
    let spec = &head["spec"];
    assert_eq!(spec["serviceAccountName"], "raycluster-sample");
    let containers = spec["containers"].as_array().cloned().unwrap_or_default();
    assert_eq!(containers.len(), 2);
    let autoscaler = &containers[1];
    assert_eq!(autoscaler["name"], "autoscaler");
    assert_eq!(autoscaler["image"], "rayproject/ray:2.46.0");
    assert_eq!(autoscaler["imagePullPolicy"], "IfNotPresent");
    assert_eq!(autoscaler["command"], json!(["/bin/bash", "-c", "--"]));
    assert_eq!(
        autoscaler["args"],
        json!([
            "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
        ])
    );
    assert_eq!(
        autoscaler["resources"],
        json!({"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}})
    );
    assert_eq!(
        autoscaler["volumeMounts"],
        json!([{"name": "ray-logs", "mountPath": "/tmp/ray"}])
    );
    let ray = &containers[0];
    assert!(
        ray["args"][0]
            .as_str()
            .is_some_and(|a| a.contains(" --no-monitor "))
    );
    assert_eq!(
        ray["volumeMounts"],
        json!([{"name": "shared-mem", "mountPath": "/dev/shm"}, {"name": "ray-logs", "mountPath": "/tmp/ray"}])
    );
    assert_eq!(spec["volumes"][1], json!({"name": "ray-logs", "emptyDir": {}}));
    // No explicit version: Ray decides, KubeRay sets neither the variable nor the restart policy.
    assert!(env_value(ray, "RAY_enable_autoscaler_v2").is_none());
    assert!(spec.get("restartPolicy").is_none());
}

#[test]
fn autoscaler_v2_forces_restart_policy_never_and_v1_disables_v2() {
    let host = host(autoscaled(Some("v2")));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    for pod in pods(&host) {
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
    }
    let ray = &heads(&host)[0]["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_enable_autoscaler_v2").map(|e| e["value"].clone()),
        Some(json!("true"))
    );

    let host = common::host(autoscaled(Some("v1")));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let ray = &heads(&host)[0]["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_enable_autoscaler_v2").map(|e| e["value"].clone()),
        Some(json!("false"))
    );
    assert!(workers(&host)[0]["spec"].get("restartPolicy").is_none());
}

#[test]
fn autoscaler_options_override_the_sidecar() {
    let mut cluster = autoscaled(None);
    cluster["spec"]["autoscalerOptions"] = json!({
        "image": "my/autoscaler:1",
        "imagePullPolicy": "Always",
        "resources": {"limits": {"cpu": "1"}},
        "env": [{"name": "EXTRA", "value": "1"}],
        "envFrom": [{"configMapRef": {"name": "cm"}}],
        "volumeMounts": [{"name": "v", "mountPath": "/v"}],
        "securityContext": {"runAsNonRoot": true},
        "command": ["/bin/sh"],
        "args": ["ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"]
    });
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let autoscaler = heads(&host)[0]["spec"]["containers"][1].clone();
    assert_eq!(autoscaler["image"], "my/autoscaler:1");
    assert_eq!(autoscaler["imagePullPolicy"], "Always");
    assert_eq!(autoscaler["resources"], json!({"limits": {"cpu": "1"}}));
    assert_eq!(autoscaler["env"][5]["name"], "EXTRA");
    assert_eq!(autoscaler["envFrom"], json!([{"configMapRef": {"name": "cm"}}]));
    assert_eq!(autoscaler["securityContext"], json!({"runAsNonRoot": true}));
    assert_eq!(autoscaler["command"], json!(["/bin/sh"]));
    assert_eq!(
        autoscaler["args"],
        json!(["ulimit -n 65536; $KUBERAY_GEN_AUTOSCALER_START_CMD"])
    );
    // The user's mount comes first, then the shared log volume.
    assert_eq!(autoscaler["volumeMounts"][0]["name"], "v");
    assert_eq!(autoscaler["volumeMounts"][1]["name"], "ray-logs");
}

#[test]
fn rbac_for_the_autoscaler() {
    let host = host(autoscaled(None));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let labels = json!({
        "ray.io/cluster": "raycluster-sample",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator"
    });
    let sa = first(&host, Kind::new("", "v1", "ServiceAccount"));
    assert_eq!(name(&sa), "raycluster-sample");
    assert_eq!(sa["metadata"]["labels"], labels);
    let role = first(&host, Kind::new("rbac.authorization.k8s.io", "v1", "Role"));
    assert_eq!(name(&role), "raycluster-sample");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "patch"]},
            {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
            {
                "apiGroups": ["ray.io"],
                "resources": ["rayclusters"],
                "resourceNames": ["raycluster-sample"],
                "verbs": ["get", "patch"]
            }
        ])
    );
    let binding = first(&host, Kind::new("rbac.authorization.k8s.io", "v1", "RoleBinding"));
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "raycluster-sample", "namespace": "default"}])
    );
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "raycluster-sample"})
    );
    let reasons = event_reasons(&host);
    for expected in [
        "CreatedServiceAccount",
        "CreatedRole",
        "CreatedRoleBinding",
        "CreatedService",
        "CreatedHeadPod",
    ] {
        assert!(
            reasons.contains(&expected.to_string()),
            "{expected} in {reasons:?}"
        );
    }
}

#[test]
fn a_user_named_service_account_must_exist() {
    let mut cluster = autoscaled(None);
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = json!("my-sa");
    let host = host(cluster);
    let result = reconcile(&host);
    assert!(matches!(result, Err(ReconcileError::Transient(_))), "{result:?}");
    assert!(event_reasons(&host).contains(&"AutoscalerServiceAccountNotFound".to_string()));
    assert!(pods(&host).is_empty());
    assert!(host.objects(&Kind::new("", "v1", "ServiceAccount")).is_empty());

    host.insert(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "my-sa", "namespace": "default"}}));
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(heads(&host)[0]["spec"]["serviceAccountName"], "my-sa");
    assert_eq!(
        first(&host, Kind::new("rbac.authorization.k8s.io", "v1", "RoleBinding"))["subjects"][0]["name"],
        "my-sa"
    );
}
