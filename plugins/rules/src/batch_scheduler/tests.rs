//! The expectations of KubeRay v1.7's own unit tests (`batchscheduler/*/..._test.go`) for the same inputs,
//! and Go's JSON of YuniKorn's task groups.

use std::collections::BTreeMap;

use kuberay_crds::{RayCluster, RayJob};
use serde_json::{Value, json};

use super::*;

fn container(name: &str, gpu: bool) -> Value {
    let mut limits = json!({"cpu": "500m", "memory": "512Mi"});
    if gpu {
        limits["nvidia.com/gpu"] = json!("1");
    }
    json!({"name": name, "resources": {"limits": limits, "requests": {"cpu": "256m", "memory": "256Mi"}}})
}

/// KubeRay's `createTestRayCluster`'s spec: a head and one group of 2 replicas (1 to 4) of `hosts` hosts.
fn cluster_spec(hosts: i32, gpu: bool) -> Value {
    json!({
        "headGroupSpec": {"template": {"spec": {"containers": [container("ray-head", false)]}}},
        "workerGroupSpecs": [{
            "groupName": "worker-group-1", "replicas": 2, "minReplicas": 1, "maxReplicas": 4,
            "numOfHosts": hosts,
            "template": {"spec": {"containers": [container("ray-worker", gpu)]}}
        }]
    })
}

fn cluster(labels: Value, spec: Value) -> RayCluster {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "raycluster-sample", "namespace": "default", "labels": labels},
        "spec": spec
    }))
    .unwrap()
}

fn job(labels: Value, mode: &str) -> RayJob {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "rayjob-sample", "namespace": "default", "labels": labels},
        "spec": {"submissionMode": mode, "rayClusterSpec": cluster_spec(1, false)}
    }))
    .unwrap()
}

fn resources(size: &volcano::Size) -> BTreeMap<&str, String> {
    size.min_resources
        .iter()
        .map(|(k, v)| (k.as_str(), v.canonical()))
        .collect()
}

#[test]
fn names_are_kuberays_and_unknown_ones_are_refused_as_kuberay_does() {
    assert_eq!(BatchScheduler::parse(""), Ok(None));
    for scheduler in BatchScheduler::ALL {
        assert_eq!(BatchScheduler::parse(scheduler.name()), Ok(Some(scheduler)));
    }
    let error = BatchScheduler::parse("kubernetes-was").unwrap_err();
    assert_eq!(
        error.to_string(),
        "the scheduler is not supported, name=kubernetes-was"
    );
    let config = json!({"batchScheduler": "yunikorn"});
    assert_eq!(
        BatchScheduler::from_config(config.as_object().unwrap()),
        Ok(Some(BatchScheduler::YuniKorn))
    );
    assert_eq!(
        BatchScheduler::SchedulerPlugins.scheduler_name(),
        "scheduler-plugins-scheduler"
    );
    assert_eq!(BatchScheduler::KaiScheduler.scheduler_name(), "kai-scheduler");
}

#[test]
fn volcano_sizes_a_cluster_at_its_desired_size() {
    // TestCreatePodGroupForRayCluster and ..._NumOfHosts2.
    let one = volcano::cluster_size(&cluster(json!({}), cluster_spec(1, true)).spec);
    assert_eq!(one.min_member, 3);
    let expected = [("cpu", "768m"), ("memory", "768Mi"), ("nvidia.com/gpu", "2")];
    assert_eq!(resources(&one), expected.map(|(k, v)| (k, v.to_string())).into());
    let two = volcano::cluster_size(&cluster(json!({}), cluster_spec(2, true)).spec);
    assert_eq!(two.min_member, 5);
    let expected = [("cpu", "1280m"), ("memory", "1280Mi"), ("nvidia.com/gpu", "4")];
    assert_eq!(resources(&two), expected.map(|(k, v)| (k, v.to_string())).into());
    // With autoscaling: the minimum size (1 replica).
    let mut spec = cluster_spec(1, true);
    spec["enableInTreeAutoscaling"] = json!(true);
    let min = volcano::cluster_size(&cluster(json!({}), spec).spec);
    assert_eq!(min.min_member, 2);
    assert_eq!(min.min_resources["cpu"].canonical(), "512m");
}

#[test]
fn volcano_pod_group_carries_the_owners_settings() {
    let labels = json!({
        "volcano.sh/queue-name": "q", "ray.io/priority-class-name": "high",
        "volcano.sh/network-topology-mode": "hard",
        "volcano.sh/network-topology-highest-tier-allowed": "2"
    });
    let mut owner = cluster(labels, cluster_spec(1, false));
    owner.metadata.annotations = Some(BTreeMap::from([("a".into(), "b".into())]));
    let size = volcano::cluster_size(&owner.spec);
    let group = volcano::pod_group(Parent::Cluster(&owner), &size).unwrap();
    assert_eq!(
        group,
        json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "ray-raycluster-sample-pg", "namespace": "default", "annotations": {"a": "b"}},
            "spec": {
                "minMember": 3, "minResources": {"cpu": "768m", "memory": "768Mi"},
                "queue": "q", "priorityClassName": "high",
                "networkTopology": {"mode": "hard", "highestTierAllowed": 2}
            },
            "status": {"phase": "Pending"}
        })
    );
    assert!(size.matches(&group));
    let bad = json!({"volcano.sh/network-topology-mode": "soft", "volcano.sh/network-topology-highest-tier-allowed": "x"});
    let error =
        volcano::pod_group(Parent::Cluster(&cluster(bad, cluster_spec(1, false))), &size).unwrap_err();
    assert!(
        error.starts_with("failed to convert volcano.sh/network-topology-highest-tier-allowed label to int")
    );
}

#[test]
fn volcano_sizes_a_job_with_its_submitter() {
    // TestCreatePodGroupForRayJob: 768m + the submitter's 500m; 768Mi + 200Mi; the submitter is no member.
    for (mode, cpu, memory) in [
        ("K8sJobMode", "1268m", "968Mi"),
        ("SidecarMode", "1268m", "968Mi"),
        ("HTTPMode", "768m", "768Mi"),
    ] {
        let size = volcano::job_size(&job(json!({}), mode)).unwrap();
        assert_eq!(size.min_member, 3, "{mode}");
        let expected = BTreeMap::from([("cpu", cpu.to_string()), ("memory", memory.to_string())]);
        assert_eq!(resources(&size), expected, "{mode}");
    }
    let mut selector = job(json!({}), "K8sJobMode");
    selector.spec.ray_cluster_spec = None;
    assert_eq!(
        BatchScheduler::Volcano.refuses_job(&selector).as_deref(),
        Some(
            "gang scheduling does not support RayJob default/rayjob-sample referencing an existing RayCluster"
        )
    );
}

#[test]
fn volcano_children_of_a_jobs_cluster_join_the_jobs_pod_group() {
    let labels = json!({
        "volcano.sh/queue-name": "q", "ray.io/priority-class-name": "",
        "ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "rayjob-sample"
    });
    let owner = cluster(labels, cluster_spec(1, false));
    let decoration = BatchScheduler::Volcano.decoration(Parent::Cluster(&owner), "worker-group-1");
    assert_eq!(decoration.scheduler_name, Some("volcano"));
    assert_eq!(
        decoration.labels,
        BTreeMap::from([("volcano.sh/queue-name".into(), "q".into())])
    );
    assert_eq!(
        decoration.annotations,
        BTreeMap::from([
            (
                "scheduling.k8s.io/group-name".into(),
                "ray-rayjob-sample-pg".into()
            ),
            ("volcano.sh/task-spec".into(), "worker-group-1".into()),
        ])
    );
}

#[test]
fn volcano_cleanup_follows_the_live_cluster() {
    let mut finished = job(json!({}), "K8sJobMode");
    assert_eq!(volcano::cleanup_size(&finished, None), None);
    finished.status = Some(serde_json::from_value(json!({"rayClusterName": "c"})).unwrap());
    assert_eq!(
        volcano::cleanup_size(&finished, None),
        Some(volcano::Size::default())
    );
    let live = cluster(json!({}), cluster_spec(1, false));
    assert_eq!(
        volcano::cleanup_size(&finished, Some(&live)).unwrap().min_member,
        3
    );
}

const HEAD_GROUP: &str = r#"{"minResource":{"cpu":"256m","memory":"256Mi"},"nodeSelector":{"a":"1","b":"2"},"name":"headgroup","tolerations":[{"key":"k","operator":"Equal","value":"v","effect":"NoSchedule"}],"minMember":1}"#;
const WORKER_GROUP: &str = r#"{"minResource":{"cpu":"256m","memory":"256Mi","nvidia.com/gpu":"1"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},"name":"worker-group-1","minMember":2}"#;
const SUBMITTER_GROUP: &str =
    r#"{"minResource":{"cpu":"500m","memory":"200Mi"},"name":"submittergroup","minMember":1}"#;

fn yunikorn_spec() -> Value {
    let mut spec = cluster_spec(2, true);
    spec["headGroupSpec"]["template"]["spec"]["nodeSelector"] = json!({"b": "2", "a": "1"});
    spec["headGroupSpec"]["template"]["spec"]["tolerations"] =
        json!([{"effect": "NoSchedule", "value": "v", "operator": "Equal", "key": "k"}]);
    spec["workerGroupSpecs"][0]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"values": ["a"], "operator": "In", "key": "zone"}]}
        ]}
    }});
    spec
}

#[test]
fn yunikorn_task_groups_are_gos_json_of_kuberays_structs() {
    let gang = json!({"ray.io/gang-scheduling-enabled": "true", "yunikorn.apache.org/app-id": "app", "yunikorn.apache.org/queue": ""});
    let owner = cluster(gang, yunikorn_spec());
    let decoration = BatchScheduler::YuniKorn.decoration(Parent::Cluster(&owner), "headgroup");
    assert_eq!(decoration.scheduler_name, Some("yunikorn"));
    assert_eq!(
        decoration.labels,
        BTreeMap::from([("applicationId".into(), "app".into())])
    );
    assert_eq!(
        decoration.annotations,
        BTreeMap::from([
            ("yunikorn.apache.org/task-group-name".into(), "headgroup".into()),
            (
                "yunikorn.apache.org/task-groups".into(),
                format!("[{HEAD_GROUP},{WORKER_GROUP}]")
            ),
        ])
    );
    let mut with_job = job(json!({"ray.io/gang-scheduling-enabled": ""}), "K8sJobMode");
    with_job.spec.ray_cluster_spec = Some(serde_json::from_value(yunikorn_spec()).unwrap());
    assert_eq!(
        yunikorn::task_groups(Parent::Job(&with_job)).unwrap(),
        format!("[{HEAD_GROUP},{WORKER_GROUP},{SUBMITTER_GROUP}]")
    );
    // A RayCluster with its own task groups passes them on; no gang label, no annotations.
    let own = json!({"ray.io/gang-scheduling-enabled": "true"});
    let mut annotated = cluster(own, yunikorn_spec());
    annotated.metadata.annotations = Some(BTreeMap::from([(
        "yunikorn.apache.org/task-groups".into(),
        "[]".into(),
    )]));
    let decoration = BatchScheduler::YuniKorn.decoration(Parent::Cluster(&annotated), "");
    assert_eq!(
        decoration.annotations,
        BTreeMap::from([("yunikorn.apache.org/task-groups".into(), "[]".into())])
    );
    let plain = BatchScheduler::YuniKorn
        .decoration(Parent::Cluster(&cluster(json!({}), yunikorn_spec())), "headgroup");
    assert!(plain.annotations.is_empty() && plain.labels.is_empty());
}

#[test]
fn kai_copies_the_queue_and_refuses_k8s_job_mode() {
    let owner = cluster(json!({"kai.scheduler/queue": "team-a"}), cluster_spec(1, false));
    let decoration = BatchScheduler::KaiScheduler.decoration(Parent::Cluster(&owner), "headgroup");
    assert_eq!(
        decoration.labels,
        BTreeMap::from([("kai.scheduler/queue".into(), "team-a".into())])
    );
    assert!(decoration.annotations.is_empty());
    assert!(
        BatchScheduler::KaiScheduler
            .refuses_job(&job(json!({}), "K8sJobMode"))
            .is_some()
    );
    assert_eq!(
        BatchScheduler::KaiScheduler.refuses_job(&job(json!({}), "SidecarMode")),
        None
    );
}

#[test]
fn scheduler_plugins_gangs_only_labelled_clusters() {
    let owner = cluster(
        json!({"ray.io/gang-scheduling-enabled": "true"}),
        cluster_spec(1, true),
    );
    assert_eq!(
        scheduler_plugins::pod_group(&owner).unwrap(),
        json!({
            "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "raycluster-sample", "namespace": "default"},
            "spec": {"minMember": 3, "minResources": {"cpu": "768m", "memory": "768Mi", "nvidia.com/gpu": "2"}}
        })
    );
    let decoration = BatchScheduler::SchedulerPlugins.decoration(Parent::Cluster(&owner), "headgroup");
    assert_eq!(
        decoration.labels,
        BTreeMap::from([("scheduling.x-k8s.io/pod-group".into(), "raycluster-sample".into())])
    );
    let plain = cluster(json!({}), cluster_spec(1, true));
    assert_eq!(scheduler_plugins::pod_group(&plain), None);
    assert!(
        BatchScheduler::SchedulerPlugins
            .refuses_job(&job(json!({}), "HTTPMode"))
            .is_some()
    );
}
