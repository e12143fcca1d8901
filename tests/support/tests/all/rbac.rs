use k8s_openapi::api::{
    core::v1::{ConfigMap, Pod},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::json;

use crate::util::{create, env};

fn forbidden<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(ref e)) if e.code == 403)
}

#[tokio::test]
async fn rbac_limits_non_admin_users_to_what_they_are_granted() {
    let env = env().await;
    let admin = env.client().await.unwrap();
    let alice = env.client_as("alice").await.unwrap();
    let bob = env.client_as("bob").await.unwrap();
    let ns = env.namespace("rbac").await.unwrap();
    let other = env.namespace("rbac-other").await.unwrap();

    let alice_pods: Api<Pod> = Api::namespaced(alice.clone(), ns.name());
    assert!(
        forbidden(alice_pods.list(&ListParams::default()).await),
        "alice listed pods without a grant"
    );

    let _: Role = create(
        &admin,
        &ns,
        json!({"metadata": {"name": "pod-reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    )
    .await;
    let _: RoleBinding = create(
        &admin,
        &ns,
        json!({
            "metadata": {"name": "alice-reads-pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
        }),
    )
    .await;
    let _: Pod = create(
        &admin,
        &ns,
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;

    // RBAC changes take effect as soon as the authorizer's informers see them.
    let listed = crate::util::eventually(
        "alice's grant to apply",
        std::time::Duration::from_secs(10),
        || async { alice_pods.list(&ListParams::default()).await.ok() },
    )
    .await;
    assert_eq!(listed.items.len(), 1);
    assert!(
        forbidden(alice_pods.delete("p", &DeleteParams::default()).await),
        "alice deleted without the verb"
    );
    let alice_cms: Api<ConfigMap> = Api::namespaced(alice.clone(), ns.name());
    assert!(
        forbidden(alice_cms.list(&ListParams::default()).await),
        "alice read another resource"
    );
    let alice_other: Api<Pod> = Api::namespaced(alice, other.name());
    assert!(
        forbidden(alice_other.list(&ListParams::default()).await),
        "alice read another namespace"
    );
    let bob_pods: Api<Pod> = Api::namespaced(bob.clone(), ns.name());
    assert!(
        forbidden(bob_pods.list(&ListParams::default()).await),
        "bob used alice's grant"
    );
    let bob_cms: Api<ConfigMap> = Api::namespaced(bob, ns.name());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    assert!(
        forbidden(bob_cms.create(&PostParams::default(), &cm).await),
        "bob created without a grant"
    );
}
