//! `NewClusterWithIncrementalUpgrade`: the Gateway and HTTPRoute, the `target_capacity` and traffic steps
//! over time (an injected clock), promotion, rollback, a restart in the middle, and an API server without
//! the Gateway API. The fake Gateway controller is the test: it marks the Gateway and HTTPRoute ready.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::*;
use kuberay_plugin_sdk::{Kind, testing::FakeHost, testing::Write};
use serde_json::{Value, json};

const INTERVAL: u64 = 30;

fn gateway_kind() -> Kind {
    Kind::new("gateway.networking.k8s.io", "v1", "Gateway")
}

fn route_kind() -> Kind {
    Kind::new("gateway.networking.k8s.io", "v1", "HTTPRoute")
}

fn incremental_service() -> Value {
    let mut object = rayservice(json!({
        "rayClusterDeletionDelaySeconds": 30,
        "upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": {
            "maxSurgePercent": 50, "stepSizePercent": 25, "intervalSeconds": INTERVAL, "gatewayClassName": "istio"}},
    }));
    object["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = json!(true);
    object
}

fn object(host: &FakeHost, kind: &Kind, name: &str) -> Option<Value> {
    host.objects(kind)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
}

/// `(backend, weight)` of the HTTPRoute.
fn weights(host: &FakeHost) -> Vec<(String, i64)> {
    object(host, &route_kind(), "svc-httproute")
        .map(|r| {
            r["spec"]["rules"][0]["backendRefs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    (
                        b["name"].as_str().unwrap().to_string(),
                        b["weight"].as_i64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a Gateway controller would write: the Gateway and the HTTPRoute are accepted and programmed.
fn gateway_controller_ready(host: &FakeHost) {
    let ok = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": type_, "message": "",
                                  "lastTransitionTime": "2027-01-01T00:00:00Z"})
    };
    host.update(&gateway_kind(), "svc-gateway", |g| {
        g["status"] = json!({"conditions": [ok("Accepted"), ok("Programmed")]});
    });
    host.update(&route_kind(), "svc-httproute", |r| {
        r["status"] = json!({"parents": [{"parentRef": {"name": "svc-gateway", "namespace": "ns"},
            "controllerName": "example.com/gateway", "conditions": [ok("Accepted"), ok("ResolvedRefs")]}]});
    });
}

/// One reconcile, then the Gateway controller marks what it may have changed ready again.
fn step(host: &FakeHost) {
    reconcile(host);
    gateway_controller_ready(host);
}

/// `(active capacity, pending capacity, active weight, pending weight)` from the status.
fn split(host: &FakeHost) -> (i64, i64, i64, i64) {
    let s = status(host);
    let get = |which: &str, field: &str| s[which][field].as_i64().unwrap_or(-1);
    (
        get("activeServiceStatus", "targetCapacity"),
        get("pendingServiceStatus", "targetCapacity"),
        get("activeServiceStatus", "trafficRoutedPercent"),
        get("pendingServiceStatus", "trafficRoutedPercent"),
    )
}

fn target_capacity(heads: &std::sync::Mutex<Heads>, cluster: &str) -> Value {
    heads.lock().unwrap().configs[cluster]["target_capacity"].clone()
}

/// A RayService up on its first cluster, with the Gateway and the HTTPRoute; returns the cluster.
fn bring_up_incremental(host: &FakeHost) -> String {
    reconcile(host);
    let name = pending_name(host).unwrap();
    assert_eq!(status(host)["pendingServiceStatus"]["targetCapacity"], 100);
    reconcile(host);
    head_ready(host, &name);
    reconcile(host);
    reconcile(host);
    assert_eq!(active_name(host).as_deref(), Some(name.as_str()));
    serve_endpoints(host, &format!("{name}-serve-svc"), 2);
    reconcile(host);
    name
}

/// Changes the cluster spec; returns the new pending cluster once its applications run (capacity 0).
fn start_upgrade(host: &FakeHost) -> String {
    edit_spec(host, |spec| {
        spec["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = json!({"num-cpus": "0"});
    });
    reconcile(host);
    let new = pending_name(host).unwrap();
    assert_eq!(condition(host, "UpgradeInProgress")["status"], "True");
    assert_eq!(status(host)["pendingServiceStatus"]["targetCapacity"], 0);
    reconcile(host);
    head_ready(host, &new);
    reconcile(host);
    reconcile(host);
    new
}

#[test]
fn the_first_cluster_gets_full_capacity_a_gateway_and_a_route() {
    let (host, heads) = host(incremental_service());
    let name = bring_up_incremental(&host);
    assert_eq!(target_capacity(&heads, &name), 100);
    let gateway = object(&host, &gateway_kind(), "svc-gateway").expect("the Gateway");
    assert_eq!(
        gateway["spec"],
        json!({"gatewayClassName": "istio", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]})
    );
    let route = object(&host, &route_kind(), "svc-httproute").expect("the HTTPRoute");
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{"name": "svc-gateway", "namespace": "ns"}])
    );
    assert_eq!(
        route["spec"]["rules"][0]["matches"],
        json!([{"path": {"type": "PathPrefix", "value": "/"}}])
    );
    assert_eq!(weights(&host), vec![(format!("{name}-serve-svc"), 100)]);
    assert_eq!(route["spec"]["rules"][0]["backendRefs"][0]["port"], 8000);
    // The per-cluster serve Service selects the cluster's serving Pods.
    let serve = object(&host, &service_kind(), &format!("{name}-serve-svc")).expect("the serve Service");
    assert_eq!(serve["spec"]["selector"]["ray.io/cluster"], name.as_str());
    assert_eq!(serve["spec"]["selector"]["ray.io/serve"], "true");
    assert!(object(&host, &service_kind(), "svc-serve-svc").is_none());
    assert_eq!(status(&host)["activeServiceStatus"]["trafficRoutedPercent"], 100);
    assert_eq!(status(&host)["numServeEndpoints"], 2);
    assert_eq!(condition(&host, "Ready")["status"], "True");
    let events: Vec<String> = host.events().iter().map(|e| e.reason.clone()).collect();
    for reason in ["CreatedGateway", "CreatedHTTPRoute"] {
        assert!(events.contains(&reason.to_string()), "{events:?}");
    }
}

#[test]
fn capacity_and_traffic_move_in_steps_then_the_new_cluster_is_promoted_and_the_old_deleted() {
    let (host, heads) = host(incremental_service());
    let old = bring_up_incremental(&host);
    let new = start_upgrade(&host);
    // The new cluster starts without worker replicas (the autoscaler sizes it) and at capacity 0.
    let cluster = object(&host, &cluster_kind(), &new).unwrap();
    assert!(
        cluster["spec"]["workerGroupSpecs"][0]
            .get("replicas")
            .is_none_or(Value::is_null)
    );
    assert_eq!(target_capacity(&heads, &new), 0);
    assert_eq!(
        weights(&host),
        vec![(format!("{old}-serve-svc"), 100), (format!("{new}-serve-svc"), 0)]
    );
    // Nothing moves until the Gateway and the HTTPRoute are ready.
    advance(&host, INTERVAL);
    reconcile(&host);
    assert_eq!(split(&host), (100, 0, 100, 0));
    gateway_controller_ready(&host);

    let mut seen = vec![split(&host)];
    for _ in 0..40 {
        if active_name(&host).as_deref() == Some(new.as_str()) {
            break;
        }
        step(&host);
        let now = split(&host);
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        advance(&host, INTERVAL / 2);
    }
    let promoted = seen.pop();
    assert_eq!(
        seen,
        vec![
            (100, 0, 100, 0),
            // The interval had passed: capacity and then traffic move in the same reconcile.
            (100, 50, 75, 25),
            (100, 50, 50, 50),
            (50, 50, 50, 50),
            (50, 100, 25, 75),
            (50, 100, 0, 100),
        ]
    );
    // Promoted once the old cluster has no capacity and the new one all the traffic.
    assert_eq!(promoted, Some((100, -1, 100, -1)));
    assert_eq!(active_name(&host), Some(new.clone()));
    assert_eq!(pending_name(&host), None);
    assert_eq!(condition(&host, "UpgradeInProgress")["status"], "False");
    assert_eq!(target_capacity(&heads, &old), 0);
    assert_eq!(target_capacity(&heads, &new), 100);
    let events: Vec<String> = host.events().iter().map(|e| e.reason.clone()).collect();
    assert!(
        events.contains(&"UpdatedServeTargetCapacity".to_string()),
        "{events:?}"
    );

    // The route and the Services follow the new cluster; the old one goes after the delay, with its Service.
    reconcile(&host);
    assert_eq!(weights(&host), vec![(format!("{new}-serve-svc"), 100)]);
    let head = object(&host, &service_kind(), "svc-head-svc").unwrap();
    assert_eq!(head["spec"]["selector"]["ray.io/cluster"], new.as_str());
    advance(&host, 31);
    reconcile(&host);
    assert!(object(&host, &cluster_kind(), &old).is_none());
    assert!(object(&host, &service_kind(), &format!("{old}-serve-svc")).is_none());
    assert!(object(&host, &cluster_kind(), &new).is_some());
}

#[test]
fn a_restart_in_the_middle_of_an_upgrade_changes_nothing() {
    let (host, heads) = host(incremental_service());
    bring_up_incremental(&host);
    let new = start_upgrade(&host);
    gateway_controller_ready(&host);
    step(&host);
    advance(&host, INTERVAL);
    step(&host);
    assert_eq!(split(&host), (100, 50, 75, 25));
    // Every reconcile starts from nothing but what is stored: a fresh one before the interval passed
    // neither moves traffic, nor deploys, nor writes.
    host.clear_writes();
    let puts = heads.lock().unwrap().puts.len();
    for _ in 0..3 {
        step(&host);
    }
    assert_eq!(heads.lock().unwrap().puts.len(), puts);
    assert_eq!(
        host.writes()
            .into_iter()
            .filter(|w| !matches!(w, Write::Apply(k, _) if *k == pod_kind()))
            .collect::<Vec<_>>(),
        vec![]
    );
    assert_eq!(split(&host), (100, 50, 75, 25));
    advance(&host, INTERVAL);
    step(&host);
    assert_eq!(split(&host), (100, 50, 50, 50));
    assert_eq!(target_capacity(&heads, &new), 50);
}

#[test]
fn reverting_the_spec_mid_upgrade_rolls_traffic_and_capacity_back_and_drops_the_new_cluster() {
    let (host, heads) = host(incremental_service());
    let old = bring_up_incremental(&host);
    let new = start_upgrade(&host);
    gateway_controller_ready(&host);
    step(&host);
    advance(&host, INTERVAL);
    step(&host);
    assert_eq!(split(&host), (100, 50, 75, 25));
    let new_config = heads.lock().unwrap().configs[&new].clone();

    edit_spec(&host, |spec| {
        spec["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = json!({});
    });
    step(&host);
    let rollback = condition(&host, "RollbackInProgress");
    assert_eq!(rollback["status"], "True");
    assert_eq!(rollback["reason"], "DesiredClusterSpecChanged");
    let mut seen = vec![split(&host)];
    for _ in 0..20 {
        if pending_name(&host).is_none() {
            break;
        }
        advance(&host, INTERVAL);
        step(&host);
        seen.push(split(&host));
    }
    seen.dedup();
    assert_eq!(
        seen,
        vec![(100, 50, 75, 25), (100, 50, 100, 0), (100, -1, 100, -1)]
    );
    assert_eq!(active_name(&host), Some(old.clone()), "a rollback never promotes");
    assert_eq!(pending_name(&host), None);
    assert!(condition(&host, "RollbackInProgress").is_null());
    assert_eq!(condition(&host, "UpgradeInProgress")["status"], "False");
    // The pending cluster kept its config (only its capacity went down), and no new cluster was prepared.
    let mut config = heads.lock().unwrap().configs[&new].clone();
    config["target_capacity"] = new_config["target_capacity"].clone();
    assert_eq!(config, new_config);
    reconcile(&host);
    assert_eq!(pending_name(&host), None);
    assert_eq!(weights(&host), vec![(format!("{old}-serve-svc"), 100)]);
    advance(&host, 31);
    reconcile(&host);
    assert!(object(&host, &cluster_kind(), &new).is_none());
}

#[test]
fn without_the_gateway_api_the_rayservice_says_so_and_creates_nothing() {
    let (host, _) = host(incremental_service());
    host.unserve(gateway_kind());
    host.unserve(route_kind());
    let outcome = reconcile(&host);
    let ready = condition(&host, "Ready");
    assert_eq!(ready["status"], "False");
    assert!(
        ready["message"].as_str().unwrap().contains("Gateway API"),
        "{ready}"
    );
    let events: Vec<String> = host.events().iter().map(|e| e.reason.clone()).collect();
    assert_eq!(events, vec!["GatewayAPINotInstalled".to_string()]);
    assert!(creates(&host, &cluster_kind()).is_empty());
    assert!(outcome.requeue_after.is_some(), "{outcome:?}");
    // Looking again records nothing new.
    reconcile(&host);
    assert_eq!(host.events().len(), 1);
}

#[test]
fn switching_to_another_strategy_deletes_the_gateway_and_the_route() {
    let (host, _) = host(incremental_service());
    bring_up_incremental(&host);
    gateway_controller_ready(&host);
    assert!(object(&host, &gateway_kind(), "svc-gateway").is_some());
    assert!(object(&host, &route_kind(), "svc-httproute").is_some());
    edit_spec(&host, |spec| {
        spec["upgradeStrategy"] = json!({"type": "NewCluster"})
    });
    host.clear_writes();
    reconcile(&host);
    let writes = host.writes();
    assert!(
        writes.contains(&Write::Delete(route_kind(), "svc-httproute".into())),
        "{writes:?}"
    );
    assert!(
        writes.contains(&Write::Delete(gateway_kind(), "svc-gateway".into())),
        "{writes:?}"
    );
    assert!(object(&host, &gateway_kind(), "svc-gateway").is_none());
    // Once gone, nothing more to do.
    host.clear_writes();
    reconcile(&host);
    assert!(
        !host
            .writes()
            .iter()
            .any(|w| matches!(w, Write::Delete(k, _) if *k == gateway_kind() || *k == route_kind())),
        "{:?}",
        host.writes()
    );
}
