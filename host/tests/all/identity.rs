//! A plugin cannot take over what its object does not control, nor reach another RayCluster through the
//! fields of one it owns: applies over unowned objects, owner references to other objects, foreign
//! finalizers and names that are not Kubernetes names are refused; a RayCluster whose head Service name
//! or token Secret points at another cluster's reaches nothing of it. Each refusal shows on the Chaos
//! object's condition, as an Event and in `refused_calls_total`, while a well-behaved cluster in the same
//! operator keeps working and the victims stay untouched.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Secret, Service};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kuberay_testenv::{fixtures::small_cluster, proxy_http::ProxyHttp};
use serde_json::{Value, json};

use crate::{
    containment::{chaos_api, install_chaos_crd_for_tests},
    support::{
        OperatorOptions, env, eventually, logged, namespace, rayclusters, ready_cluster, start_operator,
    },
};

pub async fn create_chaos(api: &Api<DynamicObject>, name: &str, spec: Value) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos", "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

/// The message of the host's `Reconciled=False` condition on a Chaos object, once it says `needle`.
pub async fn refusal(api: &Api<DynamicObject>, name: &str, needle: &str) -> String {
    eventually(
        &format!("{name} to be refused with {needle:?}"),
        Duration::from_secs(90),
        || async {
            let object = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            let condition = object["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Reconciled" && c["status"] == "False")?
                .clone();
            let message = condition["message"].as_str()?;
            message.contains(needle).then(|| message.to_string())
        },
    )
    .await
}

fn job(submission_id: &str) -> String {
    json!({"entrypoint": "echo stolen", "submission_id": submission_id}).to_string()
}

#[tokio::test]
async fn plugins_adopt_nothing_and_reach_no_other_clusters_head() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "identity").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            ..OperatorOptions::default()
        },
    )
    .await;

    // The victims: a user's cluster with its token Secret, and a user's ConfigMap.
    let victim = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "victim"}, "spec": small_cluster()});
    rayclusters(&client, &ns)
        .patch(
            "victim",
            &PatchParams::apply("kuberay-wasm-tests"),
            &Patch::Apply(&victim),
        )
        .await
        .unwrap();
    let victim = ready_cluster(&client, &ns, "victim").await;
    let victim_uid = victim["metadata"]["uid"].as_str().unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    let token: Secret = serde_json::from_value(json!({
        "metadata": {"name": "victim-token", "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "name": "victim", "uid": victim_uid, "controller": true}]},
        "stringData": {"auth_token": "victims-token"},
    }))
    .unwrap();
    secrets.create(&PostParams::default(), &token).await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let bystander: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "bystander"}, "data": {"mine": "yes"}})).unwrap();
    let bystander = config_maps
        .create(&PostParams::default(), &bystander)
        .await
        .unwrap();
    let bystander_uid = bystander.metadata.uid.clone().unwrap();

    let chaos = chaos_api(&client, ns.name());
    // A well-behaved object: its own cluster, which takes a job submission.
    let own = json!({"behaviour": "ray", "cluster": small_cluster(), "method": "POST", "path": "/api/jobs/", "body": job("own")});
    create_chaos(&chaos, "good", own).await;

    // Its cluster's head Service is the victim's; its token Secret is the victim's.
    let mut stealing = small_cluster();
    stealing["headGroupSpec"]["headService"] = json!({"metadata": {"name": "victim-head-svc"}});
    let steal = json!({"behaviour": "ray", "cluster": stealing, "method": "POST", "path": "/api/jobs/", "body": job("stolen-svc")});
    create_chaos(&chaos, "steal", steal).await;
    let mut borrowing = small_cluster();
    borrowing["authOptions"] = json!({"mode": "token", "secretName": "victim-token"});
    let borrow = json!({"behaviour": "ray", "cluster": borrowing, "method": "POST", "path": "/api/jobs/", "body": job("stolen-token")});
    create_chaos(&chaos, "borrow", borrow).await;

    // Ownership tricks.
    let tricks = [
        ("adopt", json!({"target": "bystander"}), "plugins do not adopt"),
        (
            "foreign-owner",
            json!({"target": "bystander", "uid": bystander_uid}),
            "names another owner (ConfigMap bystander)",
        ),
        (
            "foreign-finalizer",
            json!({"target": "example.com/keep"}),
            "is not the plugin's own",
        ),
        (
            "add-finalizer",
            json!({"target": "example.com/keep"}),
            "declared no finalizer",
        ),
    ];
    for (behaviour, spec, _) in &tricks {
        let mut spec = spec.clone();
        spec["behaviour"] = json!(behaviour);
        create_chaos(&chaos, behaviour, spec).await;
    }
    // Names that are not Kubernetes names, at every host call that takes one.
    let bad_names = [
        ("get", "svc:8080/proxy/x"),
        ("delete", "bystander/../x"),
        ("apply", "svc:8080/proxy/x"),
        ("list", "a=b&watch=true"),
        ("event", "../../secrets"),
        ("ray", "victim-head-svc:8265/proxy"),
    ];
    for (call, target) in bad_names {
        let spec = json!({"behaviour": "bad-name", "call": call, "target": target});
        create_chaos(&chaos, &format!("bad-name-{call}"), spec).await;
    }

    // The good object works end to end: its own head got its submission.
    let own_head = ProxyHttp::service(client.clone(), ns.name(), "good-ray-head-svc", "dashboard");
    eventually(
        "the good object's job submission",
        Duration::from_secs(90),
        || async {
            let submissions = own_head.get("/testenv/submissions").await.ok()?.json().ok()?;
            submissions.get("own").map(drop)
        },
    )
    .await;

    let message = refusal(&chaos, "steal", "is not controlled by RayCluster steal-ray").await;
    assert!(message.contains("Service victim-head-svc"), "{message}");
    let message = refusal(&chaos, "borrow", "is not controlled by RayCluster borrow-ray").await;
    assert!(
        message.contains("the auth token Secret victim-token"),
        "{message}"
    );
    for (behaviour, _, needle) in &tricks {
        refusal(&chaos, behaviour, needle).await;
    }
    for (call, _) in bad_names {
        refusal(&chaos, &format!("bad-name-{call}"), "invalid").await;
    }
    // Refusals are in the log, with the object they were made for and the reason.
    for (name, needle) in [
        ("steal", "Service victim-head-svc"),
        ("adopt", "plugins do not adopt"),
    ] {
        let object = format!("object={}/{name}", ns.name());
        logged(&["refused", "plugin=chaos", &object, needle]).await;
    }

    // The victims are untouched: the victim's head got no submission, its Service and Secret are still
    // only its own, the bystander neither adopted nor rewritten, nothing created with foreign ties.
    let victim_head = ProxyHttp::service(client.clone(), ns.name(), "victim-head-svc", "dashboard");
    let received = victim_head
        .get("/testenv/submissions")
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(received, json!({}), "the victim's head received submissions");
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let service = services.get("victim-head-svc").await.unwrap();
    let owners = service.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners[0].uid, victim_uid);
    let bystander = config_maps.get("bystander").await.unwrap();
    assert!(bystander.metadata.owner_references.is_none(), "{bystander:?}");
    assert_eq!(bystander.data.unwrap()["mine"], "yes");
    for name in ["foreign-owner-owned", "foreign-finalizer-stuck"] {
        assert!(config_maps.get_opt(name).await.unwrap().is_none(), "{name}");
    }
    let add = serde_json::to_value(chaos.get("add-finalizer").await.unwrap()).unwrap();
    assert!(add["metadata"]["finalizers"].is_null(), "{add}");

    // Refusals are Events on the objects and counted.
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), ns.name());
    eventually(
        "an Event about the refused steal",
        Duration::from_secs(30),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.involved_object.name.as_deref() == Some("steal")
                        && e.message
                            .as_deref()
                            .is_some_and(|m| m.contains("victim-head-svc"))
                })
                .then_some(())
        },
    )
    .await;
    for (verb, at_least) in [
        ("ray-send", 3.0),
        ("apply", 4.0),
        ("add-finalizer", 1.0),
        ("get", 1.0),
        ("delete", 1.0),
        ("list", 1.0),
        ("record-event", 1.0),
    ] {
        let counted = operator.metric("kuberay_wasm_refused_calls_total", &[&format!("verb=\"{verb}\"")]);
        assert!(counted >= at_least, "{verb}: {counted} refusals counted");
    }
    // And the well-behaved clusters are still fine.
    ready_cluster(&client, &ns, "victim").await;
    ready_cluster(&client, &ns, "good-ray").await;
    operator.stop().await;
}
