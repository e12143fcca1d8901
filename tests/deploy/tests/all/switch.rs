//! The switch as the migration guide tells it, through the chart: KubeRay's operator (v1.6.2, built from its
//! Go module, run as a process with the flags its chart gives it and its Lease in the release namespace)
//! runs a RayCluster and a RayJob in flight; it goes, and this chart is installed in its place with KubeRay's
//! default values file (the image changed, `watchNamespace` and `useKubernetesProxy` set as a KubeRay user sets
//! them). The operator in its Pod takes over on KubeRay's Lease, finishes the job KubeRay submitted and
//! replaces no Pod; scaled to zero, it hands back to KubeRay, which replaces nothing either.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams, PostParams},
};
use kuberay_testenv::{
    HeadMode, TestEnv,
    kuberay_switch::{cluster_uids, lease_holder, pod_uids, start_kuberay, submissions},
};
use serde_json::{Value, json};

use crate::{
    incluster::{Operator, eventually, ray_api, small_cluster},
    kuberay_values::KUBERAY_DEFAULTS,
    tools,
};

/// KubeRay's chart with `useKubernetesProxy: true`, as the values given to ours.
const THROUGH_PROXY: &str = "--use-kubernetes-proxy=true";
/// The Deployment KubeRay's default values name (`fullnameOverride`), which ours takes with them.
const DEPLOYMENT: &str = "kuberay-operator";

/// The RayJob's status once `check` holds of it.
async fn job_when(jobs: &Api<DynamicObject>, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    eventually(what, Duration::from_secs(180), || async {
        let status = jobs.get("in-flight").await.ok()?.data["status"].clone();
        check(&status).then_some(status)
    })
    .await
}

async fn ready_cluster(client: &Client, namespace: &str, name: &str) {
    let clusters = ray_api(client, namespace, "RayCluster");
    eventually(
        &format!("RayCluster {name} to be ready"),
        Duration::from_secs(120),
        || async {
            let cluster = clusters.get(name).await.ok()?;
            (cluster.data["status"]["state"] == "ready").then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn kuberay_is_replaced_by_the_chart_with_kuberays_values_and_back_without_replacing_a_pod() {
    let tools = tools();
    let env: &TestEnv = TestEnv::shared().await.unwrap();
    let client = env.client().await.unwrap();
    let release = env.namespace("chart-switch").await.unwrap();
    let work = env
        .namespace_with("chart-switch-work", Some(HeadMode::Fake))
        .await
        .unwrap();
    let holder = || lease_holder(&client, release.name());
    let log = std::env::temp_dir().join(format!("kwt-{}-kuberay-operator.log", release.name()));
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();

    // The CRDs a KubeRay install has (ours serve the same schema; the guide's step 2 applies them over KubeRay's).
    env.install_crds().await.unwrap();
    // KubeRay runs a RayCluster and a RayJob whose job is still running.
    let mut kuberay = start_kuberay(
        env.kubeconfig(),
        release.name(),
        work.name(),
        &log,
        &[THROUGH_PROXY],
    );
    let kuberays = eventually("KubeRay to lead", Duration::from_secs(60), holder).await;
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "plain"}, "spec": small_cluster(),
    }))
    .unwrap();
    ray_api(&client, work.name(), "RayCluster")
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    let jobs = ray_api(&client, work.name(), "RayJob");
    let job: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "in-flight"},
        "spec": {"submissionMode": "HTTPMode", "entrypoint": "sleep 90; echo done", "rayClusterSpec": small_cluster()},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let running = job_when(&jobs, "KubeRay to run the job", |s| s["jobStatus"] == "RUNNING").await;
    let job_id = running["jobId"].as_str().unwrap().to_string();
    let job_cluster = running["rayClusterName"].as_str().unwrap().to_string();
    ready_cluster(&client, work.name(), "plain").await;
    let pods_before = pod_uids(&client, work.name()).await;
    let clusters_before = cluster_uids(&client, work.name()).await;
    assert_eq!(pods_before.len(), 2, "{pods_before:?}");

    // The guide's steps: KubeRay's operator goes, the chart comes with KubeRay's values file.
    kuberay.kill().await.unwrap();
    let watched = format!("watchNamespace={{{}}}", work.name());
    let operator = Operator::install(
        &tools,
        env,
        release.name(),
        work.name(),
        &[
            "-f",
            KUBERAY_DEFAULTS,
            "--set",
            "image.repository=kuberay-wasm",
            "--set",
            &watched,
            "--set",
            "useKubernetesProxy=true",
        ],
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), release.name());
    assert!(
        deployments.get_opt(DEPLOYMENT).await.unwrap().is_some(),
        "KubeRay's values name the Deployment {DEPLOYMENT}"
    );
    // KubeRay's values set `nameOverride`, so the Pods carry KubeRay's `app.kubernetes.io/name`.
    eventually(
        "the Deployment's replica to be ready",
        Duration::from_secs(240),
        || async {
            let status = deployments.get(DEPLOYMENT).await.ok()?.status?;
            (status.ready_replicas == Some(1)).then_some(())
        },
    )
    .await;
    let ours = eventually(
        "ours to lead on KubeRay's Lease",
        Duration::from_secs(90),
        || async { holder().await.filter(|h| !h.is_empty() && *h != kuberays) },
    )
    .await;
    let done = job_when(&jobs, "the job to complete under ours", |s| {
        s["jobDeploymentStatus"] == "Complete"
    })
    .await;
    assert_eq!(done["jobStatus"], "SUCCEEDED", "{done}");
    assert_eq!(done["jobId"], job_id.as_str(), "{done}");
    assert_eq!(
        submissions(&client, work.name(), &job_cluster).await,
        Some(json!({&job_id: 1})),
        "the job was submitted again"
    );
    ready_cluster(&client, work.name(), "plain").await;
    assert_eq!(cluster_uids(&client, work.name()).await, clusters_before);
    assert_eq!(
        pod_uids(&client, work.name()).await,
        pods_before,
        "our take-over changed Pods"
    );

    // And back, as the guide says: our Deployment scaled to zero, KubeRay's operator started again.
    deployments
        .patch(
            DEPLOYMENT,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .unwrap();
    let _kuberay = start_kuberay(
        env.kubeconfig(),
        release.name(),
        work.name(),
        &log,
        &[THROUGH_PROXY],
    );
    eventually("KubeRay to lead again", Duration::from_secs(90), || async {
        holder()
            .await
            .filter(|h| !h.is_empty() && *h != ours && *h != kuberays)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    ready_cluster(&client, work.name(), "plain").await;
    let job_now = jobs.get("in-flight").await.unwrap().data["status"].clone();
    assert_eq!(job_now["jobDeploymentStatus"], "Complete", "{job_now}");
    assert_eq!(
        cluster_uids(&client, work.name()).await,
        clusters_before,
        "KubeRay's take-over replaced a RayCluster; its log:\n{}",
        read_log()
    );
    assert_eq!(
        pod_uids(&client, work.name()).await,
        pods_before,
        "KubeRay's take-over changed Pods; its log:\n{}",
        read_log()
    );

    operator.uninstall();
    work.delete(&client).await.unwrap();
    release.delete(&client).await.unwrap();
}
