//! The same flows over gRPC, with the tonic clients generated from the API's protobuf definition and the
//! caller's token as `authorization` metadata: authentication and authorization errors, templates and
//! clusters becoming ready with the operator running, job submissions, RayJobs and RayServices.

use std::{collections::HashMap, time::Duration};

use kube::{
    Api,
    api::{Patch, PatchParams},
};
use kuberay_apiserver::api::{
    self, cluster_service_client::ClusterServiceClient,
    compute_template_service_client::ComputeTemplateServiceClient,
    ray_job_service_client::RayJobServiceClient,
    ray_job_submission_service_client::RayJobSubmissionServiceClient,
    ray_serve_service_client::RayServeServiceClient,
};
use kuberay_testenv::HeadMode;
use serde_json::json;
use tonic::{
    Code, Request, Status,
    metadata::{Ascii, MetadataValue},
    service::{Interceptor, interceptor::InterceptedService},
    transport::Channel,
};

use crate::{
    flows::{FAKE_READY, HELLO, LONG, Tenant, wait_for},
    operator::Operator,
    rest_rayservices::serve_config,
    support::{Server, User, env},
};

/// Adds `authorization: Bearer <token>` to every call (nothing without a token).
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

type Authed = InterceptedService<Channel, Bearer>;

/// The five generated clients on one connection, all calling as one user.
pub struct Clients {
    pub clusters: ClusterServiceClient<Authed>,
    pub templates: ComputeTemplateServiceClient<Authed>,
    pub jobs: RayJobServiceClient<Authed>,
    pub submissions: RayJobSubmissionServiceClient<Authed>,
    pub serve: RayServeServiceClient<Authed>,
}

impl Clients {
    /// Clients of the gRPC port at `address`, with `token` (none when `None`).
    pub async fn connect(address: std::net::SocketAddr, token: Option<&str>) -> Self {
        let channel = Channel::from_shared(format!("http://{address}"))
            .unwrap()
            .connect()
            .await
            .expect("connecting to the gRPC port");
        let bearer = Bearer(token.map(|t| format!("Bearer {t}").parse().unwrap()));
        Self {
            clusters: ClusterServiceClient::with_interceptor(channel.clone(), bearer.clone()),
            templates: ComputeTemplateServiceClient::with_interceptor(channel.clone(), bearer.clone()),
            jobs: RayJobServiceClient::with_interceptor(channel.clone(), bearer.clone()),
            submissions: RayJobSubmissionServiceClient::with_interceptor(channel.clone(), bearer.clone()),
            serve: RayServeServiceClient::with_interceptor(channel, bearer),
        }
    }
}

fn template(name: &str) -> api::ComputeTemplate {
    api::ComputeTemplate {
        name: name.into(),
        cpu: 1,
        memory: 1,
        ..Default::default()
    }
}

fn cluster_spec(template: &str, workers: i32) -> api::ClusterSpec {
    api::ClusterSpec {
        head_group_spec: Some(api::HeadGroupSpec {
            compute_template: template.into(),
            ray_start_params: HashMap::from([("dashboard-host".into(), "0.0.0.0".into())]),
            ..Default::default()
        }),
        worker_group_spec: (0..workers.min(1))
            .map(|_| api::WorkerGroupSpec {
                group_name: "small".into(),
                compute_template: template.into(),
                replicas: workers,
                max_replicas: workers,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn cluster(name: &str, template: &str, workers: i32) -> api::Cluster {
    api::Cluster {
        name: name.into(),
        user: "ray-user".into(),
        version: "2.9.0".into(),
        cluster_spec: Some(cluster_spec(template, workers)),
        ..Default::default()
    }
}

fn list_clusters(ns: &str, limit: i64, token: &str) -> api::ListClustersRequest {
    api::ListClustersRequest {
        namespace: ns.into(),
        limit,
        r#continue: token.into(),
    }
}

#[tokio::test]
async fn grpc_calls_need_a_token_and_act_with_the_callers_rights() {
    let env = env().await;
    let tenant = Tenant::new(env, "grpc-auth", HeadMode::Fake).await;
    let server = Server::start(env, &[]).await;
    let ns = tenant.name().to_string();

    let mut anonymous = Clients::connect(server.grpc, None).await;
    let refused = anonymous
        .clusters
        .list_cluster(list_clusters(&ns, 0, ""))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    assert!(
        refused.message().contains("Bearer"),
        "says what to send: {refused:?}"
    );
    let mut forged = Clients::connect(server.grpc, Some("not-a-token")).await;
    let refused = forged
        .templates
        .list_compute_templates(api::ListComputeTemplatesRequest {
            namespace: ns.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");

    // alice is a user of the API server but has no rights in the namespace: the API server's own refusal
    // comes back, naming her, the verb and the resource.
    let alice = User::named(env, "alice");
    let mut as_alice = Clients::connect(server.grpc, Some(&alice.token)).await;
    let denied = as_alice
        .clusters
        .list_cluster(list_clusters(&ns, 0, ""))
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    for part in [
        "User \"alice\"",
        "cannot list resource \"rayclusters\"",
        &format!("in the namespace \"{ns}\""),
    ] {
        assert!(
            denied.message().contains(part),
            "{part:?} not in {:?}",
            denied.message()
        );
    }
    let denied = as_alice
        .submissions
        .list_job_details(api::ListJobDetailsRequest {
            namespace: ns.clone(),
            clustername: "any".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");

    // The namespace's user may list there, and nowhere else.
    let mut as_user = Clients::connect(server.grpc, Some(&tenant.user.token)).await;
    let listed = as_user
        .clusters
        .list_cluster(list_clusters(&ns, 0, ""))
        .await
        .unwrap()
        .into_inner();
    assert!(listed.clusters.is_empty());
    let elsewhere = as_user
        .clusters
        .list_cluster(list_clusters("default", 0, ""))
        .await
        .unwrap_err();
    assert_eq!(elsewhere.code(), Code::PermissionDenied, "{elsewhere:?}");

    server.stop().await.unwrap();
    tenant.remove(env).await;
}

#[tokio::test]
async fn templates_clusters_and_job_submissions_over_grpc() {
    let env = env().await;
    let tenant = Tenant::new(env, "grpc-clusters", HeadMode::Fake).await;
    let operator = Operator::start(env, &tenant.ns).await;
    let server = Server::start(env, &[]).await;
    let mut c = Clients::connect(server.grpc, Some(&tenant.user.token)).await;
    let ns = tenant.name().to_string();

    let created = c
        .templates
        .create_compute_template(api::CreateComputeTemplateRequest {
            compute_template: Some(template("small")),
            namespace: ns.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.namespace, ns);
    let read = c
        .templates
        .get_compute_template(api::GetComputeTemplateRequest {
            name: "small".into(),
            namespace: ns.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((read.cpu, read.memory), (1, 1));

    for (name, workers) in [("one", 1), ("two", 0)] {
        let created = c
            .clusters
            .create_cluster(api::CreateClusterRequest {
                cluster: Some(cluster(name, "small", workers)),
                namespace: ns.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(created.name, name);
    }
    for name in ["one", "two"] {
        wait_ready(&c.clusters, &ns, name).await;
    }
    let first = c
        .clusters
        .list_cluster(list_clusters(&ns, 1, ""))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.clusters.len(), 1);
    assert!(!first.r#continue.is_empty(), "{first:?}");
    let second = c
        .clusters
        .list_cluster(list_clusters(&ns, 1, &first.r#continue))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.clusters.len(), 1);
    assert!(second.r#continue.is_empty(), "{second:?}");
    let mut names = vec![first.clusters[0].name.clone(), second.clusters[0].name.clone()];
    names.sort();
    assert_eq!(names, ["one", "two"]);

    // Job submissions to cluster "one".
    let at = |id: &str| api::GetJobDetailsRequest {
        namespace: ns.clone(),
        clustername: "one".into(),
        submissionid: id.into(),
    };
    let submitted = c
        .submissions
        .submit_ray_job(api::SubmitRayJobRequest {
            namespace: ns.clone(),
            clustername: "one".into(),
            jobsubmission: Some(api::RayJobSubmission {
                entrypoint: HELLO.into(),
                runtime_env: "env_vars:\n  GREETING: grpc\n".into(),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    let id = submitted.submission_id;
    assert!(!id.is_empty());
    let details = wait_status(&c.submissions, at(&id), "SUCCEEDED").await;
    assert_eq!(details.entrypoint, HELLO);
    assert!(
        details.runtime_env["env_vars"].contains("GREETING"),
        "{details:?}"
    );
    let log = c
        .submissions
        .get_job_log(api::GetJobLogRequest {
            namespace: ns.clone(),
            clustername: "one".into(),
            submissionid: id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(log.log.contains("hello from ray"), "{log:?}");
    let listed = c
        .submissions
        .list_job_details(api::ListJobDetailsRequest {
            namespace: ns.clone(),
            clustername: "one".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        listed.submissions.iter().any(|s| s.submission_id == id),
        "{listed:?}"
    );

    let long = c
        .submissions
        .submit_ray_job(api::SubmitRayJobRequest {
            namespace: ns.clone(),
            clustername: "one".into(),
            jobsubmission: Some(api::RayJobSubmission {
                entrypoint: LONG.into(),
                submission_id: "grpc-long".into(),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(long.submission_id, "grpc-long");
    wait_status(&c.submissions, at("grpc-long"), "RUNNING").await;
    c.submissions
        .stop_ray_job(api::StopRayJobSubmissionRequest {
            namespace: ns.clone(),
            clustername: "one".into(),
            submissionid: "grpc-long".into(),
        })
        .await
        .unwrap();
    wait_status(&c.submissions, at("grpc-long"), "STOPPED").await;
    c.submissions
        .delete_ray_job(api::DeleteRayJobSubmissionRequest {
            namespace: ns.clone(),
            clustername: "one".into(),
            submissionid: id.clone(),
        })
        .await
        .unwrap();
    for gone in [id.as_str(), "no-such-job"] {
        let missing = c.submissions.get_job_details(at(gone)).await.unwrap_err();
        assert_eq!(missing.code(), Code::NotFound, "{gone}: {missing:?}");
    }

    c.clusters
        .delete_cluster(api::DeleteClusterRequest {
            name: "one".into(),
            namespace: ns.clone(),
        })
        .await
        .unwrap();
    let missing = c
        .clusters
        .get_cluster(api::GetClusterRequest {
            name: "one".into(),
            namespace: ns.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");

    server.stop().await.unwrap();
    tenant.remove(env).await;
    operator.stop().await;
}

/// Polls a cluster until its `clusterState` is `ready`.
async fn wait_ready(clusters: &ClusterServiceClient<Authed>, ns: &str, name: &str) -> api::Cluster {
    wait_for(&format!("cluster {name} to be ready"), FAKE_READY, || {
        let mut clusters = clusters.clone();
        let request = api::GetClusterRequest {
            name: name.into(),
            namespace: ns.into(),
        };
        async move {
            let cluster = clusters
                .get_cluster(request)
                .await
                .map_err(|s| format!("{s:?}"))?
                .into_inner();
            if cluster.cluster_state == "ready" {
                Ok(cluster)
            } else {
                Err(format!("clusterState {:?}", cluster.cluster_state))
            }
        }
    })
    .await
}

/// Polls a submission until its status is `want`.
async fn wait_status(
    submissions: &RayJobSubmissionServiceClient<Authed>,
    request: api::GetJobDetailsRequest,
    want: &str,
) -> api::JobSubmissionInfo {
    wait_for(
        &format!("submission {} to be {want}", request.submissionid),
        Duration::from_secs(60),
        || {
            let (mut submissions, request) = (submissions.clone(), request.clone());
            async move {
                let details = submissions
                    .get_job_details(request)
                    .await
                    .map_err(|s| format!("{s:?}"))?
                    .into_inner();
                if details.status == want {
                    Ok(details)
                } else {
                    Err(format!("{details:?}"))
                }
            }
        },
    )
    .await
}

#[tokio::test]
async fn rayjobs_and_rayservices_over_grpc() {
    let env = env().await;
    let tenant = Tenant::new(env, "grpc-jobs", HeadMode::Fake).await;
    let server = Server::start(env, &[]).await;
    let mut c = Clients::connect(server.grpc, Some(&tenant.user.token)).await;
    let ns = tenant.name().to_string();
    let admin = env.client().await.unwrap();
    c.templates
        .create_compute_template(api::CreateComputeTemplateRequest {
            compute_template: Some(template("small")),
            namespace: ns.clone(),
        })
        .await
        .unwrap();

    let job = api::RayJob {
        name: "grpc-job".into(),
        user: "ray-user".into(),
        version: "2.9.0".into(),
        entrypoint: "python -c \"print('hello over grpc')\"".into(),
        cluster_spec: Some(cluster_spec("small", 0)),
        ..Default::default()
    };
    let created = c
        .jobs
        .create_ray_job(api::CreateRayJobRequest {
            job: Some(job),
            namespace: ns.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.name, "grpc-job");
    // The v1 message has no submission mode (see rest_rayjobs): run it in HTTPMode, before any operator
    // sees it.
    let rayjobs: Api<kuberay_crds::RayJob> = Api::namespaced(admin.clone(), &ns);
    rayjobs
        .patch(
            "grpc-job",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"submissionMode": "HTTPMode"}})),
        )
        .await
        .unwrap();
    let operator = Operator::start(env, &tenant.ns).await;
    let request = api::GetRayJobRequest {
        name: "grpc-job".into(),
        namespace: ns.clone(),
    };
    let done = wait_for("RayJob grpc-job to complete", Duration::from_secs(120), || {
        let (mut jobs, request) = (c.jobs.clone(), request.clone());
        async move {
            let job = jobs
                .get_ray_job(request)
                .await
                .map_err(|s| format!("{s:?}"))?
                .into_inner();
            assert_ne!(job.job_deployment_status, "Failed", "{job:?}");
            if job.job_deployment_status == "Complete" {
                Ok(job)
            } else {
                Err(format!("{job:?}"))
            }
        }
    })
    .await;
    assert_eq!(done.job_status, "SUCCEEDED", "{done:?}");
    assert!(!done.ray_cluster_name.is_empty(), "{done:?}");
    let listed = c
        .jobs
        .list_ray_jobs(api::ListRayJobsRequest {
            namespace: ns.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.jobs.len(), 1, "{listed:?}");
    c.jobs
        .delete_ray_job(api::DeleteRayJobRequest {
            name: "grpc-job".into(),
            namespace: ns.clone(),
        })
        .await
        .unwrap();
    wait_for("RayJob grpc-job to be gone", Duration::from_secs(60), || async {
        match rayjobs.get_opt("grpc-job").await {
            Ok(None) => Ok(()),
            other => Err(format!(
                "{:?}",
                other.map(|j| j.map(|j| j.metadata.deletion_timestamp))
            )),
        }
    })
    .await;

    // RayServices: create, get, list, update, delete.
    let service = |replicas| api::RayService {
        name: "serve".into(),
        user: "ray-user".into(),
        version: "2.9.0".into(),
        serve_config_v2: serve_config(replicas),
        cluster_spec: Some(cluster_spec("small", 1)),
        ..Default::default()
    };
    let created = c
        .serve
        .create_ray_service(api::CreateRayServiceRequest {
            service: Some(service(1)),
            namespace: ns.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.serve_config_v2, serve_config(1));
    let updated = c
        .serve
        .update_ray_service(api::UpdateRayServiceRequest {
            service: Some(service(2)),
            namespace: ns.clone(),
            name: "serve".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(updated.serve_config_v2, serve_config(2));
    let read = c
        .serve
        .get_ray_service(api::GetRayServiceRequest {
            name: "serve".into(),
            namespace: ns.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(read.serve_config_v2, serve_config(2));
    let stored: Api<kuberay_crds::RayService> = Api::namespaced(admin, &ns);
    assert_eq!(
        stored.get("serve").await.unwrap().spec.serve_config_v2,
        Some(serve_config(2))
    );
    let listed = c
        .serve
        .list_ray_services(api::ListRayServicesRequest {
            namespace: ns.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.services.len(), 1, "{listed:?}");
    c.serve
        .delete_ray_service(api::DeleteRayServiceRequest {
            name: "serve".into(),
            namespace: ns.clone(),
        })
        .await
        .unwrap();
    let missing = c
        .serve
        .get_ray_service(api::GetRayServiceRequest {
            name: "serve".into(),
            namespace: ns.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");

    server.stop().await.unwrap();
    tenant.remove(env).await;
    operator.stop().await;
}
