//! Jobs: created, read back as sent (entrypointNumGpus included), paged, on existing clusters, deleted.

use kube::api::{Api as KubeApi, ListParams};
use kuberay_apiserver::api::{self, ray_job_service_server::RayJobService};
use kuberay_crds::RayJob;
use tonic::Code;

use crate::support::{Api, assert_refused, cluster_spec, create_template, env, map, template};

fn job(name: &str) -> api::RayJob {
    api::RayJob {
        name: name.into(),
        user: "alice".into(),
        version: "2.9.0".into(),
        entrypoint: "python /home/ray/code/main.py".into(),
        metadata: map(&[("example.com/run", "7")]),
        runtime_env: "env_vars:\n  counter_name: test\n".into(),
        job_id: format!("{name}-id"),
        shutdown_after_job_finishes: true,
        cluster_spec: Some(cluster_spec("head", "worker")),
        ttl_seconds_after_finished: 30,
        job_submitter: Some(api::RayJobSubmitter {
            image: "rayproject/ray:2.9.0".into(),
            cpu: "500m".into(),
            memory: "512Mi".into(),
        }),
        entrypoint_num_cpus: 1.0,
        entrypoint_num_gpus: 0.5,
        entrypoint_resources: r#"{"custom": 1}"#.into(),
        active_deadline_seconds: 600,
        ..Default::default()
    }
}

async fn create(api: &Api, ns: &str, job: api::RayJob) -> Result<api::RayJob, tonic::Status> {
    let request = api::CreateRayJobRequest {
        job: Some(job),
        namespace: ns.into(),
    };
    api.jobs
        .create_ray_job(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

async fn get(api: &Api, ns: &str, name: &str) -> Result<api::RayJob, tonic::Status> {
    let request = api::GetRayJobRequest {
        name: name.into(),
        namespace: ns.into(),
    };
    api.jobs
        .get_ray_job(api.call(request))
        .await
        .map(tonic::Response::into_inner)
}

/// What reading back a job gives: the job sent, with the server's namespace and creation time.
fn as_read(sent: api::RayJob, ns: &str, read: &api::RayJob) -> api::RayJob {
    api::RayJob {
        namespace: ns.into(),
        created_at: read.created_at,
        ..sent
    }
}

#[tokio::test]
async fn jobs_round_trip() {
    let env = env().await;
    let ns = env.namespace("api-jobs").await.unwrap();
    let ns = ns.name();
    let api = Api::new(env.client().await.unwrap());
    create_template(&api, ns, template("head", 1, 0)).await;
    create_template(&api, ns, template("worker", 2, 0)).await;

    let created = create(&api, ns, job("train")).await.unwrap();
    assert_eq!(created, as_read(job("train"), ns, &created));
    let read = get(&api, ns, "train").await.unwrap();
    assert_eq!(read, as_read(job("train"), ns, &read));

    let raw: KubeApi<RayJob> = KubeApi::namespaced(api.kube.clone(), ns);
    let stored = raw.get("train").await.unwrap();
    assert_eq!(stored.spec.entrypoint_num_gpus, Some(0.5));
    assert_eq!(
        stored.metadata.annotations.unwrap_or_default()["example.com/run"],
        "7"
    );
    assert_eq!(
        stored.metadata.labels.unwrap_or_default()["ray.io/cluster-name"],
        "train"
    );

    // A job on an existing cluster has no cluster spec of its own.
    let pick = api::RayJob {
        cluster_selector: map(&[("ray.io/cluster", "demo")]),
        cluster_spec: None,
        version: String::new(),
        ..job("pick")
    };
    let created = create(&api, ns, pick.clone()).await.unwrap();
    assert_eq!(created, as_read(pick, ns, &created));

    let request = api::ListRayJobsRequest {
        namespace: ns.into(),
        r#continue: String::new(),
        limit: 1,
    };
    let first = api
        .jobs
        .list_ray_jobs(api.call(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.jobs.len(), 1);
    let request = api::ListRayJobsRequest {
        namespace: ns.into(),
        r#continue: first.r#continue,
        limit: 1,
    };
    let second = api
        .jobs
        .list_ray_jobs(api.call(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.jobs.len(), 1);
    assert_ne!(first.jobs[0].name, second.jobs[0].name);
    let request = api::ListAllRayJobsRequest {
        r#continue: String::new(),
        limit: 0,
    };
    let all = api
        .jobs
        .list_all_ray_jobs(api.call(request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.jobs.iter().filter(|j| j.namespace == ns).count(), 2);
    assert_eq!(all.r#continue, "");

    for name in ["train", "pick"] {
        let request = api::DeleteRayJobRequest {
            name: name.into(),
            namespace: ns.into(),
        };
        api.jobs.delete_ray_job(api.call(request.clone())).await.unwrap();
        assert_refused(
            api.jobs.delete_ray_job(api.call(request)).await,
            Code::NotFound,
            name,
        );
    }
    assert_refused(
        get(&api, ns, "train").await,
        Code::NotFound,
        "RayJob \"train\" not found",
    );
}

#[tokio::test]
async fn a_job_with_a_missing_template_is_not_created() {
    let env = env().await;
    let ns = env.namespace("api-jobs-missing").await.unwrap();
    let ns = ns.name();
    let api = Api::new(env.client().await.unwrap());
    create_template(&api, ns, template("head", 1, 0)).await;
    assert_refused(
        create(&api, ns, job("train")).await,
        Code::FailedPrecondition,
        "\"worker\"",
    );
    let raw: KubeApi<RayJob> = KubeApi::namespaced(api.kube.clone(), ns);
    assert!(raw.list(&ListParams::default()).await.unwrap().items.is_empty());
    let no_cluster = api::RayJob {
        cluster_spec: None,
        ..job("bare")
    };
    assert_refused(
        create(&api, ns, no_cluster).await,
        Code::InvalidArgument,
        "job.clusterSpec",
    );
}
