//! Plugins named by a `ReconcilePlugin` resource, pulled from the test environment's registry (TLS, a user
//! and password from a `dockerconfigjson` Secret): a version serves, a new one replaces it while the
//! clusters created before and after are both reconciled, a broken one and every bad input are refused with
//! the serving version untouched, pointing back is a rollback, and a deleted resource stops its kind.
//!
//! The resource is cluster-scoped and named after the plugin, so one test owns the name `raycluster`.

use std::{path::Path, time::Duration};

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api, Client,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use kuberay_testenv::{crds, fixtures::poll_until};
use kuberay_wasm::{
    policy::Policy,
    reconcileplugin::{
        ResourceOptions,
        artifact::{Registry, RegistryOptions},
        resource::ReconcilePlugin,
    },
};
use oci_client::secrets::RegistryAuth;
use serde_json::{Value, json};

use crate::support::{
    OperatorOptions, apply, env, eventually, log_line, namespace, pods, rayclusters, start_operator,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// A component with a different digest and the same behaviour: `wasm` with a custom section appended.
fn variant(wasm: &[u8], tag: &str) -> Vec<u8> {
    let name = "kuberay-wasm-test";
    let payload_len = 1 + name.len() + tag.len();
    let mut out = wasm.to_vec();
    out.push(0); // custom section
    out.push(u8::try_from(payload_len).unwrap());
    out.push(u8::try_from(name.len()).unwrap());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(tag.as_bytes());
    out
}

async fn status(api: &Api<ReconcilePlugin>, name: &str) -> Value {
    let object = api.get(name).await.unwrap();
    serde_json::to_value(object.status).unwrap_or_default()
}

fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Waits until the resource's status satisfies `check`, and returns it.
async fn until(api: &Api<ReconcilePlugin>, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    until_named(api, "raycluster", what, check).await
}

async fn set_artifact(api: &Api<ReconcilePlugin>, spec: Value) {
    api.patch(
        "raycluster",
        &PatchParams::default(),
        &Patch::Merge(&json!({ "spec": spec })),
    )
    .await
    .unwrap();
}

async fn head_pod(client: &Client, ns: &kuberay_testenv::TestNamespace, cluster: &str) {
    eventually(&format!("the head Pod of {cluster}"), TIMEOUT, || async {
        let found = pods(
            client,
            ns,
            &format!("ray.io/cluster={cluster},ray.io/node-type=head"),
        )
        .await;
        (!found.is_empty()).then_some(())
    })
    .await;
}

fn raycluster(name: &str) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_rolls_a_plugin_out_back_and_refuses_bad_versions_while_the_old_one_serves() {
    let Setup {
        env,
        client,
        ns,
        registry,
    } = setup("rplugin").await;

    // v1, v2 (same plugin, another digest) and a broken version, pushed with the library's client.
    let wasm = std::fs::read(kuberay_plugin_artifacts::RAYCLUSTER).unwrap();
    let mut pushed = Vec::new();
    for (tag, bytes) in [
        ("v1", wasm.clone()),
        ("v2", variant(&wasm, "v2")),
        ("broken", b"\0asm not a component".to_vec()),
        // Never pulled before the step that needs credentials: a version in memory needs none.
        ("v3", variant(&wasm, "v3")),
    ] {
        pushed.push(push(registry, ns.name(), "raycluster", tag, bytes).await);
    }
    let repository = format!("{}/{}/raycluster", registry.host_port, ns.name());
    let [v1, v2, broken, v3] = <[String; 4]>::try_from(pushed).unwrap();
    // A component, but of no world of ours: it exports nothing.
    let empty = wat::parse_str("(component)").unwrap();
    let other_world = push(registry, ns.name(), "raycluster", "other-world", empty).await;

    pull_secret(&client, &ns, registry).await;
    // The right user with a wrong password.
    let wrong_password = serde_json::to_string(&json!({"auths": {registry.host_port.as_str(): {
        "username": registry.username, "password": "not-the-password"}}}))
    .unwrap();
    docker_config_secret(&client, &ns, "badcred", wrong_password).await;

    // The operator serves RayClusters only through the resource: the file's raycluster entry is disabled.
    let selector = format!("kuberay-wasm-test={}", ns.name());
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![],
            policy: Some(Policy::builtin().without(&["raycluster".into()]).unwrap()),
            resources: Some(ResourceOptions {
                namespace: Some(ns.name().to_string()),
                selector: Some(selector.clone()),
                allow_tags: false,
                registry: registry_options(registry),
            }),
            ..OperatorOptions::default()
        },
    )
    .await;

    let api: Api<ReconcilePlugin> = Api::all(client.clone());
    let _ = api.delete("raycluster", &DeleteParams::default()).await;
    let resource: ReconcilePlugin = serde_json::from_value(json!({
        "apiVersion": "plugins.kuberay-wasm.io/v1alpha1", "kind": "ReconcilePlugin",
        "metadata": {"name": "raycluster", "labels": {"kuberay-wasm-test": ns.name()}},
        "spec": {
            "artifact": v1, "reconciles": "ray.io/v1/RayCluster", "pullSecret": "regcred",
            "grant": {
                "owns": ["v1/Pod", "v1/Service", "v1/ServiceAccount", "rbac.authorization.k8s.io/v1/Role",
                         "rbac.authorization.k8s.io/v1/RoleBinding", "networking.k8s.io/v1/Ingress", "batch/v1/Job", "v1/Secret"],
                "verbs": {
                    "ray.io/v1/RayCluster": ["apply-status", "finalize", "record-event"],
                    "v1/Pod": ["get", "list", "create", "apply", "delete"],
                    "v1/Service": ["get", "list", "apply"],
                    "v1/ServiceAccount": ["get", "apply"],
                },
                "finalizer": "ray.io/gcs-ft-redis-cleanup-finalizer",
            },
        },
    }))
    .unwrap();
    api.create(&PostParams::default(), &resource).await.unwrap();
    let digest_of = |r: &str| r.rsplit_once('@').unwrap().1.to_string();
    let (d1, d2) = (digest_of(&v1), digest_of(&v2));
    let first = until(&api, "v1 to serve", |s| s["digest"] == d1.as_str()).await;
    assert_eq!(condition(&first, "Ready").unwrap()["status"], "True", "{first}");
    assert_eq!(
        condition(&first, "Degraded").unwrap()["status"],
        "False",
        "{first}"
    );
    assert_eq!(first["shortDigest"], d1.trim_start_matches("sha256:")[..12]);
    // The installation that wrote it, so that two installations serving one resource can be told apart.
    assert_eq!(first["operator"], format!("test-{}", ns.name()), "{first}");

    let clusters = rayclusters(&client, &ns);
    apply(&clusters, &raycluster("before")).await;
    head_pod(&client, &ns, "before").await;

    // A new version serves; the cluster created before it and one created after are both reconciled.
    set_artifact(&api, json!({"artifact": v2})).await;
    let second = until(&api, "v2 to serve", |s| s["digest"] == d2.as_str()).await;
    assert_eq!(second["previousDigest"], d1.as_str(), "{second}");
    apply(&clusters, &raycluster("after")).await;
    head_pod(&client, &ns, "after").await;
    assert_eq!(
        operator.metric("kuberay_wasm_reconcile_errors_total", &["RayCluster"]),
        0.0,
        "no reconcile failed during the swap"
    );

    // Bad versions are refused and v2 keeps serving.
    for (spec, reason) in [
        (json!({"artifact": broken}), "NotAComponent"),
        (json!({"artifact": format!("{repository}:v1")}), "InvalidArtifact"),
        (
            json!({"artifact": format!("{repository}@sha256:{}", "0".repeat(64))}),
            "ArtifactNotFound",
        ),
        (
            json!({"artifact": v3, "pullSecret": "missing"}),
            "PullSecretUnavailable",
        ),
        (
            json!({"artifact": v3, "pullSecret": "badcred"}),
            "RegistryUnauthorized",
        ),
        // A registry that is down: nothing listens on port 1.
        (
            json!({"artifact": format!("127.0.0.1:1/{}/raycluster@{}", ns.name(), digest_of(&v3)), "pullSecret": null}),
            "RegistryUnavailable",
        ),
        (
            json!({"artifact": other_world, "pullSecret": "regcred"}),
            "WrongWorld",
        ),
        // A configuration the plugin refuses (at load time, when asked for its metadata).
        (
            json!({"artifact": v1, "config": {"clusterDomain": "Not A Domain"}}),
            "InvalidMetadata",
        ),
        // The plugin declares a finalizer the grant no longer allows: it asks for more than it is granted.
        (
            json!({"artifact": v1, "config": null, "grant": {"finalizer": null}}),
            "GrantRefused",
        ),
        (
            json!({"artifact": v1, "pullSecret": "regcred", "reconciles": "ray.io/v1/RayJob"}),
            "PluginClash",
        ),
        (
            json!({"reconciles": "ray.io/v1/RayCluster", "grant": {"surprise": 1}}),
            "InvalidGrant",
        ),
    ] {
        set_artifact(&api, spec.clone()).await;
        let refused = until(&api, &format!("{reason} for {spec}"), |s| {
            condition(s, "Degraded").is_some_and(|c| c["reason"] == reason)
        })
        .await;
        assert_eq!(
            refused["digest"],
            d2.as_str(),
            "{reason}: v2 keeps serving: {refused}"
        );
        assert_eq!(
            condition(&refused, "Ready").unwrap()["status"],
            "True",
            "{refused}"
        );
        assert!(
            refused["lastError"].as_str().is_some_and(|e| !e.is_empty()),
            "{refused}"
        );
        if reason == "InvalidMetadata" {
            // The plugin's own words reach the status.
            assert!(
                refused["lastError"].as_str().is_some_and(
                    |e| e.contains("configuration refused: clusterDomain must be a DNS subdomain")
                ),
                "{refused}"
            );
        }
    }
    // Back to a good spec (the grant restored), pointing at v1: a rollback.
    let mut good = serde_json::to_value(&resource.spec).unwrap();
    good["artifact"] = json!(v1);
    api.patch(
        "raycluster",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"grant": null}})),
    )
    .await
    .unwrap();
    set_artifact(&api, good).await;
    let back = until(&api, "the rollback to v1", |s| {
        s["digest"] == d1.as_str() && condition(s, "Degraded").is_some_and(|c| c["status"] == "False")
    })
    .await;
    assert_eq!(back["previousDigest"], d2.as_str(), "{back}");
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::all(client.clone());
    eventually("a PluginRolledBack event", TIMEOUT, || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("PluginRolledBack")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("raycluster")
            })
            .then_some(())
    })
    .await;

    // Deleted: the kind is no longer reconciled, and says so.
    api.delete("raycluster", &DeleteParams::default()).await.unwrap();
    eventually("the withdrawal to be logged", TIMEOUT, || async {
        log_line(&["the ReconcilePlugin raycluster was deleted"]).map(|_| ())
    })
    .await;
    apply(&clusters, &raycluster("orphan")).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        pods(&client, &ns, "ray.io/cluster=orphan").await.is_empty(),
        "a RayCluster is not reconciled once its plugin's resource is gone"
    );
    operator.stop().await;
}

/// A test namespace, the ReconcilePlugin CRD installed, and the environment's registry.
pub(crate) struct Setup {
    pub(crate) env: &'static kuberay_testenv::TestEnv,
    pub(crate) client: Client,
    pub(crate) ns: kuberay_testenv::TestNamespace,
    pub(crate) registry: &'static kuberay_testenv::registry::Registry,
}

pub(crate) async fn setup(prefix: &str) -> Setup {
    let env = env().await;
    let client = env.client().await.unwrap();
    crds::install(
        &client,
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds"),
    )
    .await
    .unwrap();
    let ns = namespace(env, prefix).await;
    let registry = env.registry().expect("the test environment's registry");
    Setup {
        env,
        client,
        ns,
        registry,
    }
}

/// The pull Secret `regcred`, in the namespace the tests' operators take for their own.
pub(crate) async fn pull_secret(
    client: &Client,
    ns: &kuberay_testenv::TestNamespace,
    registry: &kuberay_testenv::registry::Registry,
) {
    let docker_config = registry.docker_config_json(&registry.host_port);
    docker_config_secret(client, ns, "regcred", docker_config).await;
}

/// A `kubernetes.io/dockerconfigjson` Secret `name` holding `docker_config`.
async fn docker_config_secret(
    client: &Client,
    ns: &kuberay_testenv::TestNamespace,
    name: &str,
    docker_config: String,
) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(
            [(
                ".dockerconfigjson".to_string(),
                ByteString(docker_config.into_bytes()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &secret).await.unwrap();
}

/// How the operator and the tests reach the environment's registry: trusting its CA.
pub(crate) fn registry_options(registry: &kuberay_testenv::registry::Registry) -> RegistryOptions {
    RegistryOptions {
        extra_roots: vec![std::fs::read(registry.ca_path()).unwrap()],
        timeout: Duration::from_secs(30),
    }
}

/// Pushes `wasm` to the environment's registry as `<namespace>/<name>:<tag>` and returns the pinned reference.
async fn push(
    registry: &kuberay_testenv::registry::Registry,
    ns: &str,
    name: &str,
    tag: &str,
    wasm: Vec<u8>,
) -> String {
    let oci = Registry::new(&registry_options(registry)).unwrap();
    let auth = RegistryAuth::Basic(registry.username.clone(), registry.password.clone());
    let repository = format!("{}/{ns}/{name}", registry.host_port);
    let digest = oci
        .push(&format!("{repository}:{tag}").parse().unwrap(), &auth, wasm)
        .await
        .unwrap();
    format!("{repository}@{digest}")
}

/// Every replica, the standby too, loads each version a resource names, so a standby that takes over serves
/// the newest at once; only the leader writes the status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_serves_the_new_version_before_it_leads() {
    use kuberay_wasm::leadership::{LeaderElection, unique_identity};

    use crate::containment::{chaos_api, install_chaos_crd_for_tests};

    let Setup {
        env,
        client,
        ns,
        registry,
    } = setup("rplugin-standby").await;
    install_chaos_crd_for_tests(&client).await;
    let wasm = std::fs::read(kuberay_plugin_artifacts::CHAOS).unwrap();
    let v1 = push(registry, ns.name(), "chaos", "v1", wasm.clone()).await;
    let v2 = push(registry, ns.name(), "chaos", "v2", variant(&wasm, "v2")).await;
    let v3 = push(registry, ns.name(), "chaos", "v3", variant(&wasm, "v3")).await;
    pull_secret(&client, &ns, registry).await;

    let selector = format!("kuberay-wasm-test={}", ns.name());
    let replica = |name: &str| OperatorOptions {
        plugins: vec![],
        policy: Some(Policy::builtin()),
        leader_election: Some(LeaderElection {
            namespace: ns.name().to_string(),
            lease_name: "kuberay-wasm-leader".into(),
            identity: unique_identity(name),
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(300),
        }),
        instance: Some(name.to_string()),
        resources: Some(ResourceOptions {
            namespace: Some(ns.name().to_string()),
            selector: Some(selector.clone()),
            allow_tags: false,
            registry: registry_options(registry),
        }),
        ..OperatorOptions::default()
    };
    let leader = start_operator(env, &ns, replica("first")).await;
    eventually("the first replica to lead", TIMEOUT, || async {
        let lease: Api<k8s_openapi::api::coordination::v1::Lease> =
            Api::namespaced(client.clone(), ns.name());
        let holder = lease
            .get("kuberay-wasm-leader")
            .await
            .ok()?
            .spec?
            .holder_identity?;
        holder.starts_with("first").then_some(())
    })
    .await;
    let standby = start_operator(env, &ns, replica("second")).await;

    let api: Api<ReconcilePlugin> = Api::all(client.clone());
    let _ = api.delete("chaos", &DeleteParams::default()).await;
    let resource: ReconcilePlugin = serde_json::from_value(json!({
        "apiVersion": "plugins.kuberay-wasm.io/v1alpha1", "kind": "ReconcilePlugin",
        "metadata": {"name": "chaos", "labels": {"kuberay-wasm-test": ns.name()}},
        "spec": {
            "artifact": v1, "reconciles": "testing.kuberay-wasm.io/v1/Chaos", "pullSecret": "regcred",
            "grant": {
                "owns": ["v1/ConfigMap"],
                "verbs": {
                    "testing.kuberay-wasm.io/v1/Chaos": ["get", "apply-status", "record-event", "finalize"],
                    "v1/ConfigMap": ["get", "list", "create", "apply", "delete"],
                },
            },
        },
    }))
    .unwrap();
    api.create(&PostParams::default(), &resource).await.unwrap();
    let loads = |operator: &crate::support::Operator| {
        operator.metric("kuberay_wasm_plugin_loads_total", &["plugin=\"chaos\""])
    };
    for (version, loaded) in [(&v1, 1.0), (&v2, 2.0)] {
        if loaded > 1.0 {
            api.patch(
                "chaos",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"artifact": version}})),
            )
            .await
            .unwrap();
        }
        eventually(&format!("both replicas to load {version}"), TIMEOUT, || async {
            (loads(&leader) == loaded && loads(&standby) == loaded).then_some(())
        })
        .await;
        let digest = version.rsplit_once('@').unwrap().1;
        until_named(&api, "chaos", "the leader's status", |s| s["digest"] == digest).await;
    }

    // The leader goes mid-rollout (right after the edit to v3); the standby rolls v3 out by itself, takes
    // over, writes the status the leader did not, and reconciles at once.
    api.patch(
        "chaos",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"artifact": v3}})),
    )
    .await
    .unwrap();
    leader.stop().await;
    let d3 = v3.rsplit_once('@').unwrap().1;
    let status = until_named(&api, "chaos", "the new leader's status of v3", |s| {
        s["digest"] == d3 && condition(s, "Ready").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(
        status["operator"],
        format!("{}/kuberay-wasm-leader", ns.name()),
        "{status}"
    );
    // And the load has its Event, whichever replica recorded it.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::all(client.clone());
    eventually("a PluginLoaded event for v3", TIMEOUT, || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("PluginLoaded")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("chaos")
                    && e.note.as_deref().is_some_and(|n| n.contains(d3))
            })
            .then_some(())
    })
    .await;
    let chaos = chaos_api(&client, ns.name());
    let object = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": "after-takeover"}, "spec": {"behaviour": "ok"},
    }))
    .unwrap();
    chaos.create(&PostParams::default(), &object).await.unwrap();
    eventually("the new leader to reconcile", TIMEOUT, || async {
        let object = serde_json::to_value(chaos.get("after-takeover").await.ok()?).ok()?;
        (object["status"]["observed"] == "ok").then_some(())
    })
    .await;
    assert_eq!(loads(&standby), 3.0, "the new leader loaded each version once");
    api.delete("chaos", &DeleteParams::default()).await.unwrap();
    standby.stop().await;
}

pub(crate) async fn until_named(
    api: &Api<ReconcilePlugin>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let last = std::sync::Mutex::new(Value::Null);
    let found = poll_until(TIMEOUT, || async {
        let status = status(api, name).await;
        *last.lock().unwrap() = status.clone();
        check(&status).then_some(status)
    })
    .await;
    found.unwrap_or_else(|| {
        panic!(
            "timed out after {TIMEOUT:?} waiting for {what}; the status: {}",
            last.lock().unwrap()
        )
    })
}
