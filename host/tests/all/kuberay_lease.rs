//! KubeRay's operator and ours on one Lease: both elect their leader on `ray-operator-leader` (KubeRay's
//! name, our default), so in one namespace only one of them reconciles. KubeRay's real operator
//! (`make kuberay-operator`) leads first and ours stands by, writing nothing; when KubeRay's dies without
//! releasing the Lease, ours takes it over once it expires and reconciles. And the whole switch, both ways,
//! with no Pod deleted or recreated: RayClusters, then a RayJob and a RayService in flight.

use std::{collections::BTreeMap, process::Stdio, time::Duration};

use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kube::{Api, api::DynamicObject};
use kuberay_testenv::{
    TestNamespace,
    fixtures::small_cluster,
    kuberay_switch::{LEASE, cluster_uids, pod_uids, start_kuberay, submissions},
    workloads::real_ray::http_get,
};
use serde_json::json;

use crate::{
    leadership::{create_cluster, holder_of},
    rayservice::{active_cluster, rayservices, ready, sample_service},
    support::{
        apply, env, eventually, free_addr, namespace, plugins_dir_with, pods, ray_api, rayclusters,
        ready_cluster, scratch_dir, shared_cache_dir, status_of, test_policy_file,
    },
};

pub(crate) fn free_port() -> u16 {
    free_addr().port()
}

/// Our operator binary with the RayCluster plugin, started with KubeRay's flags as its chart writes them and
/// the default Lease.
fn start_ours(kubeconfig: &std::path::Path, ns: &str, metrics_port: u16) -> tokio::process::Child {
    start_ours_with(
        kubeconfig,
        ns,
        metrics_port,
        &[kuberay_plugin_artifacts::RAYCLUSTER],
        &[],
    )
}

/// Our operator binary with `plugins` and KubeRay's flags, `extra` among them.
pub(crate) fn start_ours_with(
    kubeconfig: &std::path::Path,
    ns: &str,
    metrics_port: u16,
    plugins: &[&str],
    extra: &[&str],
) -> tokio::process::Child {
    let plugins = plugins_dir_with(plugins);
    tokio::process::Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
        .arg("operator")
        .arg("--plugins")
        .arg(&plugins)
        .arg("--policy")
        .arg(test_policy_file(&plugins))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(shared_cache_dir())
        .args([
            "--enable-leader-election=true",
            &format!("--leader-election-namespace={ns}"),
            &format!("--watch-namespace={ns}"),
            &format!("--metrics-addr=127.0.0.1:{metrics_port}"),
            &format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
            "--plugin-resources=false",
            "--plugin-reload-interval=0",
        ])
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // Its warnings (refusals among them) are kept with the test's scratch files.
        .stderr(
            std::fs::File::create(scratch_dir("kuberay-lease").join(format!("ours-{ns}.log")))
                .map_or_else(|_| Stdio::null(), Stdio::from),
        )
        .kill_on_drop(true)
        .spawn()
        .expect("starting our operator")
}

/// Ours killed and KubeRay's operator started again (with `extra` flags, logging to `log`), returned once a
/// KubeRay replica other than the first (`first`) holds the Lease in `ns`.
pub(crate) async fn back_to_kuberay(
    mut ours: tokio::process::Child,
    kubeconfig: &std::path::Path,
    ns: &str,
    log: &std::path::Path,
    extra: &[&str],
    first: &str,
) -> tokio::process::Child {
    ours.kill().await.expect("killing our operator");
    let kuberay = start_kuberay(kubeconfig, ns, ns, log, extra);
    let leases: Api<Lease> = Api::namespaced(env().await.client().await.expect("a client"), ns);
    eventually("KubeRay to lead again", Duration::from_secs(90), || async {
        holder_of(&leases, LEASE)
            .await
            .filter(|h| h.as_str() != first)
            .filter(|h| !h.starts_with("kuberay-wasm"))
    })
    .await;
    kuberay
}

/// A metric of ours (`name` followed by a space: no labels), once the endpoint answers.
async fn our_metric(port: u16, name: &str) -> Option<f64> {
    let text = http_get(
        &format!("http://127.0.0.1:{port}/metrics"),
        Duration::from_secs(2),
    )
    .await?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} "))?.trim().parse().ok())
}

/// The field managers of the head Pod of `cluster`, once it exists.
async fn head_managers(client: &kube::Client, ns: &TestNamespace, cluster: &str) -> Vec<String> {
    let selector = format!("ray.io/cluster={cluster},ray.io/node-type=head");
    let head: Pod = eventually(
        &format!("the head Pod of {cluster}"),
        Duration::from_secs(90),
        || async { pods(client, ns, &selector).await.into_iter().next() },
    )
    .await;
    head.metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect()
}

fn ours(managers: &[String]) -> bool {
    managers.iter().any(|m| m.starts_with("kuberay-wasm"))
}

#[tokio::test]
async fn kuberays_operator_and_ours_never_lead_at_once_on_kuberays_lease() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "kuberay-lease").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    let log = scratch_dir("kuberay-lease").join("kuberay-operator.log");
    let kubeconfig = env.kubeconfig().to_path_buf();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();

    let mut kuberay = start_kuberay(&kubeconfig, ns.name(), ns.name(), &log, &[]);
    let kuberays = eventually(
        "KubeRay's operator to hold the Lease",
        Duration::from_secs(60),
        || holder_of(&leases, LEASE),
    )
    .await;
    let port = free_port();
    let _ours = start_ours(&kubeconfig, ns.name(), port);
    let standby = eventually("our operator to stand by", Duration::from_secs(120), || async {
        our_metric(port, "kuberay_wasm_leader")
            .await
            .filter(|l| *l == 0.0)
    })
    .await;
    assert_eq!(standby, 0.0);

    create_cluster(&client, &ns, "under-kuberay").await;
    let managers = head_managers(&client, &ns, "under-kuberay").await;
    assert!(!ours(&managers), "ours wrote while KubeRay led: {managers:?}");
    assert_eq!(
        holder_of(&leases, LEASE).await.as_deref(),
        Some(kuberays.as_str()),
        "{}",
        read_log()
    );
    assert_eq!(our_metric(port, "kuberay_wasm_leader").await, Some(0.0));

    // Killed, KubeRay's operator does not release the Lease: ours waits for it to expire (15 s), then leads.
    kuberay.kill().await.expect("killing KubeRay's operator");
    eventually("our operator to lead", Duration::from_secs(60), || async {
        our_metric(port, "kuberay_wasm_leader")
            .await
            .filter(|l| *l == 1.0)
    })
    .await;
    let now = holder_of(&leases, LEASE).await;
    assert!(
        now.is_some() && now.as_deref() != Some(kuberays.as_str()),
        "{now:?}"
    );
    create_cluster(&client, &ns, "under-ours").await;
    let managers = head_managers(&client, &ns, "under-ours").await;
    assert!(ours(&managers), "the head Pod is not ours: {managers:?}");
}

/// The sum of a labelled metric of ours over the series whose labels contain `needle`.
pub(crate) async fn our_sum(port: u16, name: &str, needle: &str) -> f64 {
    let text = http_get(
        &format!("http://127.0.0.1:{port}/metrics"),
        Duration::from_secs(2),
    )
    .await
    .unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(needle))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn cluster(name: &str, recreate: bool) -> serde_json::Value {
    let mut spec = small_cluster();
    spec["workerGroupSpecs"] = json!([{
        "groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 4, "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}},
    }]);
    if recreate {
        spec["upgradeStrategy"] = json!({"type": "Recreate"});
    }
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name}, "spec": spec})
}

/// The switch a platform team makes: KubeRay's operator runs two RayClusters (one with `upgradeStrategy:
/// Recreate`, whose Pods carry KubeRay's spec hash); it is replaced by ours, started with KubeRay's flags,
/// which takes them over without deleting or recreating a Pod; edits then behave as under KubeRay (a scale-up
/// adds a worker, a template change under Recreate recreates the Pods); and the switch back to KubeRay
/// restarts no Pod either.
#[tokio::test]
async fn switching_from_kuberay_and_back_restarts_no_pod() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "kuberay-switch").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    let log = scratch_dir("kuberay-switch").join("kuberay-operator.log");
    let kubeconfig = env.kubeconfig().to_path_buf();
    let clusters = rayclusters(&client, &ns);

    let mut kuberay = start_kuberay(&kubeconfig, ns.name(), ns.name(), &log, &[]);
    let kuberays = eventually("KubeRay to lead", Duration::from_secs(60), || {
        holder_of(&leases, LEASE)
    })
    .await;
    apply(&clusters, &cluster("plain", false)).await;
    apply(&clusters, &cluster("recreate", true)).await;
    ready_cluster(&client, &ns, "plain").await;
    ready_cluster(&client, &ns, "recreate").await;
    let under_kuberay = pod_uids(&client, ns.name()).await;
    assert_eq!(under_kuberay.len(), 4, "{under_kuberay:?}");

    // KubeRay goes (killed: its Lease expires), ours comes with KubeRay's flags.
    kuberay.kill().await.expect("killing KubeRay's operator");
    let port = free_port();
    let ours = start_ours(&kubeconfig, ns.name(), port);
    eventually("our operator to lead", Duration::from_secs(90), || async {
        our_metric(port, "kuberay_wasm_leader")
            .await
            .filter(|l| *l == 1.0)
    })
    .await;
    let reconciled = r#"controller="raycluster""#;
    // A settled cluster is reconciled once, then every 5 minutes.
    eventually(
        "our reconciles of both clusters",
        Duration::from_secs(60),
        || async {
            (our_sum(port, "controller_runtime_reconcile_total", reconciled).await >= 2.0).then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        pod_uids(&client, ns.name()).await,
        under_kuberay,
        "our take-over changed Pods"
    );
    ready_cluster(&client, &ns, "plain").await;
    ready_cluster(&client, &ns, "recreate").await;

    // Edits behave as under KubeRay: a scale-up adds a worker and keeps the rest...
    let mut scaled = cluster("plain", false);
    scaled["spec"]["workerGroupSpecs"][0]["replicas"] = json!(2);
    apply(&clusters, &scaled).await;
    let after_scale = eventually("a second worker", Duration::from_secs(60), || async {
        let now = pod_uids(&client, ns.name()).await;
        (now.len() == 5).then_some(now)
    })
    .await;
    assert!(
        under_kuberay
            .iter()
            .all(|(name, uid)| after_scale.get(name) == Some(uid)),
        "the scale-up replaced Pods: {under_kuberay:?} -> {after_scale:?}"
    );
    // ...and a template change under Recreate replaces the cluster's Pods, once ours has stamped the head
    // Pod KubeRay made with its own version and hash (KubeRay's way with Pods of another version).
    let head = "ray.io/cluster=recreate,ray.io/node-type=head";
    let stamped = eventually(
        "our version on the Recreate cluster's head",
        Duration::from_secs(30),
        || async {
            let pod = pods(&client, &ns, head).await.into_iter().next()?;
            let annotations = pod.metadata.annotations.unwrap_or_default();
            (annotations.get("ray.io/kuberay-version").map(String::as_str) == Some("v1.7.0"))
                .then_some(annotations)
        },
    )
    .await;
    assert!(
        stamped.contains_key("ray.io/upgrade-strategy-recreate-hash"),
        "{stamped:?}"
    );
    let mut changed = cluster("recreate", true);
    changed["spec"]["headGroupSpec"]["template"]["metadata"] = json!({"labels": {"team": "b"}});
    apply(&clusters, &changed).await;
    let recreated = |pods: &BTreeMap<String, String>| {
        under_kuberay
            .iter()
            .filter(|(name, _)| name.starts_with("recreate-"))
            .all(|(name, _)| !pods.contains_key(name))
    };
    let after_recreate = eventually(
        "the Recreate cluster's new Pods",
        Duration::from_secs(90),
        || async {
            let now = pod_uids(&client, ns.name()).await;
            (recreated(&now) && now.keys().filter(|n| n.starts_with("recreate-")).count() == 2).then_some(now)
        },
    )
    .await;
    ready_cluster(&client, &ns, "recreate").await;
    let settled = pod_uids(&client, ns.name()).await;
    assert_eq!(settled.len(), 5, "{after_recreate:?} then {settled:?}");

    // And back: ours goes, KubeRay comes, and no Pod changes.
    let _kuberay = back_to_kuberay(ours, &kubeconfig, ns.name(), &log, &[], &kuberays).await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    assert_eq!(
        pod_uids(&client, ns.name()).await,
        settled,
        "KubeRay's take-over changed Pods; its log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    ready_cluster(&client, &ns, "plain").await;
    ready_cluster(&client, &ns, "recreate").await;
}

/// KubeRay's flag both operators need here: they run outside the Pod network and reach heads through the
/// API server.
pub(crate) const THROUGH_PROXY: &str = "--use-kubernetes-proxy=true";

/// The RayJob's status once `check` holds of it.
async fn rayjob_when(
    api: &Api<DynamicObject>,
    what: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    eventually(what, Duration::from_secs(120), || async {
        status_of(api, "in-flight").await.filter(|s| check(s))
    })
    .await
}

/// The switch with work in flight: under KubeRay a RayJob (HTTPMode) is running its job and a RayService
/// (KubeRay's sample) is serving; ours takes over with KubeRay's flags and finishes the job KubeRay submitted
/// (not submitted again) while the service keeps its cluster, with no Pod or RayCluster replaced; then
/// KubeRay takes them back, again replacing nothing.
#[tokio::test]
async fn switching_with_a_rayjob_and_a_rayservice_in_flight_replaces_nothing() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "kuberay-switch-work").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    let log = scratch_dir("kuberay-switch-work").join("kuberay-operator.log");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let kubeconfig = env.kubeconfig().to_path_buf();
    let jobs = ray_api(&client, &ns, "RayJob", "rayjobs");
    let services = rayservices(&client, &ns);

    let mut kuberay = start_kuberay(&kubeconfig, ns.name(), ns.name(), &log, &[THROUGH_PROXY]);
    let kuberays = eventually("KubeRay to lead", Duration::from_secs(60), || {
        holder_of(&leases, LEASE)
    })
    .await;
    let job = json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "in-flight"},
        "spec": {"submissionMode": "HTTPMode", "entrypoint": "sleep 75; echo done",
                 "rayClusterSpec": small_cluster()},
    });
    apply(&jobs, &job).await;
    apply(&services, &sample_service()).await;
    let running = rayjob_when(&jobs, "KubeRay to run the job", |s| s["jobStatus"] == "RUNNING").await;
    let job_id = running["jobId"].as_str().expect("a jobId").to_string();
    let job_cluster = running["rayClusterName"].as_str().expect("a cluster").to_string();
    let serving = ready(&services, "rayservice-sample").await;
    let service_cluster = active_cluster(&serving);
    let pods_before = pod_uids(&client, ns.name()).await;
    let clusters_before = cluster_uids(&client, ns.name()).await;
    assert_eq!(clusters_before.len(), 2, "{clusters_before:?}");

    // KubeRay goes mid-job; ours comes with KubeRay's flags and all three plugins.
    kuberay.kill().await.expect("killing KubeRay's operator");
    let port = free_port();
    let plugins = [
        kuberay_plugin_artifacts::RAYCLUSTER,
        kuberay_plugin_artifacts::RAYJOB,
        kuberay_plugin_artifacts::RAYSERVICE,
    ];
    let ours = start_ours_with(&kubeconfig, ns.name(), port, &plugins, &[THROUGH_PROXY]);
    for controller in ["rayjob", "rayservice"] {
        let label = format!(r#"controller="{controller}""#);
        eventually(
            &format!("our {controller} reconciles"),
            Duration::from_secs(120),
            || async {
                (our_sum(port, "controller_runtime_reconcile_total", &label).await >= 1.0).then_some(())
            },
        )
        .await;
    }
    let done = rayjob_when(&jobs, "the job to complete under ours", |s| {
        s["jobDeploymentStatus"] == "Complete"
    })
    .await;
    assert_eq!(done["jobStatus"], "SUCCEEDED", "{done}");
    assert_eq!(done["jobId"], job_id.as_str(), "{done}");
    assert_eq!(done["rayClusterName"], job_cluster.as_str(), "{done}");
    let submitted = submissions(&client, ns.name(), &job_cluster)
        .await
        .expect("the head's submissions");
    assert_eq!(submitted, json!({&job_id: 1}), "the job was submitted again");
    let still = ready(&services, "rayservice-sample").await;
    assert_eq!(active_cluster(&still), service_cluster, "{still}");
    assert_eq!(
        cluster_uids(&client, ns.name()).await,
        clusters_before,
        "our take-over replaced a RayCluster"
    );
    assert_eq!(
        pod_uids(&client, ns.name()).await,
        pods_before,
        "our take-over changed Pods"
    );

    // And back to KubeRay: nothing replaced either, and the finished job stays finished.
    let _kuberay = back_to_kuberay(ours, &kubeconfig, ns.name(), &log, &[THROUGH_PROXY], &kuberays).await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    let back = ready(&services, "rayservice-sample").await;
    assert_eq!(active_cluster(&back), service_cluster, "{back}\n{}", read_log());
    let job_now = status_of(&jobs, "in-flight").await.unwrap_or_default();
    assert_eq!(job_now["jobDeploymentStatus"], "Complete", "{job_now}");
    assert_eq!(job_now["jobId"], job_id.as_str(), "{job_now}");
    assert_eq!(
        cluster_uids(&client, ns.name()).await,
        clusters_before,
        "KubeRay's take-over replaced a RayCluster; its log:\n{}",
        read_log()
    );
    assert_eq!(
        pod_uids(&client, ns.name()).await,
        pods_before,
        "KubeRay's take-over changed Pods; its log:\n{}",
        read_log()
    );
}
