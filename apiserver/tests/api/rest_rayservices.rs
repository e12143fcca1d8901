//! RayService objects over REST: created, read, listed in pages, replaced and deleted by a user with the
//! user role, checked against what Kubernetes stores. There is no RayService plugin yet, so no operator
//! runs and only the objects and their conversions are checked.

use std::time::Duration;

use kube::Api;
use kuberay_crds::RayService;
use kuberay_testenv::HeadMode;
use serde_json::{Value, json};

use crate::{
    flows::Tenant,
    support::{Server, env, eventually, expect, template},
};

/// A Serve config of one application with `replicas` replicas.
pub fn serve_config(replicas: u32) -> String {
    format!(
        "applications:\n  - name: fruit\n    import_path: fruit.deployment_graph\n    deployments:\n      - name: MangoStand\n        num_replicas: {replicas}\n"
    )
}

/// A RayService on a cluster of one head and one worker, all of template `template`.
pub fn service(name: &str, template: &str, replicas: u32) -> Value {
    json!({
        "name": name, "user": "ray-user", "version": "2.9.0",
        "serveConfigV2": serve_config(replicas),
        "clusterSpec": {
            "headGroupSpec": {"computeTemplate": template, "rayStartParams": {"dashboard-host": "0.0.0.0"}},
            "workerGroupSpec": [{"groupName": "workers", "computeTemplate": template, "replicas": 1,
                "minReplicas": 1, "maxReplicas": 2, "rayStartParams": {}}],
        },
    })
}

#[tokio::test]
async fn a_user_creates_reads_lists_updates_and_deletes_rayservices_over_rest() {
    let env = env().await;
    let tenant = Tenant::new(env, "rest-rayservice", HeadMode::Fake).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&tenant.user.token));
    let base = tenant.base();
    let stored: Api<RayService> = Api::namespaced(env.client().await.unwrap(), tenant.name());
    let stored_config = |service: RayService| service.spec.serve_config_v2.unwrap_or_default();

    expect(
        rest.post(&format!("{base}/compute_templates"), &template("small", 1))
            .await,
        200,
    );
    for name in ["fruit", "veggie"] {
        let created = expect(
            rest.post(&format!("{base}/services"), &service(name, "small", 1))
                .await,
            200,
        );
        assert_eq!(created["name"], name, "{created}");
        assert_eq!(created["serveConfigV2"], serve_config(1), "{created}");
    }
    let fruit = expect(rest.get(&format!("{base}/services/fruit")).await, 200);
    assert_eq!(fruit["serveConfigV2"], serve_config(1), "{fruit}");
    assert_eq!(
        fruit["clusterSpec"]["workerGroupSpec"][0]["computeTemplate"], "small",
        "{fruit}"
    );
    let object = stored.get("fruit").await.unwrap();
    assert_eq!(stored_config(object.clone()), serve_config(1));
    let labels = object.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("app.kubernetes.io/managed-by").map(String::as_str),
        Some("kuberay-apiserver")
    );

    // Pages of one.
    let first = expect(rest.get(&format!("{base}/services?pageSize=1")).await, 200);
    let token = first["nextPageToken"].as_str().unwrap_or_default();
    assert_eq!(first["services"].as_array().map(Vec::len), Some(1), "{first}");
    assert!(
        !token.is_empty(),
        "a first page of one out of two has a token: {first}"
    );
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("pageSize", "1")
        .append_pair("pageToken", token)
        .finish();
    let second = expect(rest.get(&format!("{base}/services?{query}")).await, 200);
    assert_eq!(second["services"].as_array().map(Vec::len), Some(1), "{second}");
    assert!(
        second["nextPageToken"].as_str().unwrap_or_default().is_empty(),
        "{second}"
    );
    assert_ne!(first["services"][0]["name"], second["services"][0]["name"]);

    // A full replacement changes the stored Serve config and stamps the update.
    let updated = expect(
        rest.put(&format!("{base}/services/fruit"), &service("fruit", "small", 3))
            .await,
        200,
    );
    assert_eq!(updated["serveConfigV2"], serve_config(3), "{updated}");
    let object = stored.get("fruit").await.unwrap();
    assert_eq!(
        stored_config(object.clone()),
        serve_config(3),
        "what Kubernetes stores"
    );
    let annotations = object.metadata.annotations.unwrap_or_default();
    assert!(
        annotations.contains_key("ray.io/update-timestamp"),
        "{annotations:?}"
    );
    let read = expect(rest.get(&format!("{base}/services/fruit")).await, 200);
    assert_eq!(read["serveConfigV2"], serve_config(3), "{read}");
    let missing = expect(
        rest.put(&format!("{base}/services/nope"), &service("nope", "small", 1))
            .await,
        404,
    );
    assert_eq!(missing["code"], 5, "{missing}");

    expect(rest.delete(&format!("{base}/services/fruit")).await, 200);
    eventually("RayService fruit to be gone", Duration::from_secs(30), || async {
        matches!(stored.get_opt("fruit").await, Ok(None)).then_some(())
    })
    .await;
    expect(rest.get(&format!("{base}/services/fruit")).await, 404);
    let left = expect(rest.get(&format!("{base}/services")).await, 200);
    let names: Vec<&str> = left["services"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["veggie"], "{left}");

    server.stop().await.unwrap();
    tenant.remove(env).await;
}
