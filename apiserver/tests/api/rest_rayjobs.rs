//! A RayJob over REST, run by the operator on a new cluster with a real Ray head.
//!
//! KubeRay's v1 `RayJob` message has no submission mode, so a RayJob created through it gets the CRD's
//! default, `K8sJobMode`: a Kubernetes Job runs `ray job submit`. The test environment's simulated kubelet
//! does not run a submitter's commands (its Pods just complete), so such a job would never reach Ray here.
//! The user therefore switches the RayJob to `HTTPMode` (the operator submits it) through this server's
//! `ray.io/v1` pass-through before the operator sees it, which is also how a user of this server sets any
//! field the v1 messages lack.

use std::time::Duration;

use kube::Api;
use kuberay_testenv::HeadMode;
use serde_json::{Value, json};

use crate::{
    flows::{Tenant, merge_patch, wait_for},
    operator::Operator,
    support::{Rest, Server, env, expect, template},
};

/// A job printing a line, on a new cluster of one head of template `template`.
pub fn hello_job(name: &str, template: &str) -> Value {
    json!({
        "name": name, "user": "ray-user", "version": "2.9.0",
        "entrypoint": "python -c \"print('hello from ray')\"",
        "metadata": {"purpose": "e2e"},
        "clusterSpec": {
            "headGroupSpec": {"computeTemplate": template, "rayStartParams": {"dashboard-host": "0.0.0.0"}},
        },
    })
}

/// Polls `GET <base>/jobs/<name>` until `jobDeploymentStatus` is `Complete` (failing at once on `Failed`).
pub async fn completed_job(rest: &Rest, base: &str, name: &str, timeout: Duration) -> Value {
    wait_for(&format!("RayJob {name} to complete"), timeout, || async {
        let (code, job) = rest.get(&format!("{base}/jobs/{name}")).await;
        match job["jobDeploymentStatus"].as_str() {
            Some("Complete") => Ok(job),
            Some("Failed") => panic!("RayJob {name} failed: {job}"),
            _ => Err(format!("{code} {job}")),
        }
    })
    .await
}

#[tokio::test]
async fn a_rayjob_created_over_rest_completes_on_a_real_ray_head() {
    let env = env().await;
    let tenant = Tenant::new(env, "rest-rayjob", HeadMode::Real).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&tenant.user.token));
    let base = tenant.base();
    let admin = env.client().await.unwrap();

    expect(
        rest.post(&format!("{base}/compute_templates"), &template("small", 1))
            .await,
        200,
    );
    let created = expect(
        rest.post(&format!("{base}/jobs"), &hello_job("hello", "small"))
            .await,
        200,
    );
    assert_eq!(
        created["entrypoint"], "python -c \"print('hello from ray')\"",
        "{created}"
    );
    assert_eq!(
        created["clusterSpec"]["headGroupSpec"]["computeTemplate"], "small",
        "{created}"
    );
    let raw = format!("/apis/ray.io/v1/namespaces/{}/rayjobs/hello", tenant.name());
    let stored = expect(rest.get(&raw).await, 200);
    assert_eq!(
        stored["spec"]["submissionMode"], "K8sJobMode",
        "the CRD's default: {stored}"
    );
    assert_eq!(stored["metadata"]["annotations"]["purpose"], "e2e", "{stored}");
    expect(
        merge_patch(&rest, &raw, &json!({"spec": {"submissionMode": "HTTPMode"}})).await,
        200,
    );

    let operator = Operator::start(env, &tenant.ns).await;
    let done = completed_job(&rest, &base, "hello", Duration::from_secs(240)).await;
    assert_eq!(done["jobStatus"], "SUCCEEDED", "{done}");
    let cluster = done["rayClusterName"].as_str().unwrap_or_default().to_string();
    let job_id = done["jobId"].as_str().unwrap_or_default().to_string();
    assert!(cluster.starts_with("hello-"), "the RayJob's own cluster: {done}");
    assert!(!job_id.is_empty(), "{done}");

    // What the job printed, from its cluster's head through the job-submission API.
    let log = expect(
        rest.get(&format!("{base}/jobsubmissions/{cluster}/log/{job_id}"))
            .await,
        200,
    );
    assert!(
        log["log"].as_str().unwrap_or_default().contains("hello from ray"),
        "{log}"
    );

    let listed = expect(rest.get(&format!("{base}/jobs")).await, 200);
    let jobs: Vec<&Value> = listed["jobs"].as_array().into_iter().flatten().collect();
    assert_eq!(jobs.len(), 1, "{listed}");
    assert_eq!(jobs[0]["jobStatus"], "SUCCEEDED", "{listed}");

    // Deleting the RayJob takes its cluster with it (the operator removes its finalizer).
    expect(rest.delete(&format!("{base}/jobs/hello")).await, 200);
    let jobs: Api<kuberay_crds::RayJob> = Api::namespaced(admin.clone(), tenant.name());
    let clusters: Api<kuberay_crds::RayCluster> = Api::namespaced(admin, tenant.name());
    wait_for(
        "the RayJob and its cluster to be gone",
        Duration::from_secs(90),
        || async {
            let job = jobs.get_opt("hello").await.map_err(|e| e.to_string())?;
            let cluster = clusters.get_opt(&cluster).await.map_err(|e| e.to_string())?;
            if job.is_none() && cluster.is_none() {
                Ok(())
            } else {
                Err(format!(
                    "RayJob exists: {}, RayCluster exists: {}",
                    job.is_some(),
                    cluster.is_some()
                ))
            }
        },
    )
    .await;
    expect(rest.get(&format!("{base}/jobs/hello")).await, 404);

    server.stop().await.unwrap();
    tenant.remove(env).await;
    operator.stop().await;
}
