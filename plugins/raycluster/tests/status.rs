//! The status the plugin reports, its stability (a steady-state reconcile writes nothing), suspension and
//! `Recreate` upgrades.

mod common;

use std::time::{Duration, UNIX_EPOCH};

use common::*;
use kuberay_plugin_sdk::{
    Host, Kind,
    serde_json::json,
    testing::{FakeHost, Write},
};

fn at(host: &FakeHost, secs: u64) {
    host.set_now(UNIX_EPOCH + Duration::from_secs(secs));
}

const T0: u64 = 1_800_000_000;

fn service_kind() -> Kind {
    Kind::new("", "v1", "Service")
}

#[test]
fn head_service_is_headless_with_kuberay_defaults() {
    let host = host(sample(0));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let services = host.objects(&service_kind());
    assert_eq!(services.len(), 1);
    let svc = &services[0];
    assert_eq!(name(svc), "raycluster-sample-head-svc");
    let selector = json!({
        "ray.io/cluster": "raycluster-sample",
        "ray.io/node-type": "head",
        "ray.io/identifier": "raycluster-sample-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator"
    });
    assert_eq!(svc["metadata"]["labels"], selector);
    assert_eq!(svc["spec"]["selector"], selector);
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(svc["spec"]["publishNotReadyAddresses"], true);
    assert_eq!(
        svc["spec"]["ports"],
        json!([
            {"name": "client", "port": 10001, "appProtocol": "tcp"},
            {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
            {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
            {"name": "metrics", "port": 8080, "appProtocol": "tcp"},
            {"name": "serve", "port": 8000, "appProtocol": "tcp"}
        ])
    );
    assert_eq!(event_reasons(&host)[0], "CreatedService");
}

#[test]
fn custom_head_service_serve_service_and_ingress() {
    let mut cluster = sample(0);
    cluster["metadata"]["annotations"] = json!({
        "ray.io/enable-serve-service": "true",
        "kubernetes.io/ingress.class": "nginx",
        "nginx.ingress.kubernetes.io/rewrite-target": "/$1"
    });
    cluster["spec"]["headServiceAnnotations"] = json!({"team": "ml"});
    let head = &mut cluster["spec"]["headGroupSpec"];
    head["template"]["spec"]["containers"][0]["ports"] = json!([
        {"name": "dashboard", "containerPort": 8266},
        {"name": "serve-grpc", "containerPort": 9000},
        {"containerPort": 7777}
    ]);
    head["headService"] =
        json!({"metadata": {"name": "my-head", "labels": {"extra": "x"}}, "spec": {"type": "NodePort"}});
    head["enableIngress"] = json!(true);
    head["ingressOptions"] = json!({"host": "ray.example.com", "path": "/ray"});
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));

    let services = host.objects(&service_kind());
    let head_svc = services
        .iter()
        .find(|s| name(s) == "my-head")
        .cloned()
        .unwrap_or_default();
    assert_eq!(head_svc["spec"]["type"], "NodePort");
    assert!(head_svc["spec"].get("clusterIP").is_none());
    assert_eq!(head_svc["metadata"]["labels"]["extra"], "x");
    assert_eq!(head_svc["metadata"]["labels"]["ray.io/node-type"], "head");
    assert_eq!(head_svc["metadata"]["annotations"], json!({"team": "ml"}));
    let port_names: Vec<&str> = head_svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(port_names, ["7777-port", "dashboard", "metrics", "serve-grpc"]);

    let serve = services
        .iter()
        .find(|s| name(s) == "raycluster-sample-serve-svc")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        serve["spec"]["ports"],
        json!([{"name": "serve-grpc", "port": 9000}])
    );
    assert_eq!(
        serve["spec"]["selector"],
        json!({"ray.io/cluster": "raycluster-sample"})
    );
    assert_eq!(
        serve["metadata"]["labels"]["ray.io/serve"],
        "raycluster-sample-serve"
    );

    let ingresses = host.objects(&Kind::new("networking.k8s.io", "v1", "Ingress"));
    assert_eq!(ingresses.len(), 1);
    let ingress = &ingresses[0];
    assert_eq!(name(ingress), "raycluster-sample-head-ingress");
    assert_eq!(ingress["spec"]["ingressClassName"], "nginx");
    assert!(
        ingress["metadata"]["annotations"]
            .get("kubernetes.io/ingress.class")
            .is_none()
    );
    assert_eq!(
        ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/rewrite-target"],
        "/$1"
    );
    let rule = &ingress["spec"]["rules"][0];
    assert_eq!(rule["host"], "ray.example.com");
    assert_eq!(
        rule["http"]["paths"][0],
        json!({"path": "/ray", "pathType": "Prefix",
               "backend": {"service": {"name": "my-head", "port": {"number": 8266}}}})
    );
    assert!(event_reasons(&host).contains(&"CreatedIngress".to_string()));

    // A spec change reaches the Ingress; the Services are created once and left alone.
    edit(&host, |c| {
        c["spec"]["headGroupSpec"]["ingressOptions"]["path"] = json!("/other")
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let applies: Vec<Write> = host
        .writes()
        .into_iter()
        .filter(|w| matches!(w, Write::Apply(..)))
        .collect();
    assert_eq!(
        applies,
        [Write::Apply(
            Kind::new("networking.k8s.io", "v1", "Ingress"),
            "raycluster-sample-head-ingress".into()
        )]
    );
    assert!(event_reasons(&host).contains(&"UpdatedIngress".to_string()));
}

#[test]
fn status_of_a_ready_cluster() {
    let host = host(sample(2));
    at(&host, T0);
    settle(&host, 3);
    run_all(&host);
    at(&host, T0 + 60);
    settle(&host, 3);
    let status = status(&host);
    let head = heads(&host)[0].clone();
    let head_ip = head["status"]["podIP"].clone();
    assert_eq!(status["state"], "ready");
    assert_eq!(status["desiredWorkerReplicas"], 2);
    assert_eq!(status["readyWorkerReplicas"], 2);
    assert_eq!(status["availableWorkerReplicas"], 2);
    assert!(
        status.get("minWorkerReplicas").is_none(),
        "zero is omitted as in KubeRay's JSON"
    );
    assert_eq!(status["maxWorkerReplicas"], 10000);
    assert_eq!(status["desiredCPU"], "3");
    assert_eq!(status["desiredMemory"], "3Gi");
    assert_eq!(status["desiredGPU"], "6");
    assert_eq!(status["desiredTPU"], "0");
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(
        status["head"],
        json!({"podIP": head_ip, "serviceIP": head_ip, "podName": name(&head), "serviceName": "raycluster-sample-head-svc"})
    );
    assert_eq!(
        status["endpoints"],
        json!({"client": "10001", "dashboard": "8265", "gcs-server": "6379", "metrics": "8080", "serve": "8000"})
    );
    assert_eq!(
        status["stateTransitionTimes"],
        json!({"ready": "2027-01-15T08:01:00Z"})
    );
    assert_eq!(status["lastUpdateTime"], "2027-01-15T08:01:00Z");
    let types: Vec<&str> = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(
        types,
        [
            "HeadPodReady",
            "RayClusterProvisioned",
            "RayClusterSuspended",
            "RayClusterSuspending"
        ]
    );
    let head_ready = condition(&host, "HeadPodReady").unwrap_or_default();
    assert_eq!(
        (head_ready["status"].clone(), head_ready["reason"].clone()),
        (json!("True"), json!("HeadPodRunningAndReady"))
    );
    let provisioned = condition(&host, "RayClusterProvisioned").unwrap_or_default();
    assert_eq!(provisioned["reason"], "AllPodRunningAndReadyFirstTime");
    assert_eq!(provisioned["lastTransitionTime"], "2027-01-15T08:01:00Z");
}

#[test]
fn a_steady_state_reconcile_writes_nothing() {
    let host = running(sample(2));
    let before = host.primary();
    at(&host, T0 + 3600);
    host.clear_writes();
    let outcome = reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), []);
    assert!(host.events().is_empty());
    assert_eq!(outcome.requeue_after, secs(300));
    assert_eq!(
        host.primary(),
        before,
        "the status, timestamps included, is unchanged"
    );
    // And again, an hour later still.
    at(&host, T0 + 7200);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), []);
}

#[test]
fn provisioned_is_sticky_and_head_pod_ready_follows_the_head() {
    let host = host(sample(1));
    at(&host, T0);
    settle(&host, 3);
    let provisioning = condition(&host, "RayClusterProvisioned").unwrap_or_default();
    assert_eq!(
        (provisioning["status"].clone(), provisioning["reason"].clone()),
        (json!("False"), json!("RayClusterPodsProvisioning"))
    );
    let head_ready = condition(&host, "HeadPodReady").unwrap_or_default();
    assert_eq!(
        (head_ready["status"].clone(), head_ready["reason"].clone()),
        (json!("False"), json!("Unknown"))
    );
    run_all(&host);
    at(&host, T0 + 10);
    settle(&host, 3);
    assert_eq!(
        condition(&host, "RayClusterProvisioned").map(|c| c["status"].clone()),
        Some(json!("True"))
    );

    // The head becomes unready: HeadPodReady follows, RayClusterProvisioned stays, state stays ready.
    let head = name(&heads(&host)[0]);
    host.update(&pod_kind(), &head, |p| {
        p["status"]["conditions"] = json!([{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [ray-head]"}]);
        p["status"]["containerStatuses"] = json!([{"name": "ray-head", "ready": false, "restartCount": 1, "image": "i", "imageID": "",
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}}]);
    });
    at(&host, T0 + 20);
    settle(&host, 3);
    let head_ready = condition(&host, "HeadPodReady").unwrap_or_default();
    assert_eq!(head_ready["status"], "False");
    assert_eq!(head_ready["reason"], "CrashLoopBackOff");
    assert_eq!(
        head_ready["message"],
        "containers with unready status: [ray-head]; ray-head: back-off 10s"
    );
    assert_eq!(head_ready["lastTransitionTime"], "2027-01-15T08:00:20Z");
    assert_eq!(
        condition(&host, "RayClusterProvisioned").map(|c| c["status"].clone()),
        Some(json!("True"))
    );
    assert_eq!(status(&host)["state"], "ready");
}

#[test]
fn a_provisioned_sidecar_cluster_does_not_get_a_new_head() {
    let mut cluster = sample(0);
    cluster["metadata"]["annotations"] = json!({"ray.io/disable-provisioned-head-restart": "true"});
    let host = host(cluster);
    settle(&host, 3);
    run_all(&host);
    settle(&host, 3);
    let head = name(&heads(&host)[0]);
    Host::delete(&host, &pod_kind(), &head, None).unwrap_or_else(|e| panic!("{e}"));
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(creates(&host), 0);
    let ready = condition(&host, "HeadPodReady").unwrap_or_default();
    assert_eq!(
        (
            ready["status"].clone(),
            ready["reason"].clone(),
            ready["message"].clone()
        ),
        (
            json!("False"),
            json!("HeadPodNotFound"),
            json!("Head Pod not found")
        )
    );
}

#[test]
fn suspend_is_atomic_and_resumes_cleanly() {
    let host = running(sample(2));
    assert_eq!(pods(&host).len(), 3);

    edit(&host, |c| c["spec"]["suspend"] = json!(true));
    host.clear_writes();
    let outcome = reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    // First round: only the condition is set, no Pod is touched yet.
    assert!(deletes(&host).is_empty());
    assert_eq!(
        condition(&host, "RayClusterSuspending").map(|c| c["status"].clone()),
        Some(json!("True"))
    );
    assert_eq!(outcome.requeue_after, secs(2));

    // The user changes their mind before the Pods are gone: suspension completes anyway.
    edit(&host, |c| c["spec"]["suspend"] = json!(false));
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 3);
    assert!(pods(&host).is_empty());
    assert!(event_reasons(&host).contains(&"DeletedPod".to_string()));
    assert_eq!(
        condition(&host, "RayClusterSuspending").map(|c| c["status"].clone()),
        Some(json!("False"))
    );
    assert_eq!(
        condition(&host, "RayClusterSuspended").map(|c| c["status"].clone()),
        Some(json!("True"))
    );
    let provisioned = condition(&host, "RayClusterProvisioned").unwrap_or_default();
    assert_eq!(provisioned["status"], "False");
    assert_eq!(provisioned["message"], "RayCluster has been suspended");
    // `state` becomes `suspended` only while `suspend` is true; here it was flipped back already.
    assert_ne!(status(&host)["state"], "suspended");

    // Resume: Suspended goes False first, Pods come back in the round after.
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(creates(&host), 0);
    assert_eq!(
        condition(&host, "RayClusterSuspended").map(|c| c["status"].clone()),
        Some(json!("False"))
    );
    settle(&host, 3);
    assert_eq!(pods(&host).len(), 3);
}

#[test]
fn a_suspended_cluster_reports_state_suspended_and_keeps_quiet() {
    let host = host(sample(1));
    settle(&host, 3);
    edit(&host, |c| c["spec"]["suspend"] = json!(true));
    settle(&host, 5);
    assert!(pods(&host).is_empty());
    assert_eq!(status(&host)["state"], "suspended");
    assert!(status(&host)["stateTransitionTimes"].get("suspended").is_some());
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(host.writes(), []);
    assert!(host.events().is_empty());
}

#[test]
fn recreate_upgrade_replaces_every_pod_when_the_template_changes() {
    let mut cluster = sample(2);
    cluster["spec"]["upgradeStrategy"] = json!({"type": "Recreate"});
    let host = host(cluster);
    settle(&host, 3);
    run_all(&host);
    settle(&host, 3);
    let hash = heads(&host)[0]["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"].clone();

    // Scaling is not a template change.
    edit(&host, |c| c["spec"]["workerGroupSpecs"][0]["replicas"] = json!(3));
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(deletes(&host).is_empty());
    assert_eq!(creates(&host), 1);

    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] =
            json!("rayproject/ray:2.47.0")
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 4);
    assert_eq!(creates(&host), 0);
    let note = host
        .events()
        .into_iter()
        .find(|e| e.reason == "DeletedPod")
        .map(|e| e.note)
        .unwrap_or_default();
    assert_eq!(
        note,
        "Deleted all Pods for RayCluster default/raycluster-sample due to spec change with Recreate upgradeStrategy"
    );
    settle(&host, 3);
    assert_eq!(pods(&host).len(), 4);
    let new_hash =
        heads(&host)[0]["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"].clone();
    assert_ne!(new_hash, hash);
    assert!(
        workers(&host)
            .iter()
            .all(|w| w["spec"]["containers"][0]["image"] == "rayproject/ray:2.47.0")
    );
}

#[test]
fn without_recreate_template_changes_leave_pods_alone() {
    let host = host(sample(1));
    settle(&host, 3);
    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = json!("other")
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(deletes(&host).is_empty());
}

#[test]
fn time_moves_only_with_changes() {
    let host = host(sample(1));
    at(&host, T0);
    settle(&host, 3);
    let first = status(&host)["lastUpdateTime"].clone();
    assert_eq!(first, "2027-01-15T08:00:00Z");
    at(&host, T0 + 5);
    settle(&host, 3);
    assert_eq!(status(&host)["lastUpdateTime"], first);
    run(&host, &name(&workers(&host)[0]), "10.0.0.9");
    at(&host, T0 + 9);
    settle(&host, 3);
    assert_eq!(status(&host)["lastUpdateTime"], "2027-01-15T08:00:09Z");
    assert_eq!(status(&host)["availableWorkerReplicas"], 1);
}

#[test]
fn a_head_with_neither_pod_nor_service_is_left_out_of_the_status() {
    // Server-side apply turns an emptied `head: {}` into null, which the CRD refuses.
    let mut cluster = sample(1);
    cluster["status"] = json!({"head": {"podIP": "10.0.0.1", "podName": "h", "serviceName": "s"}});
    let cluster: kuberay_crds::RayCluster = serde_json::from_value(cluster).unwrap();
    let observed = kuberay_plugin_raycluster::status::Observed {
        pods: vec![],
        head_services: vec![],
    };
    let now = kuberay_plugin_raycluster::reconcile::now(&host(sample(1)));
    let status = kuberay_plugin_raycluster::status::compute(&cluster, &observed, None, &now).unwrap();
    assert_eq!(status.head, None);
    let json = serde_json::to_value(&status).unwrap();
    assert!(json.get("head").is_none(), "{json}");
}
