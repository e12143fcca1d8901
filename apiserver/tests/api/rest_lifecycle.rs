//! A cluster's life over REST with the operator running: a user with the user role in one namespace creates
//! a compute template and clusters, watches them become `ready`, lists them in pages, reads one and deletes
//! it, and the RayCluster with its Pods is gone from Kubernetes.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, api::ListParams};
use kuberay_testenv::HeadMode;
use serde_json::Value;

use crate::{
    flows::{FAKE_READY, Tenant, ready_cluster, wait_for},
    operator::Operator,
    support::{Server, cluster, env, expect, template},
};

fn names(page: &Value) -> Vec<String> {
    page["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn clusters_created_over_rest_become_ready_are_listed_in_pages_and_deleted() {
    let env = env().await;
    let tenant = Tenant::new(env, "rest-lifecycle", HeadMode::Fake).await;
    let operator = Operator::start(env, &tenant.ns).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&tenant.user.token));
    let base = tenant.base();
    let admin = env.client().await.unwrap();

    expect(
        rest.post(&format!("{base}/compute_templates"), &template("small", 1))
            .await,
        200,
    );
    let all = ["alpha", "beta", "gamma"];
    for (i, name) in all.iter().enumerate() {
        let workers = if i == 0 { 1 } else { 0 };
        let created = expect(
            rest.post(
                &format!("{base}/clusters"),
                &cluster(name, "ray-user", "small", workers),
            )
            .await,
            200,
        );
        assert_eq!(created["name"], *name, "{created}");
        assert!(
            created.get("clusterState").is_none(),
            "a new cluster has no state yet: {created}"
        );
    }

    // The operator makes each one ready; what the API reports comes from its status and events.
    let alpha = ready_cluster(&rest, &base, "alpha", FAKE_READY).await;
    assert_eq!(
        alpha["clusterSpec"]["headGroupSpec"]["computeTemplate"], "small",
        "{alpha}"
    );
    assert_eq!(
        alpha["clusterSpec"]["workerGroupSpec"][0]["replicas"], 1,
        "{alpha}"
    );
    assert!(
        alpha["serviceEndpoint"]["dashboard"].is_string(),
        "the head Service's ports, from the status: {alpha}"
    );
    assert!(alpha["createdAt"].is_string(), "{alpha}");
    let pods: Api<Pod> = Api::namespaced(admin.clone(), tenant.name());
    wait_for(
        "alpha's head and worker Pods",
        Duration::from_secs(30),
        || async {
            let listed = pods
                .list(&ListParams::default().labels("ray.io/cluster=alpha"))
                .await
                .map_err(|e| e.to_string())?;
            let names: Vec<_> = listed
                .items
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            if names.len() == 2 {
                Ok(())
            } else {
                Err(format!("{names:?}"))
            }
        },
    )
    .await;
    wait_for(
        "the operator's events on alpha",
        Duration::from_secs(30),
        || async {
            let (_, cluster) = rest.get(&format!("{base}/clusters/alpha")).await;
            let reasons: Vec<&str> = cluster["events"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["reason"].as_str())
                .collect();
            if reasons.is_empty() {
                Err(format!("no events: {cluster}"))
            } else {
                Ok(())
            }
        },
    )
    .await;
    for name in &all[1..] {
        ready_cluster(&rest, &base, name, FAKE_READY).await;
    }

    // Pages of two: the first has a continue token, the second ends the list.
    let first = expect(rest.get(&format!("{base}/clusters?limit=2")).await, 200);
    assert_eq!(names(&first).len(), 2, "{first}");
    let token = first["continue"]
        .as_str()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| panic!("a first page of two out of three has a continue token: {first}"));
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("limit", "2")
        .append_pair("continue", token)
        .finish();
    let second = expect(rest.get(&format!("{base}/clusters?{query}")).await, 200);
    assert_eq!(names(&second).len(), 1, "{second}");
    assert!(
        second["continue"].as_str().unwrap_or_default().is_empty(),
        "the last page has no continue token: {second}"
    );
    let mut listed = [names(&first), names(&second)].concat();
    listed.sort();
    assert_eq!(listed, all, "the pages together list every cluster once");
    let whole = expect(rest.get(&format!("{base}/clusters")).await, 200);
    for cluster in whole["clusters"].as_array().unwrap() {
        assert_eq!(cluster["clusterState"], "ready", "{cluster}");
    }

    let beta = expect(rest.get(&format!("{base}/clusters/beta")).await, 200);
    assert_eq!(beta["namespace"], tenant.name());
    assert_eq!(beta["user"], "ray-user");

    // Deleting goes through to Kubernetes: the RayCluster and its Pods go away.
    expect(rest.delete(&format!("{base}/clusters/alpha")).await, 200);
    let clusters: Api<kuberay_crds::RayCluster> = Api::namespaced(admin.clone(), tenant.name());
    wait_for(
        "RayCluster alpha and its Pods to be gone",
        Duration::from_secs(60),
        || async {
            let cluster = clusters.get_opt("alpha").await.map_err(|e| e.to_string())?;
            let left = pods
                .list(&ListParams::default().labels("ray.io/cluster=alpha"))
                .await
                .map_err(|e| e.to_string())?
                .items
                .len();
            if cluster.is_none() && left == 0 {
                Ok(())
            } else {
                Err(format!("cluster exists: {}, {left} Pods", cluster.is_some()))
            }
        },
    )
    .await;
    expect(rest.get(&format!("{base}/clusters/alpha")).await, 404);
    let after = expect(rest.get(&format!("{base}/clusters")).await, 200);
    assert_eq!(names(&after), ["beta", "gamma"], "{after}");

    server.stop().await.unwrap();
    tenant.remove(env).await;
    operator.stop().await;
}
