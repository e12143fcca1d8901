//! The operator itself, `kuberay-wasm operator`, deployed as a mapped image: it runs in a Pod with the
//! in-cluster configuration of its ServiceAccount and reconciles a RayCluster.

use std::{os::unix::fs::PermissionsExt, path::PathBuf, time::Duration};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Pod, ServiceAccount},
    rbac::v1::ClusterRoleBinding,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, DynamicObject, ListParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use kuberay_testenv::{
    TestEnv,
    fixtures::small_cluster,
    images::{ImageMap, ImageSpec},
    operator_binary,
};
use serde_json::json;

use crate::util::{create, env, eventually, is_ready, poll_until};

const IMAGE: &str = "kuberay-wasm:in-pod-test";

/// How long the operator's Pod may take to become Ready.
const READY_WITHIN: Duration = Duration::from_secs(240);

/// A directory readable by any user with the RayCluster plugin under the name the built-in policy knows.
fn plugins_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kwt-operator-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.join("raycluster.wasm");
    std::fs::copy(kuberay_plugin_artifacts::RAYCLUSTER, &file).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    dir
}

#[tokio::test]
async fn the_operator_runs_in_a_pod_and_reconciles_a_raycluster() {
    let env = env().await;
    let operator = operator_binary().unwrap();
    env.install_crds().await.unwrap();
    let plugins = plugins_dir();
    let spec = ImageSpec::new(&operator).with_path("/opt/kuberay-wasm/plugins", &plugins);
    env.map_images(&ImageMap::one(IMAGE, spec)).unwrap();
    let client = env.client().await.unwrap();
    let ns = env.namespace("operator-pod").await.unwrap();
    let _: ServiceAccount = create(&client, &ns, json!({"metadata": {"name": "kuberay-operator"}})).await;
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let binding_name = format!("{}-operator-admin", ns.name());
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": ns.name()}],
    }))
    .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();

    let _: Deployment = create(
        &client,
        &ns,
        json!({
            "metadata": {"name": "kuberay-wasm"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "kuberay-wasm"}},
                "template": {
                    "metadata": {"labels": {"app": "kuberay-wasm"}},
                    "spec": {
                        "serviceAccountName": "kuberay-operator",
                        "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532},
                        "volumes": [{"name": "cache", "emptyDir": {}}],
                        "containers": [{
                            "name": "operator",
                            "image": IMAGE,
                            "args": ["operator", "--plugins", "/opt/kuberay-wasm/plugins",
                                     "--watch-namespace", ns.name(), "--cache-dir", "/var/cache/kuberay-wasm"],
                            "env": [
                                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            ],
                            "ports": [{"name": "health", "containerPort": 8082}],
                            "volumeMounts": [{"name": "cache", "mountPath": "/var/cache/kuberay-wasm"}],
                            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}, "periodSeconds": 1},
                            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8082}, "periodSeconds": 2},
                        }],
                    },
                },
            },
        }),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    // The operator compiles its plugin on start (an emptyDir cache): about 4 s on the build machine, alone or
    // with the rest of this suite. One CI run waited 90 s in vain, for a reason its output did not show; the
    // bound is wide and a failure now says what the Pod showed.
    let started = std::time::Instant::now();
    let ready = poll_until(READY_WITHIN, || async {
        let list = pods
            .list(&ListParams::default().labels("app=kuberay-wasm"))
            .await
            .ok()?;
        list.items.into_iter().find(is_ready)
    })
    .await;
    let Some(operator_pod) = ready else {
        panic!(
            "the operator pod was not Ready after {READY_WITHIN:?}:\n{}",
            operator_pod_state(env, &pods, ns.name()).await
        );
    };
    eprintln!("the operator pod was Ready after {:?}", started.elapsed());

    let gvk = GroupVersionKind::gvk("ray.io", "v1", "RayCluster");
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns.name(), &ApiResource::from_gvk(&gvk));
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "in-pod"},
        "spec": small_cluster(),
    }))
    .unwrap();
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
    let log = env.container_log(
        ns.name(),
        operator_pod.metadata.name.as_deref().unwrap(),
        "operator",
    );
    eventually(
        "the operator in the pod to create the head pod",
        Duration::from_secs(60),
        || async {
            let list = pods
                .list(&ListParams::default().labels("ray.io/cluster=in-pod,ray.io/node-type=head"))
                .await
                .ok()?;
            (!list.items.is_empty()).then_some(())
        },
    )
    .await;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.is_empty(), "the operator logs to {}", log.display());

    bindings
        .delete(&binding_name, &DeleteParams::default())
        .await
        .unwrap();
    ns.delete(&client).await.unwrap();
    let _ = std::fs::remove_dir_all(plugins);
}

/// What a failure shows: each operator Pod's phase, conditions and container states, and the end of its log.
async fn operator_pod_state(env: &TestEnv, pods: &Api<Pod>, namespace: &str) -> String {
    let list = match pods.list(&ListParams::default().labels("app=kuberay-wasm")).await {
        Ok(list) => list.items,
        Err(e) => return format!("listing the operator pods: {e}"),
    };
    if list.is_empty() {
        return "no operator pod exists (the Deployment's ReplicaSet did not create one)".into();
    }
    let mut out = String::new();
    for pod in list {
        let status = serde_json::to_string_pretty(&pod.status).unwrap_or_default();
        let log = env.container_log(namespace, &pod.name_any(), "operator");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        out.push_str(&format!(
            "pod {}: status {status}\nlast lines of {}:\n{}\n",
            pod.name_any(),
            log.display(),
            tail.join("\n")
        ));
    }
    out
}
