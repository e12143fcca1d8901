//! Scaling worker groups: creating what is missing, replacing broken Pods, honouring `workersToDelete`,
//! removing surplus only without autoscaling, suspended and multi-host groups.

mod common;

use std::collections::BTreeSet;

use common::*;
use kuberay_plugin_sdk::{
    serde_json::{Value, json},
    testing::FakeHost,
};

fn settled(cluster: Value) -> FakeHost {
    let host = host(cluster);
    settle(&host, 5);
    run_all(&host);
    settle(&host, 5);
    host
}

fn set_replicas(host: &FakeHost, replicas: i32) {
    edit(host, |c| {
        c["spec"]["workerGroupSpecs"][0]["replicas"] = json!(replicas)
    });
}

#[test]
fn scale_up_from_zero_to_fifty_creates_exactly_fifty_pods() {
    let host = settled(sample(0));
    assert_eq!(workers(&host).len(), 0);
    set_replicas(&host, 50);
    host.clear_writes();
    let outcome = reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(creates(&host), 50);
    assert_eq!(workers(&host).len(), 50);
    assert_eq!(outcome.requeue_after, secs(2));
    assert_eq!(
        event_reasons(&host)
            .iter()
            .filter(|r| *r == "CreatedWorkerPod")
            .count(),
        50
    );
    let indices: BTreeSet<usize> = workers(&host)
        .iter()
        .filter_map(|p| label(p, "ray.io/worker-group-replica-index").and_then(|i| i.parse().ok()))
        .collect();
    assert_eq!(indices, (0..50).collect());

    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(creates(&host), 0, "no second round of creates");
    assert_eq!(status(&host)["desiredWorkerReplicas"], 50);
}

#[test]
fn replicas_are_clamped_to_min_and_max() {
    let mut cluster = sample(7);
    cluster["spec"]["workerGroupSpecs"][0]["maxReplicas"] = json!(4);
    let host = host(cluster);
    settle(&host, 3);
    assert_eq!(workers(&host).len(), 4);
    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"][0]["replicas"] = json!(0);
        c["spec"]["workerGroupSpecs"][0]["minReplicas"] = json!(2);
    });
    settle(&host, 3);
    assert_eq!(workers(&host).len(), 2);
}

#[test]
fn workers_to_delete_are_deleted_and_replaced_only_if_still_wanted() {
    let host = settled(sample(3));
    let victim = name(&workers(&host)[1]);
    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"][0]["replicas"] = json!(2);
        c["spec"]["workerGroupSpecs"][0]["scaleStrategy"] =
            json!({"workersToDelete": [victim.clone(), "gone-pod"]});
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host), [victim.clone()]);
    assert_eq!(creates(&host), 0);
    assert!(event_reasons(&host).contains(&"DeletedWorkerPod".to_string()));
    assert!(workers(&host).iter().all(|p| name(p) != victim));

    // The autoscaler has not cleared the list yet: the names are gone, nothing more happens.
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(deletes(&host).is_empty());
    assert_eq!(creates(&host), 0);
}

#[test]
fn a_worker_named_in_workers_to_delete_is_replaced_when_replicas_stay() {
    let host = settled(sample(2));
    let victim = name(&workers(&host)[0]);
    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = json!({"workersToDelete": [victim.clone()]});
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host), [victim]);
    assert_eq!(creates(&host), 1);
    assert_eq!(workers(&host).len(), 2);
}

#[test]
fn failed_workers_are_deleted_first_and_replaced_next_round() {
    let host = settled(sample(2));
    let broken = name(&workers(&host)[0]);
    fail(&host, &broken);
    host.clear_writes();
    let outcome = reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host), [broken.clone()]);
    assert_eq!(
        creates(&host),
        0,
        "nothing is created in the round that deletes unhealthy Pods"
    );
    assert_eq!(outcome.requeue_after, secs(2));
    let deleted = host.events().into_iter().find(|e| e.reason == "DeletedWorkerPod");
    assert!(deleted.is_some_and(|e| e.note.contains("terminal state")));

    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(creates(&host), 1);
    assert_eq!(workers(&host).len(), 2);
    // The replacement takes the freed replica index.
    let indices: BTreeSet<String> = workers(&host)
        .iter()
        .filter_map(|p| label(p, "ray.io/worker-group-replica-index").map(str::to_string))
        .collect();
    assert_eq!(indices, BTreeSet::from(["0".to_string(), "1".to_string()]));
}

#[test]
fn a_worker_whose_ray_container_exited_under_restart_policy_never_is_replaced() {
    let mut cluster = sample(1);
    cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["restartPolicy"] = json!("Never");
    let host = settled(cluster);
    let worker = name(&workers(&host)[0]);
    host.update(&pod_kind(), &worker, |p| {
        p["status"]["containerStatuses"] =
            json!([{"name": "ray-worker", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                    "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]);
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host), [worker]);
}

#[test]
fn without_autoscaling_surplus_workers_are_deleted() {
    let host = settled(sample(3));
    set_replicas(&host, 1);
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 2);
    assert_eq!(workers(&host).len(), 1);
}

#[test]
fn with_autoscaling_surplus_workers_are_never_deleted() {
    let mut cluster = sample(3);
    cluster["spec"]["enableInTreeAutoscaling"] = json!(true);
    let host = settled(cluster);
    assert_eq!(workers(&host).len(), 3);
    set_replicas(&host, 1);
    for _ in 0..3 {
        host.clear_writes();
        reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            deletes(&host).is_empty(),
            "the autoscaler alone picks which workers go"
        );
    }
    assert_eq!(workers(&host).len(), 3);
}

#[test]
fn a_suspended_group_loses_its_pods() {
    let host = settled(sample(2));
    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"][0]["suspend"] = json!(true)
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 2);
    assert!(workers(&host).is_empty());
    assert_eq!(heads(&host).len(), 1);
    assert!(event_reasons(&host).contains(&"DeletedWorkerPod".to_string()));
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(host.writes().is_empty());
    assert!(host.events().is_empty());
}

#[test]
fn a_failed_head_is_deleted_and_recreated() {
    let host = settled(sample(1));
    let head = name(&heads(&host)[0]);
    fail(&host, &head);
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host), [head]);
    assert!(event_reasons(&host).contains(&"DeletedHeadPod".to_string()));
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(heads(&host).len(), 1);
    assert_eq!(event_reasons(&host), ["CreatedHeadPod"]);
}

fn multi_host(replicas: i32) -> Value {
    let mut cluster = sample(replicas);
    cluster["spec"]["workerGroupSpecs"][0]["numOfHosts"] = json!(2);
    cluster
}

fn replica_names(host: &FakeHost) -> BTreeSet<String> {
    workers(host)
        .iter()
        .filter_map(|p| label(p, "ray.io/worker-group-replica-name").map(str::to_string))
        .collect()
}

#[test]
fn multi_host_replicas_are_created_whole_with_replica_labels() {
    let host = settled(multi_host(2));
    let workers = workers(&host);
    assert_eq!(workers.len(), 4);
    let names = replica_names(&host);
    assert_eq!(names.len(), 2);
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("small-group-") && n.len() == "small-group-".len() + 5)
    );
    for replica in &names {
        let members: Vec<&Value> = workers
            .iter()
            .filter(|p| label(p, "ray.io/worker-group-replica-name") == Some(replica))
            .collect();
        let hosts: BTreeSet<&str> = members
            .iter()
            .filter_map(|p| label(p, "ray.io/replica-host-index"))
            .collect();
        assert_eq!(hosts, BTreeSet::from(["0", "1"]));
        let index: BTreeSet<&str> = members
            .iter()
            .filter_map(|p| label(p, "ray.io/worker-group-replica-index"))
            .collect();
        assert_eq!(index.len(), 1);
    }
    let services = host.objects(&kuberay_plugin_sdk::Kind::new("", "v1", "Service"));
    let headless = services.iter().find(|s| name(s) == "raycluster-sample-headless");
    assert!(
        headless.is_some_and(
            |s| s["spec"]["clusterIP"] == "None" && s["spec"]["publishNotReadyAddresses"] == true
        )
    );
    assert_eq!(status(&host)["desiredWorkerReplicas"], 4);
}

#[test]
fn a_broken_host_takes_its_whole_replica_down() {
    let host = settled(multi_host(2));
    let before = replica_names(&host);
    let broken = workers(&host)[0].clone();
    let broken_replica = label(&broken, "ray.io/worker-group-replica-name")
        .unwrap_or_default()
        .to_string();
    fail(&host, &name(&broken));
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 2);
    assert_eq!(creates(&host), 2, "a new replica replaces the broken one");
    let after = replica_names(&host);
    assert!(!after.contains(&broken_replica));
    assert_eq!(after.len(), 2);
    assert_eq!(after.intersection(&before).count(), 1);
}

#[test]
fn workers_to_delete_in_a_multi_host_group_removes_the_replica() {
    let host = settled(multi_host(2));
    let victim = workers(&host)[0].clone();
    let replica = label(&victim, "ray.io/worker-group-replica-name")
        .unwrap_or_default()
        .to_string();
    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"][0]["replicas"] = json!(1);
        c["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = json!({"workersToDelete": [name(&victim)]});
    });
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deletes(&host).len(), 2);
    assert!(!replica_names(&host).contains(&replica));
    assert_eq!(workers(&host).len(), 2);
}
