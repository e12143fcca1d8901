use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use kuberay_testenv::{HeadMode, annotations, conformance, proxy_http::ProxyHttp};
use serde_json::json;

use crate::{
    ray_fake::{dashboard, head_pod_and_service},
    util::{env, eventually},
};

#[tokio::test]
async fn real_ray_head_runs_jobs_through_the_service_proxy_and_restarts_when_killed() {
    let env = env().await;
    assert!(
        env.layout().ray_cli().is_some(),
        "this test needs Ray in the project's virtualenv (.local/venv); run `make ray` (make test does)"
    );
    let client = env.client().await.unwrap();
    let ns = env
        .namespace_with("real-ray", Some(HeadMode::Real))
        .await
        .unwrap();
    let (head, service) = head_pod_and_service(&client, &ns, "real").await;
    let head_name = head.metadata.name.clone().unwrap();

    // The head Pod's own address answers through the pods proxy as well.
    let health = ProxyHttp::pod(client.clone(), ns.name(), &head_name, 8265)
        .get("/api/gcs_healthz")
        .await
        .unwrap();
    assert_eq!((health.status.as_u16(), health.body.trim()), (200, "success"));

    let dashboard = dashboard(&client, &ns, &service).await;
    conformance::jobs_api(&dashboard, "real").await.unwrap();
    conformance::sdk_jobs_client(dashboard.clone(), "real")
        .await
        .unwrap();

    // Killing the head's processes restarts the container (restartPolicy Always), and a new Ray head comes up.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let patch = json!({"metadata": {"annotations": {annotations::KILL: "once"}}});
    pods.patch(&head_name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    eventually(
        "the killed head to restart and become ready",
        Duration::from_secs(120),
        || async {
            let pod = pods.get(&head_name).await.ok()?;
            let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
            (status.restart_count == 1 && status.ready).then_some(())
        },
    )
    .await;
    let jobs = dashboard.get("/api/jobs/").await.unwrap().json().unwrap();
    assert_eq!(
        jobs,
        json!([]),
        "a restarted head without GCS fault tolerance starts with no jobs"
    );
}
