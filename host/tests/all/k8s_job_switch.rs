//! The switch in KubeRay's default submission mode (`K8sJobMode`) with real Ray heads: a RayJob's submitter
//! Job (the `ray job submit` script, run for real in its Pod's network) is in the middle of its job when the
//! operator that made it goes and the other comes, first KubeRay's to ours, then ours to KubeRay's. The one
//! that takes over keeps the other's submitter Job and its Pod, finishes the job under the id the other
//! submitted, submits nothing again and replaces no Pod.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::{batch::v1::Job, coordination::v1::Lease};
use kube::{Api, Client, api::DynamicObject};
use kuberay_testenv::{
    TestEnv, TestNamespace,
    kuberay_switch::{LEASE, pod_uids, ray_jobs, start_kuberay},
};
use serde_json::{Value, json};

use crate::{
    kuberay_lease::{THROUGH_PROXY, back_to_kuberay, free_port, our_sum, start_ours_with},
    leadership::holder_of,
    support::{apply, env, eventually, pods, ray_api, real_ray_namespace, scratch_dir, status_of},
};

/// A RayJob in `K8sJobMode` (KubeRay's default: no `submissionMode`) whose job sleeps `seconds`.
fn sleeping_job(name: &str, seconds: u32) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
        "spec": {
            "entrypoint": format!("python -c \"import time; time.sleep({seconds}); print('slept', {seconds})\""),
            "rayClusterSpec": kuberay_testenv::fixtures::small_cluster(),
        },
    })
}

/// What the operator taking over must leave as it was.
struct InFlight {
    name: String,
    job_id: String,
    cluster: String,
    submitter_uid: String,
    /// The submitter Job's Pods by name, with their uids.
    submitter_pods: BTreeMap<String, String>,
    /// The Ray Pods of the job's cluster by name, with their uids.
    ray_pods: BTreeMap<String, String>,
}

async fn status_when(
    jobs: &Api<DynamicObject>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, Duration::from_secs(300), || async {
        status_of(jobs, name).await.filter(|s| check(s))
    })
    .await
}

async fn submitter_pods(client: &Client, ns: &TestNamespace, name: &str) -> BTreeMap<String, String> {
    pods(client, ns, &format!("job-name={name}"))
        .await
        .into_iter()
        .filter_map(|p| Some((p.metadata.name?, p.metadata.uid?)))
        .collect()
}

async fn cluster_pods(client: &Client, ns: &TestNamespace, cluster: &str) -> BTreeMap<String, String> {
    let prefix = format!("{cluster}-");
    let mut all = pod_uids(client, ns.name()).await;
    all.retain(|name, _| name.starts_with(&prefix));
    all
}

/// The RayJob `name` once its job runs, with its submitter Pod running.
async fn in_flight(client: &Client, ns: &TestNamespace, jobs: &Api<DynamicObject>, name: &str) -> InFlight {
    let running = status_when(jobs, name, &format!("{name} to run"), |s| {
        s["jobStatus"] == "RUNNING"
    })
    .await;
    let cluster = running["rayClusterName"].as_str().expect("a cluster").to_string();
    let submitter_pods = eventually(
        &format!("the submitter Pod of {name} to run"),
        Duration::from_secs(60),
        || async {
            let running = pods(client, ns, &format!("job-name={name}"))
                .await
                .iter()
                .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
            match running {
                true => Some(submitter_pods(client, ns, name).await),
                false => None,
            }
        },
    )
    .await;
    let submitters: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let submitter = submitters.get(name).await.expect("the submitter Job");
    InFlight {
        name: name.to_string(),
        job_id: running["jobId"].as_str().expect("a jobId").to_string(),
        ray_pods: cluster_pods(client, ns, &cluster).await,
        cluster,
        submitter_uid: submitter.metadata.uid.expect("a uid"),
        submitter_pods,
    }
}

/// The RayJob of `before` completes under the operator that took over, with everything `before` kept.
async fn finishes_as_started(
    env: &TestEnv,
    client: &Client,
    ns: &TestNamespace,
    jobs: &Api<DynamicObject>,
    before: &InFlight,
    log: &str,
) {
    let name = before.name.as_str();
    let done = status_when(jobs, name, &format!("{name} to complete"), |s| {
        s["jobDeploymentStatus"] == "Complete" || s["jobDeploymentStatus"] == "Failed"
    })
    .await;
    assert_eq!(done["jobStatus"], "SUCCEEDED", "{done}\n{log}");
    assert_eq!(done["jobId"], before.job_id.as_str(), "{done}");
    assert_eq!(done["rayClusterName"], before.cluster.as_str(), "{done}");
    let submitters: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let submitter = submitters.get(name).await.expect("the submitter Job");
    assert_eq!(
        submitter.metadata.uid.as_deref(),
        Some(before.submitter_uid.as_str()),
        "{name}: the submitter Job was replaced"
    );
    assert_eq!(submitter.status.and_then(|s| s.succeeded), Some(1), "{name}");
    assert_eq!(
        submitter_pods(client, ns, name).await,
        before.submitter_pods,
        "{name}: the submitter Pod was replaced"
    );
    assert_eq!(
        cluster_pods(client, ns, &before.cluster).await,
        before.ray_pods,
        "{name}: Ray Pods were replaced"
    );
    let on_head = ray_jobs(client, ns.name(), &before.cluster)
        .await
        .expect("the head's job list");
    assert_eq!(
        on_head,
        BTreeMap::from([(before.job_id.clone(), 1)]),
        "{name}: the job was submitted again"
    );
    // The one submitter Pod followed its one job to the end.
    let (pod, _) = before.submitter_pods.first_key_value().expect("a submitter Pod");
    let output =
        std::fs::read_to_string(env.container_log(ns.name(), pod, "ray-job-submitter")).unwrap_or_default();
    assert_eq!(output.matches("submitted successfully").count(), 1, "{output}");
    assert!(output.contains("slept"), "{output}");
}

#[tokio::test]
async fn a_k8s_job_mode_rayjob_in_flight_survives_the_switch_both_ways() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let (ns, _turn) = real_ray_namespace(env, "switch-k8s-job").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    let log = scratch_dir("switch-k8s-job").join("kuberay-operator.log");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let kubeconfig = env.kubeconfig().to_path_buf();
    let jobs = ray_api(&client, &ns, "RayJob", "rayjobs");

    // KubeRay's operator submits the first job; it goes while the job runs and ours comes.
    let mut kuberay = start_kuberay(&kubeconfig, ns.name(), ns.name(), &log, &[THROUGH_PROXY]);
    let kuberays = eventually("KubeRay to lead", Duration::from_secs(60), || {
        holder_of(&leases, LEASE)
    })
    .await;
    apply(&jobs, &sleeping_job("from-kuberay", 60)).await;
    let from_kuberay = in_flight(&client, &ns, &jobs, "from-kuberay").await;
    kuberay.kill().await.expect("killing KubeRay's operator");
    let port = free_port();
    let plugins = [
        kuberay_plugin_artifacts::RAYCLUSTER,
        kuberay_plugin_artifacts::RAYJOB,
    ];
    let ours = start_ours_with(&kubeconfig, ns.name(), port, &plugins, &[THROUGH_PROXY]);
    eventually("ours to reconcile RayJobs", Duration::from_secs(120), || async {
        (our_sum(
            port,
            "controller_runtime_reconcile_total",
            r#"controller="rayjob""#,
        )
        .await
            >= 1.0)
            .then_some(())
    })
    .await;

    // Ours submits the second job while it finishes the first.
    apply(&jobs, &sleeping_job("from-ours", 75)).await;
    finishes_as_started(env, &client, &ns, &jobs, &from_kuberay, "").await;
    let from_ours = in_flight(&client, &ns, &jobs, "from-ours").await;

    // Ours goes while the second job runs; KubeRay's operator takes it over and finishes it.
    let _kuberay = back_to_kuberay(ours, &kubeconfig, ns.name(), &log, &[THROUGH_PROXY], &kuberays).await;
    finishes_as_started(env, &client, &ns, &jobs, &from_ours, &read_log()).await;
}
