//! KubeRay's own sample manifests, applied unchanged, become `ready` with the Pods and Services KubeRay
//! would create: names, labels, env, the generated `ray start` command, ports, probes and owner references.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::{
    batch::v1::Job,
    core::v1::{Container, Pod, Service, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{Api, api::DeleteParams};
use serde_json::Value;

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, pods, rayclusters, ready_cluster, sample,
    start_operator,
};

fn labels(pod: &Pod) -> BTreeMap<String, String> {
    pod.metadata.labels.clone().unwrap_or_default()
}

fn env_of(container: &Container) -> BTreeMap<String, Value> {
    container
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), serde_json::to_value(e).unwrap()))
        .collect()
}

fn env_value(container: &Container, name: &str) -> Option<String> {
    env_of(container)
        .get(name)
        .and_then(|e| e["value"].as_str().map(str::to_string))
}

fn ray_container(pod: &Pod) -> &Container {
    &pod.spec.as_ref().unwrap().containers[0]
}

/// The single shell argument KubeRay runs (`/bin/bash -c -- "<...> ray start ..."`).
fn start_command(container: &Container) -> String {
    assert_eq!(
        container.command.as_deref(),
        Some(&["/bin/bash".to_string(), "-c".into(), "--".into()][..])
    );
    container.args.as_ref().unwrap().join(" ")
}

fn assert_owned_by(pod_or_object: &Value, cluster: &Value) {
    let owners = pod_or_object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .unwrap();
    let owner = owners
        .iter()
        .find(|o| o["controller"] == true)
        .expect("a controller owner reference");
    assert_eq!(owner["kind"], "RayCluster");
    assert_eq!(owner["apiVersion"], "ray.io/v1");
    assert_eq!(owner["uid"], cluster["metadata"]["uid"]);
    assert_eq!(owner["blockOwnerDeletion"], true);
}

fn assert_common_labels(pod: &Pod, cluster: &str, node_type: &str, group: &str) {
    let l = labels(pod);
    assert_eq!(l.get("ray.io/cluster").map(String::as_str), Some(cluster));
    assert_eq!(l.get("ray.io/node-type").map(String::as_str), Some(node_type));
    assert_eq!(l.get("ray.io/group").map(String::as_str), Some(group));
    assert_eq!(
        l.get("ray.io/identifier").map(String::as_str),
        Some(format!("{cluster}-{node_type}").as_str())
    );
    assert_eq!(l.get("ray.io/is-ray-node").map(String::as_str), Some("yes"));
    assert_eq!(
        l.get("app.kubernetes.io/name").map(String::as_str),
        Some("kuberay")
    );
    assert_eq!(
        l.get("app.kubernetes.io/created-by").map(String::as_str),
        Some("kuberay-operator")
    );
}

#[tokio::test]
async fn sample_cluster_is_ready_with_kuberays_pods_and_service() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "sample").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    let name = "raycluster-kuberay";
    let cluster = ready_cluster(&client, &ns, name).await;
    let status = &cluster["status"];
    assert_eq!(status["desiredWorkerReplicas"], 1);
    assert_eq!(status["availableWorkerReplicas"], 1);
    assert_eq!(status["readyWorkerReplicas"], 1);
    assert_eq!(
        (
            status["minWorkerReplicas"].as_i64(),
            status["maxWorkerReplicas"].as_i64()
        ),
        (Some(1), Some(5))
    );
    assert_eq!(status["desiredCPU"], "2");
    assert_eq!(status["desiredMemory"], "6Gi");
    assert_eq!(status["observedGeneration"], cluster["metadata"]["generation"]);
    assert_eq!(status["head"]["serviceName"], "raycluster-kuberay-head-svc");
    let conditions: Vec<(&str, &str)> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert!(conditions.contains(&("HeadPodReady", "True")), "{conditions:?}");
    assert!(
        conditions.contains(&("RayClusterProvisioned", "True")),
        "{conditions:?}"
    );

    let heads = pods(
        &client,
        &ns,
        &format!("ray.io/cluster={name},ray.io/node-type=head"),
    )
    .await;
    assert_eq!(heads.len(), 1);
    let head = &heads[0];
    assert!(
        head.metadata
            .name
            .as_ref()
            .unwrap()
            .starts_with("raycluster-kuberay-head-")
    );
    assert_eq!(
        head.metadata.generate_name.as_deref(),
        Some("raycluster-kuberay-head-")
    );
    assert_common_labels(head, name, "head", "headgroup");
    assert_owned_by(&serde_json::to_value(head).unwrap(), &cluster);
    assert_eq!(status["head"]["podName"], head.metadata.name.clone().unwrap());
    assert_eq!(
        status["head"]["podIP"],
        head.status.as_ref().unwrap().pod_ip.clone().unwrap()
    );
    let c = ray_container(head);
    let command = start_command(c);
    for flag in [
        "ulimit -n",
        "ray start --head",
        "--dashboard-host=0.0.0.0",
        "--block",
        "--metrics-export-port=8080",
        "--num-cpus=1",
        "--memory=5368709120",
        "--dashboard-agent-listen-port=52365",
    ] {
        assert!(command.contains(flag), "head command lacks {flag}: {command}");
    }
    assert!(
        env_value(c, "KUBERAY_GEN_RAY_START_CMD")
            .unwrap()
            .starts_with("ray start --head")
    );
    assert_eq!(env_value(c, "RAY_ADDRESS").as_deref(), Some("127.0.0.1:6379"));
    assert_eq!(
        env_of(c)["RAY_CLUSTER_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.namespace"
    );
    assert_eq!(
        env_value(c, "RAY_USAGE_STATS_KUBERAY_IN_USE").as_deref(),
        Some("1")
    );
    let cluster_name_env = &env_of(c)["RAY_CLUSTER_NAME"];
    assert_eq!(
        cluster_name_env["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.labels['ray.io/cluster']"
    );
    let ports: BTreeMap<String, i32> = c
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone().unwrap_or_default(), p.container_port))
        .collect();
    assert_eq!(ports.get("metrics"), Some(&8080));
    assert_eq!(ports.get("dashboard"), Some(&8265));
    assert!(
        c.liveness_probe.is_some() && c.readiness_probe.is_some(),
        "probes were not injected"
    );
    assert!(
        head.spec.as_ref().unwrap().volumes.iter().flatten().any(|v| v
            .empty_dir
            .as_ref()
            .is_some_and(|e| e.medium.as_deref() == Some("Memory"))),
        "no /dev/shm volume"
    );

    let workers = pods(
        &client,
        &ns,
        &format!("ray.io/cluster={name},ray.io/node-type=worker"),
    )
    .await;
    assert_eq!(workers.len(), 1);
    let worker = &workers[0];
    assert!(
        worker
            .metadata
            .name
            .as_ref()
            .unwrap()
            .starts_with("raycluster-kuberay-workergroup-worker-")
    );
    assert_common_labels(worker, name, "worker", "workergroup");
    let wc = ray_container(worker);
    let fqdn = format!("raycluster-kuberay-head-svc.{}.svc.cluster.local:6379", ns.name());
    assert!(
        start_command(wc).contains(&format!("--address={fqdn}")),
        "{}",
        start_command(wc)
    );
    assert_eq!(env_value(wc, "RAY_ADDRESS").as_deref(), Some(fqdn.as_str()));
    let init = worker
        .spec
        .as_ref()
        .unwrap()
        .init_containers
        .as_ref()
        .expect("init containers");
    assert_eq!(init[0].name, "wait-gcs-ready");

    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let svc = services.get("raycluster-kuberay-head-svc").await.unwrap();
    let spec = svc.spec.as_ref().unwrap();
    assert_eq!(
        spec.cluster_ip.as_deref(),
        Some("None"),
        "the head Service is headless"
    );
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    let svc_ports: BTreeMap<String, i32> = spec
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone().unwrap_or_default(), p.port))
        .collect();
    for (port, number) in [
        ("gcs-server", 6379),
        ("dashboard", 8265),
        ("client", 10001),
        ("metrics", 8080),
    ] {
        assert_eq!(svc_ports.get(port), Some(&number), "{svc_ports:?}");
    }
    let selector = spec.selector.clone().unwrap();
    assert_eq!(selector.get("ray.io/node-type").map(String::as_str), Some("head"));
    assert_owned_by(&serde_json::to_value(&svc).unwrap(), &cluster);
    assert_eq!(status["endpoints"]["dashboard"], "8265");
    operator.stop().await;
}

#[tokio::test]
async fn complete_sample_keeps_user_params_and_groups() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "complete").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.complete.yaml")).await;
    let name = "raycluster-complete";
    let cluster = ready_cluster(&client, &ns, name).await;
    let heads = pods(
        &client,
        &ns,
        &format!("ray.io/cluster={name},ray.io/node-type=head"),
    )
    .await;
    let head_cmd = start_command(ray_container(&heads[0]));
    // Limits decide the logical resources; the user's rayStartParams are kept (sorted, once).
    assert!(
        head_cmd.contains("--num-cpus=1") && head_cmd.contains("--memory=5368709120"),
        "{head_cmd}"
    );
    assert_eq!(
        head_cmd.matches("--dashboard-host=0.0.0.0").count(),
        1,
        "{head_cmd}"
    );
    let workers = pods(
        &client,
        &ns,
        &format!("ray.io/cluster={name},ray.io/group=small-group"),
    )
    .await;
    assert_eq!(workers.len(), 1);
    assert!(
        workers[0]
            .metadata
            .name
            .as_ref()
            .unwrap()
            .starts_with("raycluster-complete-small-group-worker-")
    );
    // The user's volume mount is kept next to the injected /dev/shm.
    let mounts: Vec<&str> = ray_container(&workers[0])
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect();
    assert!(
        mounts.contains(&"/tmp/ray") && mounts.contains(&"/dev/shm"),
        "{mounts:?}"
    );
    // Requests count first, limits only where no request is set: 500m + 500m.
    assert_eq!(cluster["status"]["desiredCPU"], "1");
    operator.stop().await;
}

#[tokio::test]
async fn autoscaler_sample_gets_the_sidecar_and_its_rbac() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "autoscaler").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.autoscaler.yaml")).await;
    let name = "raycluster-autoscaler";
    let cluster = ready_cluster(&client, &ns, name).await;
    let heads = pods(
        &client,
        &ns,
        &format!("ray.io/cluster={name},ray.io/node-type=head"),
    )
    .await;
    let spec = heads[0].spec.as_ref().unwrap();
    let sidecar = spec
        .containers
        .iter()
        .find(|c| c.name == "autoscaler")
        .expect("the autoscaler sidecar");
    assert!(
        start_command(sidecar).contains("ray kuberay-autoscaler"),
        "{:?}",
        sidecar.args
    );
    assert_eq!(spec.service_account_name.as_deref(), Some(name));
    let head_cmd = start_command(ray_container(&heads[0]));
    assert!(head_cmd.contains("--no-monitor"), "{head_cmd}");
    // replicas: 0 and no worker is created.
    assert!(
        pods(
            &client,
            &ns,
            &format!("ray.io/cluster={name},ray.io/node-type=worker")
        )
        .await
        .is_empty()
    );
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns.name());
    let roles: Api<Role> = Api::namespaced(client.clone(), ns.name());
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns.name());
    let account = accounts.get(name).await.expect("the autoscaler ServiceAccount");
    assert_owned_by(&serde_json::to_value(&account).unwrap(), &cluster);
    let role = roles.get(name).await.expect("the autoscaler Role");
    // What Ray's autoscaler uses, on its own RayCluster only (KubeRay's Role covers every RayCluster of the
    // namespace and adds `watch` on Pods).
    assert_eq!(
        serde_json::to_value(&role.rules).unwrap(),
        serde_json::json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "patch"]},
            {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
            {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "resourceNames": [name], "verbs": ["get", "patch"]}
        ])
    );
    let binding = bindings.get(name).await.expect("the autoscaler RoleBinding");
    assert_eq!(binding.role_ref.name, name);
    operator.stop().await;
}

#[tokio::test]
async fn custom_head_service_sample_uses_the_users_service() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "custom-svc").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.custom-head-service.yaml")).await;
    let cluster = ready_cluster(&client, &ns, "custom-head-svc").await;
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let svc = services
        .get("custom-ray-head-service-name")
        .await
        .expect("the user's head Service name");
    assert_eq!(
        svc.metadata
            .labels
            .as_ref()
            .unwrap()
            .get("custom-label")
            .map(String::as_str),
        Some("custom-ray-head-service-label")
    );
    assert_eq!(
        svc.metadata
            .annotations
            .as_ref()
            .unwrap()
            .get("custom-annotation")
            .map(String::as_str),
        Some("custom-ray-head-service-annotation")
    );
    let spec = svc.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert!(
        spec.ports.iter().flatten().any(|p| p.port == 12345),
        "{:?}",
        spec.ports
    );
    assert!(
        services
            .get_opt("custom-head-svc-head-svc")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        cluster["status"]["head"]["serviceName"],
        "custom-ray-head-service-name"
    );
    operator.stop().await;
}

#[tokio::test]
async fn external_redis_sample_sets_gcs_ft_and_cleans_redis_up_on_delete() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "redis").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.external-redis.yaml")).await;
    let name = "raycluster-external-redis";
    let cluster = ready_cluster(&client, &ns, name).await;
    let finalizers = cluster["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        finalizers
            .iter()
            .any(|f| f == "ray.io/gcs-ft-redis-cleanup-finalizer"),
        "{finalizers:?}"
    );
    let heads = pods(
        &client,
        &ns,
        &format!("ray.io/cluster={name},ray.io/node-type=head"),
    )
    .await;
    let c = ray_container(&heads[0]);
    assert_eq!(env_value(c, "RAY_REDIS_ADDRESS").as_deref(), Some("redis:6379"));
    assert!(env_of(c).contains_key("REDIS_PASSWORD"), "no REDIS_PASSWORD");
    assert_eq!(
        env_value(c, "RAY_external_storage_namespace"),
        cluster["metadata"]["uid"].as_str().map(str::to_string)
    );
    let workers = pods(
        &client,
        &ns,
        &format!("ray.io/cluster={name},ray.io/node-type=worker"),
    )
    .await;
    assert_eq!(
        env_value(
            ray_container(&workers[0]),
            "RAY_gcs_rpc_server_reconnect_timeout_s"
        )
        .as_deref(),
        Some("600")
    );

    // Deleting the cluster runs the Redis cleanup Job behind the finalizer, then lets the cluster go.
    let clusters = rayclusters(&client, &ns);
    clusters.delete(name, &DeleteParams::default()).await.unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let job = eventually("the Redis cleanup Job", Duration::from_secs(60), || async {
        jobs.get_opt(&format!("{name}-redis-cleanup"))
            .await
            .ok()
            .flatten()
    })
    .await;
    let job_labels = job.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        job_labels.get("ray.io/node-type").map(String::as_str),
        Some("redis-cleanup")
    );
    eventually("the RayCluster to be gone", Duration::from_secs(180), || async {
        clusters.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
    operator.stop().await;
}
