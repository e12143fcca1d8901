//! Leader election: of two replicas only the one holding the Lease reconciles and writes; a leader that
//! shuts down releases the Lease and the standby takes over at once; a leader whose Lease is taken over
//! steps down, writes nothing, and leads again (controllers restarted) once the Lease is free; a leader cut
//! off from the API server steps down and leads again when it is back.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::Lease, apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp,
};
use kube::{Api, api::PostParams};
use kuberay_testenv::{TestNamespace, fixtures::small_cluster, workloads::real_ray::http_get};
use kuberay_wasm::leadership::{LeaderElection, unique_identity};
use serde_json::json;

use crate::support::{
    Operator, OperatorOptions, apply, env, eventually, namespace, pods, rayclusters, start_operator,
};

/// An election in the test's namespace; `lease` long enough that a takeover within a few seconds can only
/// come from a release, never from expiry.
fn election(ns: &TestNamespace, replica: &str, lease: Duration) -> LeaderElection {
    LeaderElection {
        namespace: ns.name().to_string(),
        lease_name: "kuberay-wasm-leader".into(),
        identity: unique_identity(replica),
        lease_duration: lease,
        renew_deadline: lease.mul_f64(2.0 / 3.0),
        retry_period: Duration::from_millis(300),
    }
}

fn options(ns: &TestNamespace, replica: &str, lease: Duration) -> OperatorOptions {
    OperatorOptions {
        leader_election: Some(election(ns, replica, lease)),
        instance: Some(replica.to_string()),
        ..OperatorOptions::default()
    }
}

async fn readyz(operator: &Operator) -> Option<String> {
    http_get(
        &format!("http://{}/readyz", operator.health_addr),
        Duration::from_secs(2),
    )
    .await
}

async fn until_ready_as(operator: &Operator, answer: &str, within: Duration) {
    eventually(&format!("/readyz to answer {answer:?}"), within, || async {
        (readyz(operator).await.as_deref() == Some(answer)).then_some(())
    })
    .await;
}

fn writes(operator: &Operator) -> f64 {
    operator.metric("kuberay_wasm_api_writes_total", &["result=\"written\""])
}

/// A small RayCluster `name` in `ns`.
pub(crate) async fn create_cluster(client: &kube::Client, ns: &TestNamespace, name: &str) {
    apply(
        &rayclusters(client, ns),
        &json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": ns.name()},
            "spec": small_cluster(),
        }),
    )
    .await;
}

async fn head_created(client: &kube::Client, ns: &TestNamespace, name: &str, within: Duration) {
    let selector = format!("ray.io/cluster={name},ray.io/node-type=head");
    eventually(&format!("the head Pod of {name}"), within, || async {
        (!pods(client, ns, &selector).await.is_empty()).then_some(())
    })
    .await;
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    holder_of(leases, "kuberay-wasm-leader").await
}

/// The holder of the Lease `name`, if it has one.
pub(crate) async fn holder_of(leases: &Api<Lease>, name: &str) -> Option<String> {
    leases
        .get(name)
        .await
        .ok()?
        .spec?
        .holder_identity
        .filter(|h| !h.is_empty())
}

#[tokio::test]
async fn one_replica_reconciles_and_the_standby_takes_over_when_it_shuts_down() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "leader-handover").await;
    let lease = Duration::from_secs(30);
    let first = start_operator(env, &ns, options(&ns, "first", lease)).await;
    until_ready_as(&first, "ok: leader", Duration::from_secs(60)).await;
    let second = start_operator(env, &ns, options(&ns, "second", lease)).await;
    until_ready_as(&second, "ok: standby", Duration::from_secs(60)).await;
    assert_eq!(first.metric("kuberay_wasm_leader ", &[]), 1.0);
    assert_eq!(second.metric("kuberay_wasm_leader ", &[]), 0.0);
    // client-go's gauge, by the Lease's name, as KubeRay's operator exports it.
    assert_eq!(first.metric("leader_election_master_status{", &["name=\""]), 1.0);
    assert_eq!(second.metric("leader_election_master_status{", &["name=\""]), 0.0);

    create_cluster(&client, &ns, "first-term").await;
    head_created(&client, &ns, "first-term", Duration::from_secs(60)).await;
    assert!(writes(&first) > 0.0, "the leader wrote nothing");
    assert_eq!(writes(&second), 0.0, "the standby wrote");
    assert_eq!(
        second.metric("kuberay_wasm_reconciles_total", &[]),
        0.0,
        "the standby reconciled"
    );

    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    first.stop().await;
    assert_eq!(holder(&leases).await, None, "the lease was not released");
    // Well within the lease duration: the release, not expiry, handed it over.
    until_ready_as(&second, "ok: leader", Duration::from_secs(10)).await;
    assert!(holder(&leases).await.is_some_and(|h| h.starts_with("second_")));
    create_cluster(&client, &ns, "second-term").await;
    head_created(&client, &ns, "second-term", Duration::from_secs(60)).await;
    assert!(writes(&second) > 0.0, "the new leader wrote nothing");
    assert_eq!(second.metric("kuberay_wasm_leader_transitions_total", &[]), 1.0);
    second.stop().await;
}

#[tokio::test]
async fn a_leader_whose_lease_is_taken_over_steps_down_and_leads_again_once_it_is_free() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "leader-takeover").await;
    let lease = Duration::from_secs(6);
    let operator = start_operator(env, &ns, options(&ns, "deposed", lease)).await;
    until_ready_as(&operator, "ok: leader", Duration::from_secs(60)).await;

    // Another holder appears (and never renews).
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    eventually("the lease to be taken over", Duration::from_secs(10), || async {
        // A renewal in between makes this a conflict; then it is tried again.
        let mut taken = leases.get("kuberay-wasm-leader").await.ok()?;
        let spec = taken.spec.as_mut()?;
        spec.holder_identity = Some("intruder".into());
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        leases
            .replace("kuberay-wasm-leader", &PostParams::default(), &taken)
            .await
            .ok()
    })
    .await;
    until_ready_as(&operator, "ok: standby", Duration::from_secs(5)).await;
    assert_eq!(operator.metric("kuberay_wasm_leader ", &[]), 0.0);
    assert_eq!(operator.metric("kuberay_wasm_leader_transitions_total", &[]), 2.0);

    // While it stands by, nothing is reconciled.
    create_cluster(&client, &ns, "while-deposed").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        pods(&client, &ns, "ray.io/cluster=while-deposed")
            .await
            .is_empty(),
        "a deposed leader created Pods"
    );
    assert_eq!(holder(&leases).await.as_deref(), Some("intruder"));

    // The intruder never renews: once the lease expires the replica leads again, with new controllers and
    // caches, and reconciles what was created meanwhile.
    until_ready_as(&operator, "ok: leader", lease + Duration::from_secs(20)).await;
    head_created(&client, &ns, "while-deposed", Duration::from_secs(60)).await;
    assert_eq!(operator.metric("kuberay_wasm_leader_transitions_total", &[]), 3.0);
    operator.stop().await;
}

/// A TCP forwarder to the API server that can be cut: while down, every connection through it is closed.
struct Link {
    addr: std::net::SocketAddr,
    up: tokio::sync::watch::Sender<bool>,
}

impl Link {
    async fn to(server: &str) -> Self {
        let target = server.trim_start_matches("https://").to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, up_rx) = tokio::sync::watch::channel(true);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let (mut up, target) = (up_rx.clone(), target.clone());
                if !*up.borrow() {
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = up.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Self { addr, up }
    }

    fn set(&self, up: bool) {
        let _ = self.up.send(up);
    }
}

#[tokio::test]
async fn a_leader_cut_off_from_the_api_server_steps_down_and_leads_again_when_it_returns() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "leader-outage").await;
    let server = &env.info().server;
    let link = Link::to(server).await;
    let kubeconfig = std::env::temp_dir().join(format!("kuberay-wasm-outage-{}.kubeconfig", ns.name()));
    let admin = std::fs::read_to_string(env.kubeconfig()).unwrap();
    assert!(admin.contains(server.as_str()));
    std::fs::write(
        &kubeconfig,
        admin.replace(server.as_str(), &format!("https://{}", link.addr)),
    )
    .unwrap();
    let lease = Duration::from_secs(6);
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            kubeconfig: Some(kubeconfig.clone()),
            ..options(&ns, "cut-off", lease)
        },
    )
    .await;
    until_ready_as(&operator, "ok: leader", Duration::from_secs(60)).await;

    link.set(false);
    // Renewals fail: it steps down once the renew deadline (4 s) has passed, without exiting.
    until_ready_as(&operator, "ok: standby", Duration::from_secs(15)).await;
    assert_eq!(operator.metric("kuberay_wasm_leader ", &[]), 0.0);
    create_cluster(&client, &ns, "during-outage").await;

    link.set(true);
    until_ready_as(&operator, "ok: leader", lease + Duration::from_secs(30)).await;
    head_created(&client, &ns, "during-outage", Duration::from_secs(60)).await;
    operator.stop().await;
    let _ = std::fs::remove_file(kubeconfig);
}
