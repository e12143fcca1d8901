use std::{net::Ipv4Addr, time::Duration};

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams},
};
use kuberay_testenv::{TestNamespace, annotations};
use serde_json::json;

use crate::util::{create, env, eventually, is_ready, phase, ready_pod};

fn pod(name: &str, annotations: serde_json::Value, restart_policy: &str) -> serde_json::Value {
    json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "restartPolicy": restart_policy,
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [{"name": "main", "image": "busybox"}, {"name": "sidecar", "image": "busybox"}],
        },
    })
}

async fn annotate(client: &Client, ns: &TestNamespace, name: &str, key: &str, value: Option<&str>) {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let patch = json!({"metadata": {"annotations": {key: value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

async fn get(client: &Client, ns: &TestNamespace, name: &str) -> Pod {
    Api::<Pod>::namespaced(client.clone(), ns.name())
        .get(name)
        .await
        .unwrap()
}

#[tokio::test]
async fn pods_are_bound_started_and_reported_like_a_kubelet_would() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("kubelet").await.unwrap();
    let _: Pod = create(&client, &ns, pod("plain", json!({}), "Always")).await;
    let pod = ready_pod(&client, &ns, "plain").await;
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.node_name.as_deref(), Some(env.info().node_name.as_str()));
    let status = pod.status.as_ref().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(status.host_ip.as_deref(), Some(env.info().host_ip.as_str()));
    let ip: Ipv4Addr = status.pod_ip.as_deref().unwrap().parse().unwrap();
    assert!(!ip.is_loopback() && ip.to_string() != env.info().host_ip);
    let types: Vec<&str> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    for wanted in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert!(types.contains(&wanted), "missing condition {wanted}: {types:?}");
    }
    let init = &status.init_container_statuses.as_ref().unwrap()[0];
    assert_eq!(
        init.state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .exit_code,
        0
    );
    let containers = status.container_statuses.as_ref().unwrap();
    assert_eq!(containers.len(), 2);
    for c in containers {
        assert!(c.ready && c.state.as_ref().unwrap().running.is_some(), "{c:?}");
        assert_eq!(c.restart_count, 0);
    }
}

#[tokio::test]
async fn pods_for_other_schedulers_stay_pending() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("scheduler").await.unwrap();
    let mut manifest = pod("volcano", json!({}), "Always");
    manifest["spec"]["schedulerName"] = json!("volcano");
    let _: Pod = create(&client, &ns, manifest).await;
    let _: Pod = create(&client, &ns, pod("default", json!({}), "Always")).await;
    ready_pod(&client, &ns, "default").await;
    let pending = get(&client, &ns, "volcano").await;
    assert_eq!(phase(&pending), "Pending");
    assert!(pending.spec.unwrap().node_name.is_none());
}

#[tokio::test]
async fn job_pods_run_to_completion_and_the_job_controller_sees_it() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("jobs").await.unwrap();
    let job = |name: &str, annotations: serde_json::Value| {
        json!({
            "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            }},
        })
    };
    let _: Job = create(&client, &ns, job("succeeds", json!({}))).await;
    let _: Job = create(&client, &ns, job("fails", json!({annotations::EXIT_CODE: "2"}))).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let condition = |name: &'static str, wanted: &'static str| {
        let jobs = jobs.clone();
        async move {
            eventually(
                &format!("job {name} to be {wanted}"),
                Duration::from_secs(60),
                || async {
                    let job = jobs.get(name).await.ok()?;
                    let conditions = job.status?.conditions?;
                    conditions
                        .iter()
                        .any(|c| c.type_ == wanted && c.status == "True")
                        .then_some(())
                },
            )
            .await
        }
    };
    condition("succeeds", "Complete").await;
    condition("fails", "Failed").await;
    let pods: Api<Pod> = Api::namespaced(client, ns.name());
    let failed = pods
        .list(&kube::api::ListParams::default().labels("job-name=fails"))
        .await
        .unwrap();
    let terminated = failed.items[0]
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0]
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .unwrap();
    assert_eq!(terminated.exit_code, 2);
}

#[tokio::test]
async fn injected_faults_kill_fail_and_unready_pods() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("faults").await.unwrap();
    let _: Pod = create(&client, &ns, pod("restarts", json!({}), "Always")).await;
    let _: Pod = create(&client, &ns, pod("never", json!({}), "Never")).await;
    let _: Pod = create(&client, &ns, pod("fails", json!({}), "Always")).await;
    let _: Pod = create(
        &client,
        &ns,
        pod("slow", json!({annotations::START_DELAY: "10"}), "Always"),
    )
    .await;
    for name in ["restarts", "never", "fails"] {
        ready_pod(&client, &ns, name).await;
    }
    let slow = get(&client, &ns, "slow").await;
    assert!(
        !is_ready(&slow) && slow.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_none(),
        "started early"
    );

    // Killed with restartPolicy Always: the containers restart.
    annotate(&client, &ns, "restarts", annotations::KILL, Some("1")).await;
    let restarted = eventually("a restart", Duration::from_secs(30), || async {
        let pod = get(&client, &ns, "restarts").await;
        let c = pod.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
        (c.restart_count == 1 && c.ready).then_some(c)
    })
    .await;
    let last = restarted.last_state.unwrap().terminated.unwrap();
    assert_eq!(last.exit_code, 137);

    // Killed with restartPolicy Never: the Pod fails, as KubeRay's autoscaler-v2 Pods do.
    annotate(&client, &ns, "never", annotations::KILL, Some("1")).await;
    eventually("the pod to fail", Duration::from_secs(30), || async {
        (phase(&get(&client, &ns, "never").await) == "Failed").then_some(())
    })
    .await;

    annotate(&client, &ns, "fails", annotations::FAIL, Some("disk on fire")).await;
    let failed = eventually("the pod to fail", Duration::from_secs(30), || async {
        let pod = get(&client, &ns, "fails").await;
        (phase(&pod) == "Failed").then_some(pod)
    })
    .await;
    assert_eq!(failed.status.unwrap().message.as_deref(), Some("disk on fire"));

    annotate(&client, &ns, "restarts", annotations::NOT_READY, Some("true")).await;
    eventually("the pod to be unready", Duration::from_secs(30), || async {
        (!is_ready(&get(&client, &ns, "restarts").await)).then_some(())
    })
    .await;
    annotate(&client, &ns, "restarts", annotations::NOT_READY, None).await;
    ready_pod(&client, &ns, "restarts").await;
    ready_pod(&client, &ns, "slow").await;
}

#[tokio::test]
async fn deleting_a_pod_stops_what_runs_at_its_address() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("delete").await.unwrap();
    let mut manifest = pod("web", json!({annotations::HTTP_ECHO: "true"}), "Always");
    manifest["spec"]["containers"][0]["ports"] = json!([{"containerPort": 8080}]);
    let _: Pod = create(&client, &ns, manifest).await;
    let pod = ready_pod(&client, &ns, "web").await;
    let addr = format!("{}:8080", pod.status.unwrap().pod_ip.unwrap());
    // The pod network is reachable from this host (the API server's side of it), and the echo server answers.
    assert!(
        tokio::net::TcpStream::connect(&addr).await.is_ok(),
        "nothing listens at {addr}"
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    pods.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("the pod object to go", Duration::from_secs(30), || async {
        pods.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
    eventually("the address to go quiet", Duration::from_secs(30), || async {
        let connect =
            tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(&addr)).await;
        (!matches!(connect, Ok(Ok(_)))).then_some(())
    })
    .await;
}

/// Many Pods deleted at once (their namespace goes) all disappear: the kubelet's final delete of each is retried
/// while the API server sheds load, so none is left `Terminating` (seen with 3,000 Pods before the retry).
#[tokio::test]
async fn a_namespace_of_many_pods_is_deleted_completely() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = env.namespace("many").await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let creates = (0..200).map(|i| {
        let pods = pods.clone();
        async move {
            let manifest: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("p{i:03}")},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            }))
            .unwrap();
            pods.create(&Default::default(), &manifest).await.unwrap();
        }
    });
    futures::future::join_all(creates).await;
    eventually("200 running pods", Duration::from_secs(300), || async {
        let list = pods.list(&Default::default()).await.ok()?;
        (list.items.iter().filter(|p| phase(p) == "Running").count() == 200).then_some(())
    })
    .await;

    ns.delete(&client).await.unwrap();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    eventually(
        "the namespace and its pods to go",
        Duration::from_secs(300),
        || async { namespaces.get_opt(ns.name()).await.ok()?.is_none().then_some(()) },
    )
    .await;
}
