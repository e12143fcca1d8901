//! Changes to a running RayService: `serveConfigV2` in place, `rayClusterConfig` blue/green (`NewCluster`),
//! appended worker groups in place, `None`, a failed deploy on the new cluster, and the old cluster's
//! deletion after the delay.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

use common::*;
use kuberay_plugin_sdk::testing::Write;
use serde_json::{Value, json};

fn serve_selector(host: &kuberay_plugin_sdk::testing::FakeHost) -> Value {
    host.objects(&service_kind())
        .into_iter()
        .find(|s| s["metadata"]["name"] == "svc-serve-svc")
        .map(|s| s["spec"]["selector"]["ray.io/cluster"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn a_serve_config_change_is_deployed_to_the_running_cluster() {
    let (host, heads) = host(rayservice(json!({})));
    let name = bring_up(&host);
    edit_spec(&host, |spec| {
        spec["serveConfigV2"] = json!(SERVE_CONFIG.replace("num_replicas: 1", "num_replicas: 3"));
    });
    reconcile(&host);
    assert_eq!(heads.lock().unwrap().puts, vec![name.clone(), name.clone()]);
    assert_eq!(
        heads.lock().unwrap().configs[&name]["applications"][0]["deployments"][0]["num_replicas"],
        3
    );
    assert_eq!(pending_name(&host), None, "a Serve change prepared a new cluster");
    reconcile(&host);
    assert_eq!(heads.lock().unwrap().puts.len(), 2);
}

#[test]
fn a_cluster_change_is_rolled_out_blue_green_and_the_old_cluster_deleted_after_the_delay() {
    let (host, heads) = host(rayservice(json!({"rayClusterDeletionDelaySeconds": 30})));
    let old = bring_up(&host);
    edit_spec(&host, |spec| {
        spec["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = json!({"num-cpus": "0"});
    });
    reconcile(&host);
    let new = pending_name(&host).expect("a new pending cluster");
    assert_ne!(new, old);
    assert_eq!(condition(&host, "UpgradeInProgress")["status"], "True");
    assert_eq!(
        condition(&host, "UpgradeInProgress")["reason"],
        "BothActivePendingClustersExist"
    );
    reconcile(&host);
    assert!(creates(&host, &cluster_kind()).contains(&new));
    assert!(
        applies(&host, &cluster_kind()).is_empty(),
        "the active cluster was changed in place"
    );

    // The new cluster's head comes up and its applications deploy; the traffic stays until they run.
    head_ready(&host, &new);
    reconcile(&host);
    assert_eq!(heads.lock().unwrap().puts.last(), Some(&new));
    assert_eq!(serve_selector(&host), json!(old));
    reconcile(&host);
    assert_eq!(serve_selector(&host), json!(new));
    assert_eq!(active_name(&host), Some(new.clone()));
    assert_eq!(pending_name(&host), None);
    assert_eq!(condition(&host, "UpgradeInProgress")["status"], "False");
    let events: Vec<String> = host.events().iter().map(|e| e.reason.clone()).collect();
    assert!(events.contains(&"UpdatedService".to_string()), "{events:?}");

    // The old cluster lives on for the delay, and goes after it; a restart in between changes nothing.
    reconcile(&host);
    assert!(
        host.objects(&cluster_kind())
            .iter()
            .any(|c| c["metadata"]["name"] == old.as_str())
    );
    advance(&host, 31);
    reconcile(&host);
    assert!(
        host.writes()
            .contains(&Write::Delete(cluster_kind(), old.clone()))
    );
    assert!(
        host.objects(&cluster_kind())
            .iter()
            .all(|c| c["metadata"]["name"] != old.as_str())
    );
}

#[test]
fn a_failed_deploy_on_the_new_cluster_keeps_the_old_one_serving() {
    let (host, _) = host(rayservice(json!({"rayClusterDeletionDelaySeconds": 0})));
    let old = bring_up(&host);
    edit_spec(&host, |spec| {
        spec["rayClusterConfig"]["rayVersion"] = json!("2.53.0");
        spec["serveConfigV2"] = json!(SERVE_CONFIG.replace("m:app", "m:fail"));
    });
    reconcile(&host);
    let new = pending_name(&host).unwrap();
    reconcile(&host);
    head_ready(&host, &new);
    for _ in 0..3 {
        reconcile(&host);
    }
    let status = status(&host);
    assert_eq!(
        status["pendingServiceStatus"]["applicationStatuses"]["app1"]["status"],
        "DEPLOY_FAILED"
    );
    assert_eq!(status["activeServiceStatus"]["rayClusterName"], old.as_str());
    assert_eq!(serve_selector(&host), json!(old));
    assert_eq!(condition(&host, "Ready")["status"], "True");
    assert!(
        host.objects(&cluster_kind())
            .iter()
            .any(|c| c["metadata"]["name"] == old.as_str())
    );
}

#[test]
fn appended_worker_groups_update_the_cluster_in_place() {
    let (host, _) = host(rayservice(json!({})));
    let name = bring_up(&host);
    edit_spec(&host, |spec| {
        let mut group = spec["rayClusterConfig"]["workerGroupSpecs"][0].clone();
        group["groupName"] = json!("large");
        spec["rayClusterConfig"]["workerGroupSpecs"]
            .as_array_mut()
            .unwrap()
            .push(group);
    });
    host.clear_writes();
    reconcile(&host);
    assert_eq!(applies(&host, &cluster_kind()), vec![name.clone()]);
    assert_eq!(pending_name(&host), None);
    let cluster = host.objects(&cluster_kind()).pop().unwrap();
    assert_eq!(cluster["spec"]["workerGroupSpecs"].as_array().unwrap().len(), 2);
    assert_eq!(
        cluster["metadata"]["annotations"]["ray.io/num-worker-groups"],
        "2"
    );
}

#[test]
fn replica_changes_need_neither_a_new_cluster_nor_an_update() {
    let (host, _) = host(rayservice(json!({})));
    bring_up(&host);
    edit_spec(&host, |spec| {
        spec["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] = json!(4)
    });
    host.clear_writes();
    reconcile(&host);
    assert!(applies(&host, &cluster_kind()).is_empty());
    assert_eq!(pending_name(&host), None);
}

#[test]
fn the_none_strategy_keeps_the_cluster() {
    let (host, heads) = host(rayservice(json!({"upgradeStrategy": {"type": "None"}})));
    let name = bring_up(&host);
    edit_spec(&host, |spec| {
        spec["rayClusterConfig"]["rayVersion"] = json!("2.53.0");
        spec["serveConfigV2"] = json!(SERVE_CONFIG.replace("route_prefix: /", "route_prefix: /v2"));
    });
    host.clear_writes();
    reconcile(&host);
    assert_eq!(pending_name(&host), None);
    assert!(applies(&host, &cluster_kind()).is_empty());
    assert_eq!(
        heads.lock().unwrap().puts.last(),
        Some(&name),
        "the Serve change still goes to the cluster"
    );
}

#[test]
fn kuberays_zero_downtime_toggle_off_keeps_the_cluster_unless_a_strategy_says_otherwise() {
    let zero_downtime_off = json!({"kuberayEnv": {"ENABLE_ZERO_DOWNTIME": "false"}});
    for (strategy, new_cluster) in [
        (json!({}), false),
        (json!({"upgradeStrategy": {"type": "NewCluster"}}), true),
    ] {
        let (host, _) = host(rayservice(strategy.clone()));
        let host = host.with_config(zero_downtime_off.clone());
        bring_up(&host);
        edit_spec(&host, |spec| {
            spec["rayClusterConfig"]["rayVersion"] = json!("2.53.0")
        });
        reconcile(&host);
        assert_eq!(pending_name(&host).is_some(), new_cluster, "{strategy}");
    }
}
