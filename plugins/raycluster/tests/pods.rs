//! The head and worker Pods the plugin creates for KubeRay's sample cluster, field by field.

mod common;

use common::*;
use kuberay_plugin_sdk::{
    Kind,
    serde_json::{Value, json},
};

const HEAD_CMD: &str = "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  \
                        --memory=1073741824  --metrics-export-port=8080  --num-cpus=1 ";
const WORKER_CMD: &str = "ray start  --address=raycluster-sample-head-svc.default.svc.cluster.local:6379  --block  \
                          --dashboard-agent-listen-port=52365  --memory=1073741824  --metrics-export-port=8080  \
                          --num-cpus=1  --num-gpus=3  --port=6379 ";

fn first_round(replicas: i32) -> kuberay_plugin_sdk::testing::FakeHost {
    let host = host(sample(replicas));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    host
}

#[test]
fn exactly_one_head_pod_with_kuberay_metadata() {
    let host = first_round(1);
    let heads = heads(&host);
    assert_eq!(heads.len(), 1);
    let head = &heads[0];
    assert_eq!(head["metadata"]["generateName"], "raycluster-sample-head-");
    assert_eq!(head["metadata"]["namespace"], "default");
    assert_eq!(
        head["metadata"]["labels"],
        json!({
            "ray.io/is-ray-node": "yes",
            "ray.io/cluster": "raycluster-sample",
            "ray.io/node-type": "head",
            "ray.io/group": "headgroup",
            "ray.io/identifier": "raycluster-sample-head",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator"
        })
    );
    let annotations = &head["metadata"]["annotations"];
    assert_eq!(annotations["ray.io/ft-enabled"], "false");
    assert_eq!(annotations["ray.io/kuberay-version"], "v1.7.0");
    assert!(
        annotations["ray.io/upgrade-strategy-recreate-hash"]
            .as_str()
            .is_some_and(|h| h.len() == 32)
    );
    assert_eq!(head["metadata"]["ownerReferences"][0]["kind"], "RayCluster");

    // A second reconcile does not create another head.
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(common::heads(&host).len(), 1);
}

#[test]
fn head_container_command_env_volumes_and_probes() {
    let host = first_round(0);
    let head = &heads(&host)[0];
    let ray = &head["spec"]["containers"][0];
    assert_eq!(ray["command"], json!(["/bin/bash", "-c", "--"]));
    assert_eq!(
        ray["args"],
        json!([format!(
            "ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {HEAD_CMD}"
        )])
    );
    let names: Vec<&str> = ray["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "TEST_ENV_NAME",
            "RAY_CLUSTER_NAME",
            "RAY_CLUSTER_NAMESPACE",
            "RAY_CLOUD_INSTANCE_ID",
            "RAY_NODE_TYPE_NAME",
            "KUBERAY_GEN_RAY_START_CMD",
            "RAY_PORT",
            "RAY_ADDRESS",
            "RAY_USAGE_STATS_KUBERAY_IN_USE",
            "RAY_USAGE_STATS_EXTRA_TAGS",
            "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"
        ]
    );
    let field =
        |name: &str| env_value(ray, name).and_then(|e| e.pointer("/valueFrom/fieldRef/fieldPath").cloned());
    assert_eq!(
        field("RAY_CLUSTER_NAME"),
        Some(json!("metadata.labels['ray.io/cluster']"))
    );
    assert_eq!(
        field("RAY_NODE_TYPE_NAME"),
        Some(json!("metadata.labels['ray.io/group']"))
    );
    assert_eq!(field("RAY_CLUSTER_NAMESPACE"), Some(json!("metadata.namespace")));
    assert_eq!(field("RAY_CLOUD_INSTANCE_ID"), Some(json!("metadata.name")));
    let value = |name: &str| env_value(ray, name).map(|e| e["value"].clone());
    assert_eq!(value("KUBERAY_GEN_RAY_START_CMD"), Some(json!(HEAD_CMD)));
    assert_eq!(value("RAY_PORT"), Some(json!("6379")));
    assert_eq!(value("RAY_ADDRESS"), Some(json!("127.0.0.1:6379")));
    assert_eq!(value("RAY_USAGE_STATS_KUBERAY_IN_USE"), Some(json!("1")));
    assert_eq!(
        value("RAY_USAGE_STATS_EXTRA_TAGS"),
        Some(json!("kuberay_version=v1.7.0;kuberay_crd=RayCluster"))
    );
    assert_eq!(value("RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"), Some(json!("1")));

    assert_eq!(
        head["spec"]["volumes"],
        json!([{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}])
    );
    assert_eq!(
        ray["volumeMounts"],
        json!([{"name": "shared-mem", "mountPath": "/dev/shm"}])
    );
    assert_eq!(ray["ports"], json!([{"name": "metrics", "containerPort": 8080}]));

    // Ray 2.46 predates the unified health endpoint: exec probes with wget.
    let live = &ray["livenessProbe"];
    assert_eq!(live["initialDelaySeconds"], 30);
    assert_eq!(live["timeoutSeconds"], 5);
    assert_eq!(live["periodSeconds"], 5);
    assert_eq!(live["successThreshold"], 1);
    assert_eq!(live["failureThreshold"], 120);
    assert_eq!(
        live["exec"]["command"],
        json!([
            "bash",
            "-c",
            "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success && \
             wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
        ])
    );
    let ready = &ray["readinessProbe"];
    assert_eq!(
        (
            ready["initialDelaySeconds"].clone(),
            ready["failureThreshold"].clone()
        ),
        (json!(10), json!(10))
    );
}

#[test]
fn worker_pod_command_env_and_init_container() {
    let host = first_round(1);
    let workers = workers(&host);
    assert_eq!(workers.len(), 1);
    let worker = &workers[0];
    assert_eq!(
        worker["metadata"]["generateName"],
        "raycluster-sample-small-group-worker-"
    );
    assert_eq!(label(worker, "ray.io/group"), Some("small-group"));
    assert_eq!(
        label(worker, "ray.io/identifier"),
        Some("raycluster-sample-worker")
    );
    assert_eq!(label(worker, "ray.io/worker-group-replica-index"), Some("0"));
    assert!(
        worker["metadata"].get("annotations").is_none(),
        "no annotation is added to workers"
    );
    let ray = &worker["spec"]["containers"][0];
    assert_eq!(
        ray["args"],
        json!([format!(
            "ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {WORKER_CMD}"
        )])
    );
    let value = |name: &str| env_value(ray, name).map(|e| e["value"].clone());
    assert_eq!(
        value("FQ_RAY_IP"),
        Some(json!("raycluster-sample-head-svc.default.svc.cluster.local"))
    );
    assert_eq!(value("RAY_IP"), Some(json!("raycluster-sample-head-svc")));
    assert_eq!(
        value("RAY_ADDRESS"),
        Some(json!("raycluster-sample-head-svc.default.svc.cluster.local:6379"))
    );
    assert!(env_value(ray, "RAY_USAGE_STATS_EXTRA_TAGS").is_none());
    assert_eq!(ray["livenessProbe"]["timeoutSeconds"], 2);
    assert_eq!(
        ray["readinessProbe"]["exec"]["command"][2],
        "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
    );

    let init = &worker["spec"]["initContainers"][0];
    assert_eq!(init["name"], "wait-gcs-ready");
    assert_eq!(init["image"], "rayproject/ray:2.46.0");
    assert_eq!(init["command"], json!(["/bin/bash", "-c", "--"]));
    let script = init["args"][0].as_str().unwrap_or_default();
    assert!(script.contains(
        "if ray health-check --address raycluster-sample-head-svc.default.svc.cluster.local:6379 > /dev/null 2>&1; then"
    ));
    assert!(script.starts_with("\n\t\t\t\t\tSECONDS=0\n\t\t\t\t\twhile true; do\n"));
    assert_eq!(
        init["resources"]["limits"],
        json!({"cpu": "200m", "memory": "256Mi"})
    );
    let init_env: Vec<&str> = init["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str())
        .collect();
    // The Ray container's own env (copied before injection), then the head's address.
    assert_eq!(init_env, ["TEST_ENV_NAME", "FQ_RAY_IP", "RAY_IP"]);
}

#[test]
fn user_command_is_prefixed_and_ray_start_commands_are_kept() {
    let mut cluster = sample(0);
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["command"] = json!(["echo"]);
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["args"] = json!(["hello"]);
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let args = heads(&host)[0]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        args.starts_with(
            " echo  hello  && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start --head "
        )
    );

    let mut cluster = sample(0);
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["args"] =
        json!(["ray start --head --block"]);
    let host = common::host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let ray = heads(&host)[0]["spec"]["containers"][0].clone();
    assert_eq!(ray["args"], json!(["ray start --head --block"]));
    assert!(ray.get("command").is_none());
}

#[test]
fn overwrite_container_cmd_keeps_the_command_and_exports_the_generated_one() {
    let mut cluster = sample(0);
    cluster["metadata"]["annotations"] = json!({"ray.io/overwrite-container-cmd": "true"});
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["command"] =
        json!(["/bin/bash", "-c", "$KUBERAY_GEN_RAY_START_CMD"]);
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let head = &heads(&host)[0];
    assert_eq!(
        head["metadata"]["annotations"]["ray.io/overwrite-container-cmd"],
        "true"
    );
    let ray = &head["spec"]["containers"][0];
    assert_eq!(
        ray["command"],
        json!(["/bin/bash", "-c", "$KUBERAY_GEN_RAY_START_CMD"])
    );
    assert!(ray.get("args").is_none());
    assert_eq!(
        env_value(ray, "KUBERAY_GEN_RAY_START_CMD").map(|e| e["value"].clone()),
        Some(json!(HEAD_CMD))
    );
}

#[test]
fn user_env_template_labels_and_group_fields_are_respected() {
    let mut cluster = sample(1);
    let head = &mut cluster["spec"]["headGroupSpec"];
    head["template"]["metadata"] = json!({"labels": {"ray.io/cluster": "evil", "team": "ml"}});
    head["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "RAY_ADDRESS", "value": "mine"}, {"name": "RAY_PORT", "value": "1"}]);
    head["labels"] = json!({"zone": "a"});
    head["template"]["spec"]["containers"][0]["resources"] = json!({});
    head["resources"] = json!({"CPU": "2", "custom": "3"});
    let worker = &mut cluster["spec"]["workerGroupSpecs"][0];
    worker["rayStartParams"] = json!({"plasma-directory": "/data"});
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let head = &heads(&host)[0];
    assert_eq!(label(head, "ray.io/cluster"), Some("raycluster-sample"));
    assert_eq!(label(head, "team"), Some("ml"));
    assert_eq!(label(head, "zone"), Some("a"));
    let ray = &head["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_ADDRESS").map(|e| e["value"].clone()),
        Some(json!("mine"))
    );
    assert_eq!(
        env_value(ray, "RAY_PORT").map(|e| e["value"].clone()),
        Some(json!("1"))
    );
    let cmd = env_value(ray, "KUBERAY_GEN_RAY_START_CMD")
        .map(|e| e["value"].clone())
        .unwrap_or(Value::Null);
    let cmd = cmd.as_str().unwrap_or_default();
    assert!(cmd.contains(" --labels=zone=a "), "{cmd}");
    assert!(cmd.contains(" --num-cpus=2 "), "{cmd}");
    assert!(cmd.contains(r#" --resources='{"custom":3}' "#), "{cmd}");
    // No resources on the head container: /dev/shm without a size limit.
    assert_eq!(
        head["spec"]["volumes"][0]["emptyDir"],
        json!({"medium": "Memory"})
    );
    // plasma-directory set: no /dev/shm volume on the worker.
    assert!(workers(&host)[0]["spec"].get("volumes").is_none());
}

#[test]
fn ray_253_and_later_get_http_probes() {
    let mut cluster = sample(1);
    cluster["spec"]["rayVersion"] = json!("2.53.0");
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    for pod in pods(&host) {
        let ray = &pod["spec"]["containers"][0];
        for probe in ["livenessProbe", "readinessProbe"] {
            assert_eq!(
                ray[probe]["httpGet"],
                json!({"path": "/api/healthz", "port": 52365})
            );
            assert!(ray[probe].get("exec").is_none());
        }
    }
}

#[test]
fn user_probes_are_not_replaced() {
    let mut cluster = sample(0);
    let probe = json!({"tcpSocket": {"port": 6379}, "periodSeconds": 7});
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["livenessProbe"] = probe.clone();
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let ray = &heads(&host)[0]["spec"]["containers"][0];
    assert_eq!(ray["livenessProbe"], probe);
    assert!(ray["readinessProbe"]["exec"].is_object());
}

#[test]
fn rayservice_clusters_get_serve_settings() {
    let mut cluster = sample(1);
    cluster["metadata"]["labels"] = json!({"ray.io/originated-from-crd": "RayService"});
    cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"name": "serve", "containerPort": 8000}]);
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(label(&heads(&host)[0], "ray.io/serve"), Some("false"));
    let worker = &workers(&host)[0];
    assert_eq!(label(worker, "ray.io/serve"), Some("true"));
    let ray = &worker["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_timeout_ms_task_wait_for_death_info").map(|e| e["value"].clone()),
        Some(json!("0"))
    );
    assert_eq!(ray["readinessProbe"]["failureThreshold"], 1);
    assert!(
        ray["readinessProbe"]["exec"]["command"][2]
            .as_str()
            .is_some_and(|c| c
                .ends_with("&& wget --tries 1 -T 10 -q -O- http://localhost:8000/-/healthz | grep success"))
    );
    let tags = env_value(
        &heads(&host)[0]["spec"]["containers"][0],
        "RAY_USAGE_STATS_EXTRA_TAGS",
    );
    assert_eq!(
        tags.map(|e| e["value"].clone()),
        Some(json!("kuberay_version=v1.7.0;kuberay_crd=RayService"))
    );
}

/// The Pod lists of the last reconcile, by selector.
fn pod_lists(host: &kuberay_plugin_sdk::testing::FakeHost) -> Vec<String> {
    host.lists()
        .into_iter()
        .filter(|(kind, _)| *kind == pod_kind())
        .map(|(_, selector)| selector)
        .collect()
}

#[test]
fn a_reconcile_reads_the_clusters_pods_once_and_again_after_a_write() {
    let host = running(sample(2));
    host.clear_writes();
    reconcile(&host).unwrap();
    assert!(host.writes().is_empty(), "{:?}", host.writes());
    // Head, worker group and status all read from one list.
    assert_eq!(pod_lists(&host), ["ray.io/cluster=raycluster-sample"]);
    assert_eq!(status(&host)["availableWorkerReplicas"], 2);

    // Scaling down deletes a worker: what was read before the delete is not used after it.
    edit(&host, |c| c["spec"]["workerGroupSpecs"][0]["replicas"] = json!(1));
    host.clear_writes();
    reconcile(&host).unwrap();
    assert_eq!(deletes(&host).len(), 1);
    assert_eq!(pod_lists(&host).len(), 2);
    assert_eq!(status(&host)["availableWorkerReplicas"], 1);
    assert_eq!(workers(&host).len(), 1);
}

#[test]
fn workers_dial_the_head_in_the_configured_cluster_domain() {
    let host = host(sample(1)).with_config(json!({"clusterDomain": "corp.example"}));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let worker = serde_json::to_string(&workers(&host)[0]).unwrap_or_default();
    assert!(
        worker.contains("raycluster-sample-head-svc.default.svc.corp.example:6379"),
        "{worker}"
    );
    assert!(!worker.contains("svc.cluster.local"), "{worker}");
}

/// KubeRay's operator environment toggles, as the host hands them over (`kuberayEnv`), change the Pods and
/// Services as they change KubeRay's.
#[test]
fn kuberays_environment_toggles_change_pods_services_and_the_requeue() {
    let defaults = running(sample(1));
    let head = &heads(&defaults)[0];
    assert!(head.pointer("/metadata/generateName").is_some(), "{head}");
    assert!(
        head.pointer("/spec/containers/0/readinessProbe").is_some(),
        "{head}"
    );
    assert_eq!(head.pointer("/spec/containers/0/command/1"), Some(&json!("-c")));
    let worker = &workers(&defaults)[0];
    assert_eq!(
        worker.pointer("/spec/initContainers/0/name"),
        Some(&json!("wait-gcs-ready"))
    );
    let service = &defaults.objects(&Kind::new("", "v1", "Service"))[0];
    assert_eq!(
        service.pointer("/spec/clusterIP"),
        Some(&json!("None")),
        "{service}"
    );
    assert_eq!(
        settle(&defaults, 1).requeue_after,
        Some(std::time::Duration::from_secs(300))
    );

    let toggled = host(sample(1)).with_config(json!({"kuberayEnv": {
        "ENABLE_INIT_CONTAINER_INJECTION": "false",
        "ENABLE_PROBES_INJECTION": "false",
        "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": "true",
        "ENABLE_LOGIN_SHELL": "true",
        "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "true",
        "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "60",
    }}));
    settle(&toggled, 3);
    run_all(&toggled);
    let outcome = settle(&toggled, 3);
    let head = &heads(&toggled)[0];
    assert_eq!(name(head), "raycluster-sample-head");
    assert!(
        head.pointer("/spec/containers/0/readinessProbe").is_none(),
        "{head}"
    );
    assert!(
        head.pointer("/spec/containers/0/livenessProbe").is_none(),
        "{head}"
    );
    assert_eq!(head.pointer("/spec/containers/0/command/1"), Some(&json!("-cl")));
    let worker = &workers(&toggled)[0];
    assert!(worker.pointer("/spec/initContainers").is_none(), "{worker}");
    let service = &toggled.objects(&Kind::new("", "v1", "Service"))[0];
    assert!(service.pointer("/spec/clusterIP").is_none(), "{service}");
    assert!(
        service.pointer("/spec/publishNotReadyAddresses").is_none(),
        "{service}"
    );
    assert_eq!(outcome.requeue_after, Some(std::time::Duration::from_secs(60)));
}

fn container_names(pod: &Value) -> Vec<&str> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect()
}

/// What KubeRay's Configuration file adds to Ray Pods (handed over as `kuberayConfiguration`): sidecars after
/// the Pod's own containers, default labels, annotations and Ray container variables where the template sets
/// none of that name.
#[test]
fn kuberays_configuration_adds_sidecars_labels_annotations_and_variables() {
    let mut cluster = sample(1);
    cluster["spec"]["headGroupSpec"]["template"]["metadata"] = json!({"labels": {"team": "mine"}});
    let host = host(cluster).with_config(json!({"kuberayConfiguration": {
        "headSidecarContainers": [{"name": "log-shipper", "image": "fluent-bit:3"}],
        "workerSidecarContainers": [{"name": "worker-agent", "image": "agent:1"}],
        "defaultContainerEnvs": [{"name": "ORG", "value": "acme"}],
        "defaultPodLabels": {"team": "platform", "cost-center": "42"},
        "defaultPodAnnotations": {"acme.io/owner": "platform"},
    }}));
    settle(&host, 3);
    let head = &heads(&host)[0];
    let containers = container_names(head);
    assert_eq!(containers.last(), Some(&"log-shipper"), "{containers:?}");
    assert_eq!(label(head, "team"), Some("mine"), "the template's own label wins");
    assert_eq!(label(head, "cost-center"), Some("42"));
    assert_eq!(head["metadata"]["annotations"]["acme.io/owner"], "platform");
    let env = head["spec"]["containers"][0]["env"].to_string();
    assert!(env.contains(r#""name":"ORG","value":"acme""#), "{env}");
    let worker = &workers(&host)[0];
    assert_eq!(container_names(worker), ["ray-worker", "worker-agent"]);
    assert_eq!(label(worker, "team"), Some("platform"));
}
