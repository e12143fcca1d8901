//! `batchScheduler`: what KubeRay v1.7's RayJob controller writes for `ray-job.sample.yaml` under each
//! batch scheduler, on the judged FakeHost (the operator's admission rules and the built-in policy).

mod common;

use common::*;
use kuberay_plugin_sdk::{
    Kind,
    serde_json::{Value, json},
    testing::FakeHost,
};

fn volcano() -> Kind {
    Kind::new("scheduling.volcano.sh", "v1beta1", "PodGroup")
}

fn job_host(scheduler: &str, mode: &str, labels: Value) -> FakeHost {
    let mut job = sample_in(mode);
    job["metadata"]["labels"] = labels;
    host(job).with_config(json!({"batchScheduler": scheduler}))
}

fn the_cluster(host: &FakeHost) -> Value {
    get(host, &ray_cluster_kind(), &cluster_name(host)).unwrap_or_else(|| panic!("no cluster"))
}

fn submitter_template(host: &FakeHost) -> Value {
    let job = get(host, &job_kind(), "rayjob-sample").unwrap_or_else(|| panic!("no submitter Job"));
    job["spec"]["template"].clone()
}

#[test]
fn volcano_gangs_the_job_with_its_submitter_and_shrinks_it_when_suspended() {
    let labels = json!({"volcano.sh/queue-name": "q", "ray.io/priority-class-name": "p"});
    let mut job = sample_in("K8sJobMode");
    job["metadata"]["labels"] = labels;
    // Suspension needs it (KubeRay's validation).
    job["spec"]["shutdownAfterJobFinishes"] = json!(true);
    let host = host(job).with_config(json!({"batchScheduler": "volcano"}));
    run_to_running(&host);
    let group = get(&host, &volcano(), "ray-rayjob-sample-pg").unwrap();
    assert_eq!(group["metadata"]["ownerReferences"][0]["kind"], "RayJob");
    assert_eq!(group["metadata"]["ownerReferences"][0]["uid"], "rayjob-uid");
    // Head (1 CPU, 2Gi) + 1 worker (200m) + the submitter (500m, 200Mi); the submitter is no member.
    assert_eq!(
        group["spec"],
        json!({
            "minMember": 2,
            "minResources": {"cpu": "1700m", "memory": "2248Mi"},
            "queue": "q",
            "priorityClassName": "p"
        })
    );
    let cluster = the_cluster(&host);
    assert_eq!(
        cluster["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
        "ray-rayjob-sample-pg"
    );
    assert_eq!(cluster["metadata"]["annotations"]["volcano.sh/task-spec"], "");
    let template = submitter_template(&host);
    assert_eq!(template["spec"]["schedulerName"], "volcano");
    assert_eq!(template["metadata"]["labels"]["volcano.sh/queue-name"], "q");
    assert_eq!(template["metadata"]["labels"]["ray.io/priority-class-name"], "p");
    assert_eq!(
        template["metadata"]["annotations"],
        json!({"scheduling.k8s.io/group-name": "ray-rayjob-sample-pg", "volcano.sh/task-spec": "submittergroup"})
    );

    let mut job = host.primary();
    job["spec"]["suspend"] = json!(true);
    host.set_primary(job);
    for _ in 0..4 {
        step(&host);
    }
    assert_eq!(deployment(&host), "Suspended");
    let group = get(&host, &volcano(), "ray-rayjob-sample-pg").unwrap();
    assert_eq!(group["spec"]["minMember"], 0);
    // KubeRay's update leaves `{}`; an apply cannot drop what the create wrote, so both are zero.
    assert_eq!(group["spec"]["minResources"], json!({"cpu": "0", "memory": "0"}));
    let cleaned = event(&host, "BatchSchedulerCleanedUp").unwrap();
    assert_eq!(
        cleaned.note,
        "Cleaned up batch scheduler resources for RayJob default/rayjob-sample"
    );
}

#[test]
fn volcano_refuses_a_job_on_an_existing_cluster() {
    let mut job = sample_in("K8sJobMode");
    job["spec"].as_object_mut().unwrap().remove("rayClusterSpec");
    job["spec"]["clusterSelector"] = json!({"ray.io/cluster": "elsewhere"});
    let host = host(job).with_config(json!({"batchScheduler": "volcano"}));
    step(&host);
    let error = reconcile(&host).unwrap_err().to_string();
    assert!(
        error.contains(
            "gang scheduling does not support RayJob default/rayjob-sample referencing an existing RayCluster"
        ),
        "{error}"
    );
    assert_eq!(deployment(&host), "Initializing");
}

#[test]
fn yunikorn_labels_the_cluster_and_the_submitter_of_a_gang() {
    let labels = json!({
        "yunikorn.apache.org/app-id": "job-1", "yunikorn.apache.org/queue": "root.ray",
        "ray.io/gang-scheduling-enabled": "true"
    });
    let host = job_host("yunikorn", "K8sJobMode", labels);
    run_to_running(&host);
    let groups = concat!(
        r#"[{"minResource":{"cpu":"1","memory":"2Gi"},"name":"headgroup","minMember":1},"#,
        r#"{"minResource":{"cpu":"200m"},"name":"small-group","minMember":1},"#,
        r#"{"minResource":{"cpu":"500m","memory":"200Mi"},"name":"submittergroup","minMember":1}]"#
    );
    let cluster = the_cluster(&host);
    assert_eq!(cluster["metadata"]["labels"]["applicationId"], "job-1");
    assert_eq!(cluster["metadata"]["labels"]["queue"], "root.ray");
    assert_eq!(
        cluster["metadata"]["annotations"]["yunikorn.apache.org/task-groups"],
        groups
    );
    assert_eq!(
        cluster["metadata"]["annotations"].get("yunikorn.apache.org/task-group-name"),
        None
    );
    let template = submitter_template(&host);
    assert_eq!(template["spec"]["schedulerName"], "yunikorn");
    assert_eq!(template["metadata"]["labels"]["applicationId"], "job-1");
    assert_eq!(
        template["metadata"]["annotations"],
        json!({"yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": "submittergroup"})
    );
    assert!(host.objects(&volcano()).is_empty());
}

#[test]
fn kai_scheduler_refuses_k8s_job_mode_and_labels_a_sidecar_jobs_cluster_through_its_labels() {
    let host = job_host(
        "kai-scheduler",
        "K8sJobMode",
        json!({"kai.scheduler/queue": "team"}),
    );
    step(&host);
    let error = reconcile(&host).unwrap_err().to_string();
    assert!(
        error.contains("KAI-Scheduler does not support RayJob with K8sJobMode"),
        "{error}"
    );
    assert!(host.objects(&ray_cluster_kind()).is_empty());

    let host = job_host(
        "kai-scheduler",
        "SidecarMode",
        json!({"kai.scheduler/queue": "team"}),
    );
    step(&host);
    step(&host);
    let cluster = the_cluster(&host);
    assert_eq!(cluster["metadata"]["labels"]["kai.scheduler/queue"], "team");
}

#[test]
fn scheduler_plugins_refuses_every_rayjob() {
    let host = job_host(
        "scheduler-plugins",
        "HTTPMode",
        json!({"ray.io/gang-scheduling-enabled": "true"}),
    );
    step(&host);
    let error = reconcile(&host).unwrap_err().to_string();
    assert!(
        error.contains("currently only RayCluster is supported, got *v1.RayJob"),
        "{error}"
    );
    assert!(host.objects(&ray_cluster_kind()).is_empty());
}
