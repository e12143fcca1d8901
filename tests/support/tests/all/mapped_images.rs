//! Containers of mapped images run for real: a Deployment of `testenv-whoami` (see its binary) in Pods with
//! their own address, private mounts and the ServiceAccount volume a kubelet would give them.

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Pod, ServiceAccount},
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use kuberay_testenv::{
    TestEnv, TestNamespace, annotations,
    images::{ImageMap, ImageSpec},
};
use serde_json::{Value, json};

use crate::util::{create, env, eventually, is_ready, whoami_binary};

const IMAGE: &str = "testenv-whoami:test";

/// Maps [`IMAGE`] to the `testenv-whoami` binary built next to the supervisor.
fn map_whoami(env: &TestEnv) {
    env.map_images(&ImageMap::one(IMAGE, ImageSpec::new(whoami_binary())))
        .unwrap();
}

fn deployment(replicas: i32) -> Value {
    json!({
        "metadata": {"name": "whoami"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "whoami"}},
            "template": {
                "metadata": {"labels": {"app": "whoami"}},
                "spec": {
                    "serviceAccountName": "whoami",
                    "terminationGracePeriodSeconds": 5,
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532},
                    "volumes": [{"name": "cache", "emptyDir": {}}],
                    "containers": [{
                        "name": "app",
                        "image": IMAGE,
                        "args": ["--port", "8082"],
                        "ports": [{"name": "http", "containerPort": 8082}],
                        "env": [
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                            {"name": "POD_SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
                            {"name": "POD_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                            {"name": "POD_GREETING", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "greeting"}}},
                            {"name": "POD_SAID", "value": "$(POD_GREETING) from $(POD_NAME)"},
                        ],
                        "volumeMounts": [{"name": "cache", "mountPath": "/var/cache/testenv-whoami"}],
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 1},
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8082}, "periodSeconds": 1},
                    }],
                },
            },
        },
    })
}

async fn setup(client: &Client, ns: &TestNamespace) {
    let _: ServiceAccount = create(client, ns, json!({"metadata": {"name": "whoami"}})).await;
    let _: ConfigMap = create(
        client,
        ns,
        json!({"metadata": {"name": "settings"}, "data": {"greeting": "hello"}}),
    )
    .await;
}

/// The Deployment's Pods once `n` of them are Ready.
async fn ready_pods(client: &Client, ns: &TestNamespace, n: usize) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    eventually(
        &format!("{n} ready whoami pods"),
        Duration::from_secs(60),
        || async {
            let pods = api.list(&ListParams::default().labels("app=whoami")).await.ok()?;
            let ready: Vec<Pod> = pods
                .items
                .into_iter()
                .filter(|p| is_ready(p) && p.metadata.deletion_timestamp.is_none())
                .collect();
            (ready.len() == n).then_some(ready)
        },
    )
    .await
}

/// The `WHOAMI` report in a Pod's log.
async fn report(env: &TestEnv, ns: &TestNamespace, pod: &str) -> Value {
    let log = env.container_log(ns.name(), pod, "app");
    eventually(
        &format!("the WHOAMI line of {pod}"),
        Duration::from_secs(20),
        || async {
            let text = std::fs::read_to_string(&log).ok()?;
            let line = text.lines().find_map(|l| l.strip_prefix("WHOAMI "))?;
            serde_json::from_str(line).ok()
        },
    )
    .await
}

#[tokio::test]
async fn a_deployment_of_a_mapped_image_runs_in_cluster_as_its_service_account() {
    let env = env().await;
    map_whoami(env);
    let client = env.client().await.unwrap();
    let ns = env.namespace("mapped").await.unwrap();
    setup(&client, &ns).await;
    let _: Deployment = create(&client, &ns, deployment(2)).await;
    let pods = ready_pods(&client, &ns, 2).await;
    for pod in &pods {
        let name = pod.metadata.name.clone().unwrap();
        let volumes = pod.spec.as_ref().unwrap().volumes.clone().unwrap_or_default();
        assert!(
            volumes.iter().any(|v| v.name.starts_with("kube-api-access-")),
            "the ServiceAccount admission plugin adds the API access volume: {volumes:?}"
        );
        let me = report(env, &ns, &name).await;
        assert_eq!(
            me["username"],
            format!("system:serviceaccount:{}:whoami", ns.name())
        );
        assert_eq!(
            me["extra"]["authentication.kubernetes.io/pod-name"],
            json!([name])
        );
        assert_eq!(me["namespaceFile"], ns.name());
        assert_eq!(
            (me["uid"].as_u64(), me["gid"].as_u64()),
            (Some(65532), Some(65532))
        );
        assert_eq!(me["cacheWritable"], true);
        let e = &me["env"];
        assert_eq!(e["HOSTNAME"], name.as_str());
        assert_eq!(e["POD_NAME"], name.as_str());
        assert_eq!(e["POD_NAMESPACE"], ns.name());
        assert_eq!(e["POD_SA"], "whoami");
        assert_eq!(e["POD_NODE"], env.info().node_name.as_str());
        assert_eq!(
            e["POD_IP"],
            pod.status.as_ref().unwrap().pod_ip.clone().unwrap().as_str()
        );
        assert_eq!(e["POD_SAID"], format!("hello from {name}"));
        assert_eq!(e["KUBERNETES_SERVICE_HOST"], env.info().host_ip.as_str());
        assert_eq!(e["KUBERNETES_SERVICE_PORT"], "443");
        assert_eq!(
            e["KUBERNETES_PORT_443_TCP"],
            format!("tcp://{}:443", env.info().host_ip)
        );
    }

    // Deleting a Pod stops its process with SIGTERM; the ReplicaSet replaces it.
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let victim = pods[0].metadata.name.clone().unwrap();
    api.delete(&victim, &DeleteParams::default()).await.unwrap();
    let log = env.container_log(ns.name(), &victim, "app");
    eventually(
        "the deleted pod's process to get SIGTERM",
        Duration::from_secs(20),
        || async {
            let text = std::fs::read_to_string(&log).ok()?;
            text.contains("SIGTERM received").then_some(())
        },
    )
    .await;
    eventually("the deleted pod to go away", Duration::from_secs(20), || async {
        api.get_opt(&victim).await.ok()?.is_none().then_some(())
    })
    .await;
    let pods = ready_pods(&client, &ns, 2).await;
    assert!(
        pods.iter()
            .all(|p| p.metadata.name.as_deref() != Some(victim.as_str()))
    );

    // Killing the process restarts the container.
    let target = pods[0].metadata.name.clone().unwrap();
    let patch = json!({"metadata": {"annotations": {annotations::KILL: "1"}}});
    api.patch(&target, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    let restarted = eventually(
        "the killed container to restart",
        Duration::from_secs(30),
        || async {
            let pod = api.get(&target).await.ok()?;
            let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
            (status.restart_count == 1 && status.ready).then_some(status)
        },
    )
    .await;
    let last = restarted.last_state.and_then(|s| s.terminated).unwrap();
    assert_eq!(last.exit_code, 137);

    // A frozen process fails its liveness probe: SIGTERM (pending while it is stopped), SIGKILL after the
    // grace period, and a restart.
    let freeze = |value: Option<&str>| json!({"metadata": {"annotations": {annotations::FREEZE: value}}});
    api.patch(
        &target,
        &PatchParams::default(),
        &Patch::Merge(freeze(Some("true"))),
    )
    .await
    .unwrap();
    eventually(
        "the frozen container to be restarted by its liveness probe",
        Duration::from_secs(30),
        || async {
            let pod = api.get(&target).await.ok()?;
            let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
            (status.restart_count == 2).then_some(())
        },
    )
    .await;
    api.patch(&target, &PatchParams::default(), &Patch::Merge(freeze(None)))
        .await
        .unwrap();
    ready_pods(&client, &ns, 2).await;
    ns.delete(&client).await.unwrap();
}

#[tokio::test]
async fn a_mapped_image_with_a_command_fails_to_start_with_a_reason() {
    let env = env().await;
    map_whoami(env);
    let client = env.client().await.unwrap();
    let ns = env.namespace("mapped-cmd").await.unwrap();
    let _: Pod = create(
        &client,
        &ns,
        json!({
            "metadata": {"name": "with-command"},
            "spec": {"containers": [{"name": "app", "image": IMAGE, "command": ["/bin/sh"]}]},
        }),
    )
    .await;
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let waiting = eventually("a CreateContainerError", Duration::from_secs(20), || async {
        let pod = api.get("with-command").await.ok()?;
        let status = pod.status?.container_statuses?.first()?.clone();
        let waiting = status.state?.waiting?;
        (waiting.reason.as_deref() == Some("CreateContainerError")).then_some(waiting)
    })
    .await;
    assert!(
        waiting
            .message
            .unwrap_or_default()
            .contains("`command` is not supported")
    );
    ns.delete(&client).await.unwrap();
}

#[tokio::test]
async fn a_pod_whose_config_map_comes_later_starts_once_it_exists() {
    let env = env().await;
    map_whoami(env);
    let client = env.client().await.unwrap();
    let ns = env.namespace("mapped-late").await.unwrap();
    let _: ServiceAccount = create(&client, &ns, json!({"metadata": {"name": "whoami"}})).await;
    let mut pod = deployment(1)["spec"]["template"].clone();
    pod["metadata"]["name"] = json!("late");
    let _: Pod = create(&client, &ns, pod).await;
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let waiting = eventually("a CreateContainerError", Duration::from_secs(20), || async {
        let pod = api.get("late").await.ok()?;
        let status = pod.status?.container_statuses?.first()?.clone();
        let waiting = status.state?.waiting?;
        (waiting.reason.as_deref() == Some("CreateContainerError")).then_some(waiting)
    })
    .await;
    assert!(
        waiting.message.unwrap_or_default().contains("settings"),
        "the error names the missing ConfigMap"
    );
    let _: ConfigMap = create(
        &client,
        &ns,
        json!({"metadata": {"name": "settings"}, "data": {"greeting": "hello"}}),
    )
    .await;
    eventually(
        "the pod ready once its ConfigMap exists",
        Duration::from_secs(60),
        || async { api.get("late").await.ok().filter(is_ready) },
    )
    .await;
    assert_eq!(
        report(env, &ns, "late").await["env"]["POD_SAID"],
        "hello from late"
    );
    ns.delete(&client).await.unwrap();
}
