//! More RayService behaviour on the real control plane with fake Ray heads: a blue/green upgrade that never
//! leaves the serve Service without a ready endpoint; an operator restart in the middle of an upgrade
//! (the pending head is not deployed again, the old cluster's deletion deadline survives); a Serve proxy
//! that fails its health check drops the head out of the serve Service; suspend and resume; the `None`
//! upgrade strategy; a custom serve Service; and KubeRay's sample with the Serve port moved to 9000.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::{core::v1::Service, discovery::v1::EndpointSlice};
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams},
    runtime::watcher,
};
use kuberay_testenv::{TestNamespace, proxy_http::ProxyHttp};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{
    rayservice::{
        WAIT, active_cluster, condition, head_applications, is_true, options, rayservices, ready,
        sample_service, selector_cluster, setup,
    },
    support::{apply, env, eventually, pods, rayclusters, sample, start_operator, status_of},
};

const NAME: &str = "rayservice-sample";
const SERVE_SVC: &str = "rayservice-sample-serve-svc";

/// The sample without worker groups, so the head Pod is the only Pod the serve Service can select.
fn head_only_service() -> Value {
    let mut service = sample_service();
    service["spec"]["rayClusterConfig"]
        .as_object_mut()
        .unwrap()
        .remove("workerGroupSpecs");
    service
}

/// A change of the cluster spec that needs a new cluster.
fn change_cluster(service: &mut Value, cpus: &str) {
    service["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = json!({"num-cpus": cpus});
}

/// Names of the Pods that are ready endpoints of the slices.
fn ready_pods<'a>(slices: impl IntoIterator<Item = &'a EndpointSlice>) -> BTreeSet<String> {
    slices
        .into_iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
        .filter_map(|e| e.target_ref.as_ref()?.name.clone())
        .collect()
}

fn slices_api(client: &Client, ns: &TestNamespace) -> Api<EndpointSlice> {
    Api::namespaced(client.clone(), ns.name())
}

fn service_label(service: &str) -> String {
    format!("kubernetes.io/service-name={service}")
}

/// The Pods that are ready behind the Service now.
async fn ready_endpoints(client: &Client, ns: &TestNamespace, service: &str) -> Option<BTreeSet<String>> {
    let slices = slices_api(client, ns)
        .list(&ListParams::default().labels(&service_label(service)))
        .await
        .ok()?;
    Some(ready_pods(&slices.items))
}

/// Records the ready Pods behind a Service after every change of its EndpointSlices, from a watch.
struct EndpointRecorder {
    seen: Arc<Mutex<Vec<BTreeSet<String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl EndpointRecorder {
    fn start(client: &Client, ns: &TestNamespace, service: &str) -> Self {
        let api = slices_api(client, ns);
        let config = watcher::Config::default().labels(&service_label(service));
        let seen: Arc<Mutex<Vec<BTreeSet<String>>>> = Arc::default();
        let record = seen.clone();
        let task = tokio::spawn(async move {
            let mut slices: BTreeMap<String, EndpointSlice> = BTreeMap::new();
            let mut listing: Option<BTreeMap<String, EndpointSlice>> = None;
            let mut events = std::pin::pin!(watcher(api, config));
            while let Some(event) = events.next().await {
                // After an error the watcher starts again with a fresh list.
                let Ok(event) = event else { continue };
                let name = |s: &EndpointSlice| s.metadata.name.clone().unwrap_or_default();
                match event {
                    watcher::Event::Init => listing = Some(BTreeMap::new()),
                    watcher::Event::InitApply(slice) => {
                        if let Some(listing) = listing.as_mut() {
                            listing.insert(name(&slice), slice);
                        }
                    }
                    watcher::Event::InitDone => slices = listing.take().unwrap_or_default(),
                    watcher::Event::Apply(slice) => {
                        slices.insert(name(&slice), slice);
                    }
                    watcher::Event::Delete(slice) => {
                        slices.remove(&name(&slice));
                    }
                }
                if listing.is_none() {
                    record.lock().unwrap().push(ready_pods(slices.values()));
                }
            }
        });
        Self { seen, task }
    }

    fn seen(&self) -> Vec<BTreeSet<String>> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for EndpointRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn head_pod(
    client: &Client,
    ns: &TestNamespace,
    cluster: &str,
) -> Option<k8s_openapi::api::core::v1::Pod> {
    pods(
        client,
        ns,
        &format!("ray.io/cluster={cluster},ray.io/node-type=head"),
    )
    .await
    .into_iter()
    .next()
}

async fn head_pod_name(client: &Client, ns: &TestNamespace, cluster: &str) -> String {
    eventually(&format!("the head Pod of {cluster}"), WAIT, || async {
        head_pod(client, ns, cluster).await?.metadata.name
    })
    .await
}

async fn serve_label(client: &Client, ns: &TestNamespace, cluster: &str) -> Option<String> {
    head_pod(client, ns, cluster)
        .await?
        .metadata
        .labels?
        .get("ray.io/serve")
        .cloned()
}

/// The fake head's dashboard, through the cluster's head Service.
fn dashboard(client: &Client, ns: &TestNamespace, cluster: &str) -> ProxyHttp {
    ProxyHttp::service(
        client.clone(),
        ns.name(),
        &format!("{cluster}-head-svc"),
        "dashboard",
    )
}

/// How many Serve configs the fake head took.
async fn deploys(client: &Client, ns: &TestNamespace, cluster: &str) -> u64 {
    let reply = dashboard(client, ns, cluster)
        .get("/testenv/serve")
        .await
        .unwrap();
    reply.json().unwrap()["deploys"].as_u64().unwrap()
}

async fn cluster_names(client: &Client, ns: &TestNamespace) -> Vec<String> {
    let mut names: Vec<String> = rayclusters(client, ns)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort();
    names
}

async fn wait_deleted(api: &Api<DynamicObject>, name: &str, timeout: Duration) {
    eventually(&format!("RayCluster {name} to be deleted"), timeout, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_blue_green_upgrade_never_leaves_the_serve_service_without_a_ready_endpoint() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-nogap").await;
    let api = rayservices(&client, &ns);
    let mut service = head_only_service();
    apply(&api, &service).await;
    let first = active_cluster(&ready(&api, NAME).await);
    let recorder = EndpointRecorder::start(&client, &ns, SERVE_SVC);
    eventually("the watch to see the first ready endpoint", WAIT, || async {
        recorder.seen().iter().any(|s| !s.is_empty()).then_some(())
    })
    .await;

    change_cluster(&mut service, "1");
    apply(&api, &service).await;
    let status = eventually("the new cluster to take over", WAIT, || async {
        let status = status_of(&api, NAME).await?;
        (active_cluster_opt(&status)? != first).then_some(status)
    })
    .await;
    let second = active_cluster(&status);
    wait_deleted(&rayclusters(&client, &ns), &first, Duration::from_secs(60)).await;
    let new_head = head_pod_name(&client, &ns, &second).await;
    eventually("the endpoints to be the new head alone", WAIT, || async {
        let now = ready_endpoints(&client, &ns, SERVE_SVC).await?;
        (now == BTreeSet::from([new_head.clone()])).then_some(())
    })
    .await;
    // Let the watch catch up with the last change.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let seen = recorder.seen();
    let from_first_ready: Vec<&BTreeSet<String>> = seen.iter().skip_while(|s| s.is_empty()).collect();
    assert!(
        from_first_ready.iter().all(|s| !s.is_empty()),
        "the serve Service had no ready endpoint during the upgrade: {seen:?}"
    );
    assert!(
        from_first_ready
            .iter()
            .any(|s| s.iter().any(|p| p.starts_with(&first))),
        "{seen:?}"
    );
    assert_eq!(seen.last(), Some(&BTreeSet::from([new_head.clone()])), "{seen:?}");
    assert_eq!(cluster_names(&client, &ns).await, vec![second.clone()]);
    drop(recorder);
    operator.stop().await;
}

fn active_cluster_opt(status: &Value) -> Option<String> {
    status
        .pointer("/activeServiceStatus/rayClusterName")?
        .as_str()
        .map(str::to_string)
}

fn pending_cluster_opt(status: &Value) -> Option<String> {
    status
        .pointer("/pendingServiceStatus/rayClusterName")?
        .as_str()
        .map(str::to_string)
}

#[tokio::test]
async fn an_operator_restart_in_the_middle_of_an_upgrade_neither_redeploys_nor_forgets_the_deletion() {
    const DELAY: u64 = 20;
    // How long no operator runs after the switch.
    const GAP: u64 = 15;
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-restart").await;
    let api = rayservices(&client, &ns);
    let mut service = head_only_service();
    service["spec"]["rayClusterDeletionDelaySeconds"] = json!(DELAY);
    // Applications whose import path says `slow` stay DEPLOYING on the fake head for ten seconds: the
    // pending cluster holds its deployed config that long before it can take over.
    let config = service["spec"]["serveConfigV2"]
        .as_str()
        .unwrap()
        .replace("conditional_dag.serve_dag", "conditional_dag.slow_serve_dag");
    service["spec"]["serveConfigV2"] = json!(config);
    apply(&api, &service).await;
    let first = active_cluster(&ready(&api, NAME).await);

    // (a) Stop the operator once the pending cluster's head took the config, before it can serve.
    change_cluster(&mut service, "1");
    apply(&api, &service).await;
    let (pending, deployed_at) = eventually("the pending head to take the config", WAIT, || async {
        let status = status_of(&api, NAME).await?;
        let pending = pending_cluster_opt(&status)?;
        let apps = dashboard(&client, &ns, &pending)
            .get("/api/serve/applications/")
            .await
            .ok()?
            .json()
            .ok()?;
        let at = apps
            .pointer("/applications/math_app/last_deployed_time_s")?
            .clone();
        Some((pending, at))
    })
    .await;
    operator.stop().await;
    let status = status_of(&api, NAME).await.unwrap();
    assert_eq!(
        active_cluster(&status),
        first,
        "switched before the stop: {status}"
    );
    assert_eq!(pending_cluster_opt(&status).as_deref(), Some(pending.as_str()));
    assert_eq!(deploys(&client, &ns, &pending).await, 1);

    let operator = start_operator(env, &ns, options()).await;
    let status = eventually("the pending cluster to take over", WAIT, || async {
        let status = status_of(&api, NAME).await?;
        (active_cluster_opt(&status)? == pending).then_some(status)
    })
    .await;
    let switched = Instant::now();
    // (b) Stop the operator right after the switch, and start another one well within the delay.
    operator.stop().await;
    assert!(pending_cluster_opt(&status).is_none(), "{status}");
    let apps = head_applications(&client, &ns, &pending).await;
    assert_eq!(
        apps["math_app"]["last_deployed_time_s"], deployed_at,
        "the pending head was deployed again after the restart"
    );
    assert_eq!(deploys(&client, &ns, &pending).await, 1);
    assert_eq!(
        selector_cluster(&client, &ns, SERVE_SVC).await.as_deref(),
        Some(pending.as_str())
    );
    assert!(rayclusters(&client, &ns).get_opt(&first).await.unwrap().is_some());

    tokio::time::sleep(Duration::from_secs(GAP)).await;
    assert!(
        rayclusters(&client, &ns).get_opt(&first).await.unwrap().is_some(),
        "the old cluster went before its delay"
    );
    let operator = start_operator(env, &ns, options()).await;
    wait_deleted(&rayclusters(&client, &ns), &first, Duration::from_secs(40)).await;
    let after = switched.elapsed();
    // Due DELAY seconds after the switch (the UpgradeInProgress transition, in whole seconds, seen by the
    // test a little later), found by a reconcile soon after; a deadline restarted by the new operator would
    // be at least GAP + DELAY after the switch. The bounds leave room for a loaded machine.
    assert!(
        after >= Duration::from_secs(DELAY - 4),
        "deleted {after:?} after the switch"
    );
    assert!(
        after < Duration::from_secs(GAP + DELAY - 2),
        "deleted {after:?} after the switch: the deadline did not survive the restart"
    );
    let status = ready(&api, NAME).await;
    assert_eq!(active_cluster(&status), pending);
    operator.stop().await;
}

#[tokio::test]
async fn an_unhealthy_serve_proxy_takes_the_head_out_of_the_serve_service() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-proxy").await;
    let api = rayservices(&client, &ns);
    let mut service = head_only_service();
    apply(&api, &service).await;
    let cluster = active_cluster(&ready(&api, NAME).await);
    let head = head_pod_name(&client, &ns, &cluster).await;
    assert_eq!(serve_label(&client, &ns, &cluster).await.as_deref(), Some("true"));
    assert_eq!(
        ready_endpoints(&client, &ns, SERVE_SVC).await,
        Some(BTreeSet::from([head.clone()]))
    );

    let proxy = dashboard(&client, &ns, &cluster);
    let reply = proxy
        .put("/testenv/serve-proxy-health", &json!("unhealthy"))
        .await
        .unwrap();
    assert!(reply.status.is_success(), "{reply:?}");
    let status = eventually("the head to leave the serve Service", WAIT, || async {
        let label = serve_label(&client, &ns, &cluster).await?;
        let endpoints = ready_endpoints(&client, &ns, SERVE_SVC).await?;
        let status = status_of(&api, NAME).await?;
        (label == "false" && endpoints.is_empty() && status["numServeEndpoints"] == 0).then_some(status)
    })
    .await;
    let ready_condition = condition(&status, "Ready").unwrap();
    assert_eq!(ready_condition["status"], "False", "{status}");
    assert_eq!(ready_condition["reason"], "ZeroServeEndpoints", "{status}");

    proxy
        .put("/testenv/serve-proxy-health", &json!("healthy"))
        .await
        .unwrap();
    eventually("the head to come back", WAIT, || async {
        let label = serve_label(&client, &ns, &cluster).await?;
        let endpoints = ready_endpoints(&client, &ns, SERVE_SVC).await?;
        let status = status_of(&api, NAME).await?;
        (label == "true"
            && endpoints == BTreeSet::from([head.clone()])
            && status["numServeEndpoints"] == 1
            && is_true(&status, "Ready"))
        .then_some(())
    })
    .await;

    // With excludeHeadPodFromServeSvc the healthy head stays out.
    service["spec"]["excludeHeadPodFromServeSvc"] = json!(true);
    apply(&api, &service).await;
    eventually("the excluded head to leave the serve Service", WAIT, || async {
        let label = serve_label(&client, &ns, &cluster).await?;
        let endpoints = ready_endpoints(&client, &ns, SERVE_SVC).await?;
        (label == "false" && endpoints.is_empty()).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        serve_label(&client, &ns, &cluster).await.as_deref(),
        Some("false")
    );
    let status = status_of(&api, NAME).await.unwrap();
    assert_eq!(status["numServeEndpoints"], 0, "{status}");
    assert_eq!(active_cluster(&status), cluster, "{status}");
    operator.stop().await;
}

#[tokio::test]
async fn suspend_deletes_the_clusters_and_resume_brings_a_new_one_up() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-suspend").await;
    let api = rayservices(&client, &ns);
    let mut service = sample_service();
    apply(&api, &service).await;
    let first = active_cluster(&ready(&api, NAME).await);

    service["spec"]["suspend"] = json!(true);
    apply(&api, &service).await;
    let status = eventually("the RayService to be suspended", WAIT, || async {
        let status = status_of(&api, NAME).await?;
        let clusters = rayclusters(&client, &ns).list(&Default::default()).await.ok()?;
        (is_true(&status, "Suspended") && clusters.items.is_empty()).then_some(status)
    })
    .await;
    assert_eq!(
        condition(&status, "Suspended").unwrap()["reason"],
        "SuspendComplete"
    );
    assert_eq!(condition(&status, "Suspending").unwrap()["status"], "False");
    assert_eq!(condition(&status, "Ready").unwrap()["status"], "False");
    // KubeRay spells NotRunning as "", which its JSON leaves out: after Running, the field is gone.
    assert_eq!(status.get("serviceStatus"), None, "{status}");
    assert!(active_cluster_opt(&status).is_none(), "{status}");
    assert!(pending_cluster_opt(&status).is_none(), "{status}");
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    assert!(services.get_opt(SERVE_SVC).await.unwrap().is_none());
    // Suspended stays suspended: nothing comes back.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(cluster_names(&client, &ns).await.is_empty());

    service["spec"]["suspend"] = json!(false);
    apply(&api, &service).await;
    let status = ready(&api, NAME).await;
    let second = active_cluster(&status);
    assert_ne!(second, first);
    assert_eq!(condition(&status, "Suspended").unwrap()["status"], "False");
    assert_eq!(cluster_names(&client, &ns).await, vec![second.clone()]);
    assert_eq!(
        selector_cluster(&client, &ns, SERVE_SVC).await.as_deref(),
        Some(second.as_str())
    );
    operator.stop().await;
}

#[tokio::test]
async fn with_upgrade_strategy_none_a_cluster_change_makes_no_new_cluster() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-none").await;
    let api = rayservices(&client, &ns);
    let mut service = sample_service();
    service["spec"]["upgradeStrategy"] = json!({"type": "None"});
    apply(&api, &service).await;
    let first = active_cluster(&ready(&api, NAME).await);

    change_cluster(&mut service, "1");
    apply(&api, &service).await;
    let generation = api.get(NAME).await.unwrap().metadata.generation;
    eventually("the change to be observed", WAIT, || async {
        let status = status_of(&api, NAME).await?;
        (status["observedGeneration"].as_i64() == generation).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let status = ready(&api, NAME).await;
    assert_eq!(active_cluster(&status), first);
    assert!(pending_cluster_opt(&status).is_none(), "{status}");
    assert_eq!(
        condition(&status, "UpgradeInProgress").unwrap()["status"],
        "False",
        "{status}"
    );
    assert_eq!(cluster_names(&client, &ns).await, vec![first.clone()]);
    operator.stop().await;
}

#[tokio::test]
async fn a_custom_serve_service_points_at_the_active_cluster() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-custom-svc").await;
    let api = rayservices(&client, &ns);
    let mut service = sample_service();
    service["spec"]["serveService"] = json!({
        "metadata": {"name": "fruit-serve", "labels": {"team": "fruit"}},
        "spec": {"ports": [{"name": "serve", "port": 8080, "targetPort": 8000}]},
    });
    apply(&api, &service).await;
    let status = ready(&api, NAME).await;
    let cluster = active_cluster(&status);

    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let custom = services.get("fruit-serve").await.unwrap();
    assert_eq!(
        selector_cluster(&client, &ns, "fruit-serve").await.as_deref(),
        Some(cluster.as_str())
    );
    let labels = custom.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("fruit"));
    let spec = custom.spec.unwrap();
    let ports: Vec<(Option<String>, i32)> = spec
        .ports
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.name, p.port))
        .collect();
    assert_eq!(ports, vec![(Some("serve".to_string()), 8080)]);
    assert_eq!(
        spec.selector.unwrap().get("ray.io/serve").map(String::as_str),
        Some("true")
    );
    assert!(services.get_opt(SERVE_SVC).await.unwrap().is_none());
    assert!(status["numServeEndpoints"].as_i64().unwrap() >= 1, "{status}");
    let endpoints = ready_endpoints(&client, &ns, "fruit-serve").await.unwrap();
    assert!(
        endpoints.iter().all(|p| p.starts_with(&cluster)) && !endpoints.is_empty(),
        "{endpoints:?}"
    );
    let serve = ProxyHttp::service(client.clone(), ns.name(), "fruit-serve", "serve");
    let reply = eventually("the custom Service to answer", WAIT, || async {
        let reply = serve.get("/fruit").await.ok()?;
        reply.status.is_success().then_some(reply)
    })
    .await;
    assert!(reply.body.contains("fruit_app"), "{reply:?}");
    operator.stop().await;
}

#[tokio::test]
async fn the_different_port_sample_becomes_ready_on_port_9000() {
    let env = env().await;
    let (client, ns, operator) = setup(env, "rayservice-port").await;
    let api = rayservices(&client, &ns);
    let text = std::fs::read_to_string(sample("ray-service.different-port.yaml")).unwrap();
    let service: Value = serde_yaml::from_str(&text).unwrap();
    apply(&api, &service).await;
    let status = ready(&api, NAME).await;
    let cluster = active_cluster(&status);
    assert!(status["numServeEndpoints"].as_i64().unwrap() >= 1, "{status}");
    assert_eq!(serve_label(&client, &ns, &cluster).await.as_deref(), Some("true"));

    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let serve_svc = services.get(SERVE_SVC).await.unwrap();
    let ports: Vec<(Option<String>, i32)> = serve_svc
        .spec
        .unwrap()
        .ports
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.name, p.port))
        .collect();
    assert_eq!(ports, vec![(Some("serve".to_string()), 9000)]);
    // The head's Serve proxy answers on the port its Pod declares, not on 8000.
    let head = head_pod_name(&client, &ns, &cluster).await;
    let on_9000 = ProxyHttp::pod(client.clone(), ns.name(), &head, 9000);
    let reply = on_9000.get("/-/healthz").await.unwrap();
    assert_eq!(reply.status.as_u16(), 200, "{reply:?}");
    let on_8000 = ProxyHttp::pod(client.clone(), ns.name(), &head, 8000);
    let reply = on_8000.get("/-/healthz").await;
    assert!(
        reply.as_ref().map_or(true, |r| !r.status.is_success()),
        "{reply:?}"
    );
    let serve = ProxyHttp::service(client.clone(), ns.name(), SERVE_SVC, "serve");
    let reply = eventually("the serve Service to answer on 9000", WAIT, || async {
        let reply = serve.get("/fruit").await.ok()?;
        reply.status.is_success().then_some(reply)
    })
    .await;
    assert!(reply.body.contains("fruit_app"), "{reply:?}");
    operator.stop().await;
}
