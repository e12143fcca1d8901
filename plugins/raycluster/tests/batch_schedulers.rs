//! `batchScheduler`: the Pods and PodGroups KubeRay v1.7 writes for the sample cluster under each batch
//! scheduler, on the judged FakeHost (the operator's admission rules and the built-in policy).

mod common;

use common::*;
use kuberay_plugin_sdk::{
    Kind,
    serde_json::{Value, json},
    testing::{FakeHost, Write},
};

fn volcano() -> Kind {
    Kind::new("scheduling.volcano.sh", "v1beta1", "PodGroup")
}

fn coscheduling() -> Kind {
    Kind::new("scheduling.x-k8s.io", "v1alpha1", "PodGroup")
}

/// The sample cluster with `labels` and `annotations`, reconciled once under `scheduler`.
fn reconciled(scheduler: &str, labels: Value, annotations: Value) -> FakeHost {
    let mut cluster = sample(2);
    cluster["metadata"]["labels"] = labels;
    cluster["metadata"]["annotations"] = annotations;
    let host = host(cluster).with_config(json!({"batchScheduler": scheduler}));
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    host
}

fn pick(object: &Value, keys: &[&str], at: &str) -> Value {
    let map = object.pointer(at).cloned().unwrap_or(json!({}));
    keys.iter()
        .filter_map(|k| map.get(*k).map(|v| ((*k).to_string(), v.clone())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn owner_is_the_cluster(object: &Value) {
    let owner = &object["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "RayCluster");
    assert_eq!(owner["uid"], "cluster-uid");
    assert_eq!(owner["controller"], true);
}

#[test]
fn volcano_pod_group_comes_first_and_every_pod_joins_it() {
    let labels = json!({"volcano.sh/queue-name": "team-a", "ray.io/priority-class-name": "high"});
    let host = reconciled("volcano", labels, json!({"note": "kept"}));
    let writes = host.writes();
    // Before the Pods, as KubeRay creates it (after the Services, which come first in both).
    let created = Write::Create(volcano(), "ray-raycluster-sample-pg".into());
    let group_at = writes.iter().position(|w| *w == created);
    let first_pod = writes
        .iter()
        .position(|w| matches!(w, Write::Create(k, _) if *k == pod_kind()));
    assert!(group_at.unwrap() < first_pod.unwrap(), "{writes:?}");
    let groups = host.objects(&volcano());
    assert_eq!(groups.len(), 1);
    let group = &groups[0];
    owner_is_the_cluster(group);
    assert_eq!(group["metadata"]["annotations"], json!({"note": "kept"}));
    // 1 head + 2 workers; 1 + 2 × 1 CPU, 1Gi + 2 × 1Gi, 2 × 3 GPUs.
    assert_eq!(
        group["spec"],
        json!({
            "minMember": 3,
            "minResources": {"cpu": "3", "memory": "3Gi", "nvidia.com/gpu": "6"},
            "queue": "team-a",
            "priorityClassName": "high"
        })
    );
    for (pod, task) in [
        (&heads(&host)[0], "headgroup"),
        (&workers(&host)[0], "small-group"),
    ] {
        assert_eq!(pod["spec"]["schedulerName"], "volcano");
        assert_eq!(
            pick(
                pod,
                &["volcano.sh/queue-name", "ray.io/priority-class-name"],
                "/metadata/labels"
            ),
            json!({"volcano.sh/queue-name": "team-a", "ray.io/priority-class-name": "high"})
        );
        assert_eq!(
            pick(
                pod,
                &["scheduling.k8s.io/group-name", "volcano.sh/task-spec"],
                "/metadata/annotations"
            ),
            json!({"scheduling.k8s.io/group-name": "ray-raycluster-sample-pg", "volcano.sh/task-spec": task})
        );
    }
}

#[test]
fn volcano_pod_group_follows_the_desired_size() {
    let host = reconciled("volcano", json!({}), json!({}));
    let mut cluster = host.primary();
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = json!(4);
    host.set_primary(cluster);
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        host.writes()
            .contains(&Write::Apply(volcano(), "ray-raycluster-sample-pg".into()))
    );
    let group = &host.objects(&volcano())[0];
    assert_eq!(group["spec"]["minMember"], 5);
    assert_eq!(
        group["spec"]["minResources"],
        json!({"cpu": "5", "memory": "5Gi", "nvidia.com/gpu": "12"})
    );
    // Nothing changes: nothing is written to the PodGroup.
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !host
            .writes()
            .iter()
            .any(|w| matches!(w, Write::Apply(k, _) | Write::Create(k, _) if *k == volcano()))
    );
}

#[test]
fn volcano_leaves_a_rayjobs_cluster_to_its_rayjob() {
    let labels = json!({"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "my-job"});
    let host = reconciled("volcano", labels, json!({}));
    assert!(host.objects(&volcano()).is_empty());
    let head = &heads(&host)[0];
    assert_eq!(
        head["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
        "ray-my-job-pg"
    );
}

#[test]
fn yunikorn_labels_and_gang_annotations() {
    let labels = json!({
        "yunikorn.apache.org/app-id": "app-1", "yunikorn.apache.org/queue": "root.ray",
        "ray.io/gang-scheduling-enabled": "true"
    });
    let host = reconciled("yunikorn", labels, json!({}));
    let groups = concat!(
        r#"[{"minResource":{"cpu":"1","memory":"1Gi"},"name":"headgroup","minMember":1},"#,
        r#"{"minResource":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"3"},"name":"small-group","minMember":0}]"#
    );
    for (pod, group) in [
        (&heads(&host)[0], "headgroup"),
        (&workers(&host)[0], "small-group"),
    ] {
        assert_eq!(pod["spec"]["schedulerName"], "yunikorn");
        assert_eq!(
            pick(pod, &["applicationId", "queue"], "/metadata/labels"),
            json!({"applicationId": "app-1", "queue": "root.ray"})
        );
        assert_eq!(
            pick(
                pod,
                &[
                    "yunikorn.apache.org/task-groups",
                    "yunikorn.apache.org/task-group-name"
                ],
                "/metadata/annotations"
            ),
            json!({"yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": group})
        );
    }
}

#[test]
fn kai_scheduler_queue_label() {
    let host = reconciled(
        "kai-scheduler",
        json!({"kai.scheduler/queue": "team-b"}),
        json!({}),
    );
    for pod in pods(&host) {
        assert_eq!(pod["spec"]["schedulerName"], "kai-scheduler");
        assert_eq!(pod["metadata"]["labels"]["kai.scheduler/queue"], "team-b");
    }
    assert_eq!(pods(&host).len(), 3);
}

#[test]
fn scheduler_plugins_pod_group_for_a_gang() {
    let host = reconciled(
        "scheduler-plugins",
        json!({"ray.io/gang-scheduling-enabled": "true"}),
        json!({}),
    );
    let groups = host.objects(&coscheduling());
    assert_eq!(groups.len(), 1);
    owner_is_the_cluster(&groups[0]);
    assert_eq!(groups[0]["metadata"]["name"], "raycluster-sample");
    assert_eq!(
        groups[0]["spec"],
        json!({"minMember": 3, "minResources": {"cpu": "3", "memory": "3Gi", "nvidia.com/gpu": "6"}})
    );
    for pod in pods(&host) {
        assert_eq!(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler");
        assert_eq!(
            pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"],
            "raycluster-sample"
        );
    }
    // Without the gang label: no PodGroup, no label, the scheduler all the same.
    let plain = reconciled("scheduler-plugins", json!({}), json!({}));
    assert!(plain.objects(&coscheduling()).is_empty());
    assert_eq!(
        heads(&plain)[0]["spec"]["schedulerName"],
        "scheduler-plugins-scheduler"
    );
    assert_eq!(label(&heads(&plain)[0], "scheduling.x-k8s.io/pod-group"), None);
}

#[test]
fn no_batch_scheduler_changes_nothing() {
    let host = reconciled("", json!({"volcano.sh/queue-name": "q"}), json!({}));
    assert!(host.objects(&volcano()).is_empty());
    assert_eq!(heads(&host)[0]["spec"].get("schedulerName"), None);
    assert_eq!(label(&heads(&host)[0], "volcano.sh/queue-name"), None);
}
