//! Clusters and compute templates over REST, as a user with rights in one namespace.

use kuberay_testenv::HeadMode;
use serde_json::json;

use crate::support::{Server, User, cluster, env, expect, namespace, template};

#[tokio::test]
async fn a_user_manages_templates_and_clusters_in_their_namespace() {
    let env = env().await;
    let ns = namespace(env, "rest-clusters", HeadMode::Fake).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&user.token));
    let base = format!("/apis/v1/namespaces/{}", ns.name());

    let created = expect(
        rest.post(&format!("{base}/compute_templates"), &template("small", 1))
            .await,
        200,
    );
    assert_eq!(created["namespace"], ns.name());
    let created = expect(
        rest.post(
            &format!("{base}/clusters"),
            &cluster("demo", "ray-user", "small", 1),
        )
        .await,
        200,
    );
    assert_eq!(created["name"], "demo");
    assert_eq!(
        created["clusterSpec"]["headGroupSpec"]["computeTemplate"],
        "small"
    );
    let listed = expect(rest.get(&format!("{base}/clusters")).await, 200);
    assert_eq!(listed["clusters"].as_array().map(Vec::len), Some(1), "{listed}");
    expect(rest.get(&format!("{base}/clusters/demo")).await, 200);
    let missing = expect(rest.get(&format!("{base}/clusters/nope")).await, 404);
    assert_eq!(missing["code"], json!(5));
    expect(rest.delete(&format!("{base}/clusters/demo")).await, 200);
    expect(rest.get(&format!("{base}/clusters/demo")).await, 404);
    server.stop().await.unwrap();
}
