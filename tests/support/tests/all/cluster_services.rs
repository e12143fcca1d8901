//! Services by name and ClusterIP from inside Pods: the cluster DNS answers `<service>.<namespace>.svc.cluster.local`
//! (and the short forms through the search path a kubelet writes) and the Service proxy relays a ClusterIP's
//! port to a ready endpoint's `targetPort`. Checked with the programs a container would use (getent, curl),
//! run in the Pod with `kubectl exec`.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use serde_json::json;

use crate::{
    exec::{exec, map_images, pod, text},
    util::{create, env, eventually},
};

#[tokio::test]
async fn pods_reach_services_by_name_and_cluster_ip() {
    let env = env().await;
    map_images(env);
    let ns = env.namespace("services").await.unwrap();
    pod(env, &ns).await;
    let client = env.client().await.unwrap();
    let web: Service = create(
        &client,
        &ns,
        json!({"metadata": {"name": "web"},
               "spec": {"selector": {"app": "target"},
                        "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}),
    )
    .await;
    let _: Service = create(
        &client,
        &ns,
        json!({"metadata": {"name": "direct"},
               "spec": {"clusterIP": "None", "selector": {"app": "target"}, "ports": [{"port": 8082}]}}),
    )
    .await;
    let _: Service = create(
        &client,
        &ns,
        json!({"metadata": {"name": "nobody"},
               "spec": {"selector": {"app": "nothing-has-this"}, "ports": [{"port": 81}]}}),
    )
    .await;
    let cluster_ip = web.spec.unwrap().cluster_ip.unwrap();
    let pod_ip = Api::<Pod>::namespaced(client.clone(), ns.name())
        .get("target")
        .await
        .unwrap()
        .status
        .unwrap()
        .pod_ip
        .unwrap();

    // A short name resolves through the search path to the ClusterIP; the full name too.
    let fqdn = format!("web.{}.svc.cluster.local", ns.name());
    for name in ["web", &format!("web.{}", ns.name()), &fqdn] {
        let out = exec(env, &ns, "tools", &["getent", "hosts", name], false);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).starts_with(&format!("{cluster_ip} ")),
            "{name}: {}",
            text(&out.stdout)
        );
    }
    // A headless Service's name is its ready endpoints' addresses.
    let out = exec(env, &ns, "tools", &["getent", "hosts", "direct"], false);
    assert!(
        text(&out.stdout).starts_with(&format!("{pod_ip} ")),
        "{}",
        text(&out.stdout)
    );
    // A name that is not there fails at once.
    let out = exec(env, &ns, "tools", &["getent", "hosts", "no-such-service"], false);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));

    // Port 80 of the ClusterIP reaches the endpoint's named target port 8082, once the EndpointSlice is there.
    let body = eventually("the web Service to answer", Duration::from_secs(30), || async {
        let out = exec(
            env,
            &ns,
            "tools",
            &["curl", "-sf", "--max-time", "5", "http://web/readyz"],
            false,
        );
        out.status.success().then(|| text(&out.stdout))
    })
    .await;
    assert_eq!(body, "ok");
    let out = exec(
        env,
        &ns,
        "tools",
        &["curl", "-sf", &format!("http://{fqdn}:80/readyz")],
        false,
    );
    assert_eq!(text(&out.stdout), "ok", "{}", text(&out.stderr));
    // A Service without a ready endpoint refuses the connection.
    let out = exec(
        env,
        &ns,
        "tools",
        &["curl", "-s", "--max-time", "5", "http://nobody:81/"],
        false,
    );
    assert!(!out.status.success(), "{}", text(&out.stdout));
    ns.delete(&client).await.unwrap();
}
