//! Provenance: a plugin may write what its user asked for and nothing more. The chaos plugin writes, on its
//! own (`forged`: the object's JSON text is a string in its Chaos spec, so none of its settings is the
//! user's request), every side door a third-party plugin granted only ConfigMaps, Services, RayClusters and a
//! few more kinds could use: someone's token Secret on a RayCluster, a Secret or capabilities through
//! `autoscalerOptions`, a NodePort Service or a selector on another cluster's Pods, someone's claim or an
//! Available PersistentVolume, an AppArmor annotation, a privileged template inside a custom resource, a
//! RayJob selecting someone's cluster, a Role granting Secrets, endpoints added to someone's Service. Each is refused with the reason on the
//! object; the same settings asked for by the user (`object`: structured in the spec) are written, bounded by
//! the namespace's Pod Security level.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{Namespace, Pod, Secret, Service},
    networking::v1::Ingress,
    rbac::v1::RoleBinding,
};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::{
    containment::{ChaosRun, chaos_api, chaos_run, install_chaos_crd_for_tests},
    policy::{create_chaos, reconciled_message, victims},
    support::{OperatorOptions, env, eventually, namespace, policy_with, rayclusters, start_operator},
};

/// Applies a RayCluster as a user would.
async fn apply_cluster(client: &kube::Client, ns: &kuberay_testenv::TestNamespace, object: &Value) {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    rayclusters(client, ns)
        .patch(
            name,
            &PatchParams::apply("kuberay-wasm-tests").force(),
            &Patch::Apply(object),
        )
        .await
        .unwrap_or_else(|e| panic!("applying RayCluster {name}: {e}"));
}

/// The chaos plugin as a third-party plugin: its own kind, and owned ConfigMaps, Services, Pods, RayClusters,
/// RayJobs, Roles and Ingresses, with enough verbs that admission, not the verb grant, decides.
const THIRD_PARTY: &str = "
- name: chaos
  file: chaos.wasm
  reconciles: testing.kuberay-wasm.io/v1/Chaos
  owns: [v1/ConfigMap, v1/Pod, v1/Service, ray.io/v1/RayCluster, ray.io/v1/RayJob,
         rbac.authorization.k8s.io/v1/Role, networking.k8s.io/v1/Ingress, testing.kuberay-wasm.io/v1/Chaos,
         discovery.k8s.io/v1/EndpointSlice]
  verbs:
    testing.kuberay-wasm.io/v1/Chaos: [get, apply-status, record-event, apply]
    v1/ConfigMap: [get, list, create, apply, delete]
    v1/Pod: [create, apply]
    v1/Service: [apply]
    ray.io/v1/RayCluster: [get, apply]
    ray.io/v1/RayJob: [create]
    rbac.authorization.k8s.io/v1/Role: [apply]
    networking.k8s.io/v1/Ingress: [apply]
    discovery.k8s.io/v1/EndpointSlice: [create]
  rayHeads: true
";

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "c", "image": "busybox"}]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn cluster(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name}, "spec": spec})
}

fn head_only() -> Value {
    json!({"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}}})
}

/// (Chaos name, behaviour, the plugin's own object, what the refusal says)
fn side_doors() -> Vec<(&'static str, &'static str, Value, &'static str)> {
    let mut token = head_only();
    token["authOptions"] = json!({"mode": "token", "secretName": "victim"});
    let mut env_from = head_only();
    env_from["enableInTreeAutoscaling"] = json!(true);
    env_from["autoscalerOptions"] = json!({"envFrom": [{"secretRef": {"name": "victim"}}]});
    let mut caps = head_only();
    caps["autoscalerOptions"] = json!({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}});
    let service = |name: &str, extra: Value| {
        let mut spec = json!({"ports": [{"port": 8265}], "selector": {"ray.io/cluster": "victim-cluster", "ray.io/node-type": "head"}});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
    };
    vec![
        ("token", "apply", cluster("token-ray", token), "Secret victim"),
        (
            "autoscaler-secret",
            "apply",
            cluster("as-ray", env_from),
            "Secret victim",
        ),
        (
            "autoscaler-caps",
            "apply",
            cluster("caps-ray", caps),
            "capability SYS_ADMIN",
        ),
        (
            "node-port",
            "apply",
            service("evil-np", json!({"type": "NodePort"})),
            "Service type \"NodePort\"",
        ),
        ("selector", "apply", service("evil-sel", json!({})), "selector"),
        (
            "claim",
            "create",
            pod(
                "evil-claim",
                json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "victim-data"}}]}),
            ),
            "PersistentVolumeClaim victim-data",
        ),
        (
            "volume-name",
            "create",
            pod(
                "evil-pv",
                json!({"volumes": [{"name": "d", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "volumeName": "pv-victim",
                "resources": {"requests": {"storage": "1Gi"}}}}}}]}),
            ),
            "PersistentVolume pv-victim",
        ),
        (
            "apparmor",
            "create",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "evil-apparmor", "annotations": {
                "container.apparmor.security.beta.kubernetes.io/c": "unconfined"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
            "AppArmor",
        ),
        (
            "embedded",
            "apply",
            json!({"apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos", "metadata": {"name": "embedded-child"},
                "spec": {"object": {"replicatedJobs": [{"template": {"spec": {"template": {"spec": {
                    "containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true}}]}}}}}]}}}),
            "is privileged",
        ),
        (
            "cluster-label",
            "create",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "evil-label",
                "labels": {"ray.io/cluster": "victim-cluster", "ray.io/node-type": "head"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
            "ray.io/cluster=victim-cluster",
        ),
        (
            "job-selector",
            "create",
            json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "evil-job"},
                "spec": {"entrypoint": "python -c 1", "clusterSelector": {"ray.io/cluster": "victim-cluster"}}}),
            "RayCluster victim-cluster",
        ),
        (
            "role",
            "apply",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "evil-role"},
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]}),
            "roleRules",
        ),
        (
            "endpoints",
            "create",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "evil-endpoints", "labels": {"kubernetes.io/service-name": "victim-cluster-head-svc"}},
                "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.66"]}], "ports": [{"port": 8265}]}),
            "adds endpoints to Service victim-cluster-head-svc",
        ),
        (
            "ingress",
            "apply",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "evil-ingress"},
                "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "victim-cluster-head-svc", "port": {"number": 8265}}}}]}}]}}),
            "Service victim-cluster-head-svc",
        ),
    ]
}

async fn chaos_refusal(chaos: &Api<kube::api::DynamicObject>, name: &str) -> (String, String) {
    eventually(
        &format!("{name} to be refused"),
        Duration::from_secs(60),
        || async { reconciled_message(&serde_json::to_value(chaos.get(name).await.ok()?).ok()?) },
    )
    .await
}

async fn observed(chaos: &Api<kube::api::DynamicObject>, name: &str) {
    eventually(
        &format!("{name} to be reconciled"),
        Duration::from_secs(60),
        || async {
            let object = serde_json::to_value(chaos.get(name).await.ok()?).ok()?;
            (object["status"]["observed"] == "done" || object["status"]["observed"] == "ok").then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn what_the_plugin_invents_is_refused_and_what_its_user_asked_for_is_written() {
    let ChaosRun {
        client,
        ns,
        operator,
        chaos,
    } = chaos_run(
        "provenance",
        vec![kuberay_plugin_artifacts::CHAOS],
        policy_with(THIRD_PARTY),
    )
    .await;
    let (secret, _) = victims(&client, ns.name()).await;
    for (name, behaviour, object, _) in side_doors() {
        create_chaos(
            &chaos,
            name,
            json!({"behaviour": behaviour, "forged": object.to_string()}),
        )
        .await;
    }
    // The user asks for the same kinds of things: their Secret in a Pod's environment, a NodePort Service
    // for their own Pods, a RayCluster whose token is their Secret.
    let secret_env = pod(
        "asked-env",
        json!({"containers": [{"name": "c", "image": "busybox", "env": [
        {"name": "T", "valueFrom": {"secretKeyRef": {"name": "victim", "key": "password"}}}]}]}),
    );
    create_chaos(
        &chaos,
        "asked-env",
        json!({"behaviour": "create", "object": secret_env}),
    )
    .await;
    let mut token = head_only();
    token["authOptions"] = json!({"mode": "token", "secretName": "victim"});
    create_chaos(
        &chaos,
        "asked-token",
        json!({"behaviour": "apply", "object": cluster("asked-token-ray", token)}),
    )
    .await;

    for (name, _, _, needle) in side_doors() {
        let (reason, message) = chaos_refusal(&chaos, name).await;
        assert_eq!(reason, "ReconcileFailed", "{name}: {message}");
        assert!(
            message.contains("forbidden") && message.contains(needle),
            "{name}: {message}"
        );
    }
    for name in ["asked-env", "asked-token"] {
        observed(&chaos, name).await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    assert!(pods.get_opt("asked-env").await.unwrap().is_some());
    for name in ["evil-claim", "evil-pv", "evil-apparmor", "evil-label"] {
        assert!(pods.get_opt(name).await.unwrap().is_none(), "{name} was created");
    }
    let clusters = rayclusters(&client, &ns);
    assert!(clusters.get_opt("asked-token-ray").await.unwrap().is_some());
    for name in ["token-ray", "as-ray", "caps-ray"] {
        assert!(
            clusters.get_opt(name).await.unwrap().is_none(),
            "{name} was created"
        );
    }
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    assert!(services.get_opt("evil-np").await.unwrap().is_none());
    assert!(services.get_opt("evil-sel").await.unwrap().is_none());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    let after = secrets.get("victim").await.unwrap();
    assert_eq!(after.metadata.resource_version, secret.metadata.resource_version);
    assert!(
        operator.metric("kuberay_wasm_refused_calls_total", &["plugin=\"chaos\""])
            >= side_doors().len() as f64
    );
    operator.stop().await;
}

/// A plugin that ignores a refusal does not make it silent: the host reports the refused write about the
/// object (a Warning event with the rule), besides its log line and metric.
#[tokio::test]
async fn a_refusal_the_plugin_ignores_is_reported_on_the_object() {
    use k8s_openapi::api::events::v1::Event;
    let ChaosRun {
        client,
        ns,
        operator,
        chaos,
    } = chaos_run(
        "provenance-quiet",
        vec![kuberay_plugin_artifacts::CHAOS],
        policy_with(THIRD_PARTY),
    )
    .await;
    let privileged = pod(
        "quiet",
        json!({"containers": [{"name": "c", "image": "busybox",
        "securityContext": {"privileged": true}}]}),
    );
    create_chaos(
        &chaos,
        "quiet",
        json!({"behaviour": "create-quietly", "forged": privileged.to_string()}),
    )
    .await;
    observed(&chaos, "quiet").await;
    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    let note = eventually("the WriteRefused event", Duration::from_secs(30), || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("WriteRefused"))
            .and_then(|e| e.note)
    })
    .await;
    assert!(
        note.contains("create v1/Pod refused") && note.contains("is privileged"),
        "{note}"
    );
    operator.stop().await;
}

#[tokio::test]
async fn the_users_pod_security_settings_are_bounded_by_the_namespaces_level() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let open = namespace(env, "psa-open").await;
    let baseline = namespace(env, "psa-baseline").await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let label = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}});
    namespaces
        .patch(baseline.name(), &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    let unconfined = |name: &str| {
        pod(
            name,
            json!({"containers": [{"name": "c", "image": "busybox",
            "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]}),
        )
    };
    for (ns, labelled) in [(&open, false), (&baseline, true)] {
        let operator = start_operator(
            env,
            ns,
            OperatorOptions {
                plugins: vec![kuberay_plugin_artifacts::CHAOS],
                policy: Some(policy_with(THIRD_PARTY)),
                ..OperatorOptions::default()
            },
        )
        .await;
        let chaos = chaos_api(&client, ns.name());
        create_chaos(
            &chaos,
            "asked",
            json!({"behaviour": "create", "object": unconfined("asked")}),
        )
        .await;
        create_chaos(
            &chaos,
            "forged",
            json!({"behaviour": "create", "forged": unconfined("forged").to_string()}),
        )
        .await;
        let (_, forged) = chaos_refusal(&chaos, "forged").await;
        assert!(forged.contains("container c runs without seccomp"), "{forged}");
        if labelled {
            let (_, asked) = chaos_refusal(&chaos, "asked").await;
            assert!(asked.contains("enforces Pod Security level baseline"), "{asked}");
            assert!(
                forged.contains("enforces Pod Security level baseline"),
                "{forged}"
            );
        } else {
            observed(&chaos, "asked").await;
            assert!(forged.contains("does not ask for"), "{forged}");
        }
        operator.stop().await;
    }
}

/// A RayCluster a third-party plugin writes does not get to configure the Ingress the RayCluster plugin
/// makes for it: the annotations (ingress controller snippets) must come from the user's object at the root.
/// The same annotations on a RayCluster a user wrote are carried over, as KubeRay does.
#[tokio::test]
async fn ingress_annotations_come_from_the_user_not_from_a_plugin_written_cluster() {
    let ChaosRun {
        client,
        ns,
        operator,
        chaos,
    } = chaos_run(
        "provenance-ingress",
        vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::CHAOS,
        ],
        policy_with(THIRD_PARTY),
    )
    .await;
    let snippet = "nginx.ingress.kubernetes.io/configuration-snippet";
    let mut spec = head_only();
    spec["headGroupSpec"]["enableIngress"] = json!(true);
    let mut forged = cluster("forged-ingress", spec.clone());
    forged["metadata"]["annotations"] = json!({snippet: "more_set_headers \"X: y\";"});
    create_chaos(
        &chaos,
        "ingress",
        json!({"behaviour": "apply", "forged": forged.to_string()}),
    )
    .await;
    let mut users = cluster("users-ingress", spec);
    users["metadata"]["annotations"] = json!({snippet: "more_set_headers \"X: y\";"});
    apply_cluster(&client, &ns, &users).await;

    let clusters = rayclusters(&client, &ns);
    let (reason, message) = eventually(
        "the plugin-written cluster's Ingress to be refused",
        Duration::from_secs(60),
        || async {
            reconciled_message(&serde_json::to_value(clusters.get("forged-ingress").await.ok()?).ok()?)
        },
    )
    .await;
    assert_eq!(reason, "ReconcileFailed", "{message}");
    assert!(
        message.contains(snippet) && message.contains("Chaos ingress"),
        "{message}"
    );
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), ns.name());
    let users_ingress = eventually("the user's Ingress", Duration::from_secs(60), || async {
        ingresses
            .get_opt("users-ingress-head-ingress")
            .await
            .ok()
            .flatten()
    })
    .await;
    let annotations = users_ingress.metadata.annotations.unwrap_or_default();
    assert!(annotations.contains_key(snippet), "{annotations:?}");
    assert!(
        ingresses
            .get_opt("forged-ingress-head-ingress")
            .await
            .unwrap()
            .is_none()
    );
    operator.stop().await;
}

/// KubeRay names the autoscaler's ServiceAccount after the cluster; a cluster named `default` must not bind
/// the autoscaler's Role (patch on Pods) to the namespace's default account, which every Pod runs as.
#[tokio::test]
async fn a_cluster_named_default_does_not_bind_the_default_service_account() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "provenance-default").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    let mut spec = head_only();
    spec["enableInTreeAutoscaling"] = json!(true);
    apply_cluster(&client, &ns, &cluster("default", spec)).await;
    let clusters = rayclusters(&client, &ns);
    let (_, message) = eventually(
        "the cluster to report the refusal",
        Duration::from_secs(60),
        || async { reconciled_message(&serde_json::to_value(clusters.get("default").await.ok()?).ok()?) },
    )
    .await;
    assert!(message.contains("ServiceAccount default"), "{message}");
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), ns.name());
    let bound_default = bindings
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .any(|b| {
            b.subjects
                .iter()
                .flatten()
                .any(|s| s.kind == "ServiceAccount" && s.name == "default")
        });
    assert!(!bound_default, "a RoleBinding binds the default ServiceAccount");
    operator.stop().await;
}

/// How admission writes an apply without adopting (`admission::commit`), and the API server's behaviour it
/// relies on, checked on the real one: an apply of an object it did not find is a create (refused when an
/// object appeared since the host looked, so the forced apply never adopts it), then an apply carrying the new
/// object's uid; an apply of an object it found carries that object's uid, so one deleted and re-created by
/// someone else in between is refused too.
#[tokio::test]
async fn an_apply_expecting_no_object_creates_one_but_never_adopts_one() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "provenance-precondition").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let params = PatchParams::apply("kuberay-wasm/chaos").force();
    let intent = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name,
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": "11111111-1111-1111-1111-111111111111", "controller": true}]},
            "data": {"taken": "yes"}})
    };
    let users: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "users"}, "data": {"mine": "yes"}})).unwrap();
    let users = config_maps.create(&Default::default(), &users).await.unwrap();
    // The host looked and found nothing; the user's object appeared since: the create is refused.
    let mine: ConfigMap = serde_json::from_value(intent("users")).unwrap();
    let refused = config_maps.create(&Default::default(), &mine).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(e)) if e.code == 409),
        "{refused:?}"
    );
    // The host found an object with another uid (deleted and re-created by the user since): refused too.
    let mut stale = intent("users");
    stale["metadata"]["uid"] = json!("22222222-2222-2222-2222-222222222222");
    let refused = config_maps.patch("users", &params, &Patch::Apply(stale)).await;
    assert!(refused.is_err(), "the user's object was adopted: {refused:?}");
    let after = config_maps.get("users").await.unwrap();
    assert_eq!(after.metadata.resource_version, users.metadata.resource_version);
    assert!(after.metadata.owner_references.is_none());
    // Created, its field manager's entry re-labelled from an update to an apply (with the created uid): the
    // apply then owns the fields alone, and a field it stops asking for is removed.
    let mut fresh = intent("fresh");
    let created = config_maps
        .create(
            &kube::api::PostParams {
                field_manager: Some("kuberay-wasm/chaos".into()),
                ..Default::default()
            },
            &serde_json::from_value(fresh.clone()).unwrap(),
        )
        .await
        .unwrap();
    let mut entries = created.metadata.managed_fields.clone().unwrap();
    assert_eq!(entries.len(), 1);
    entries[0].operation = Some("Apply".into());
    let relabel = json!({"metadata": {"uid": created.metadata.uid, "managedFields": entries}});
    let relabelled = config_maps
        .patch("fresh", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    let managers: Vec<_> = relabelled
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .map(|e| (e.manager.unwrap_or_default(), e.operation.unwrap_or_default()))
        .collect();
    assert_eq!(
        managers,
        [("kuberay-wasm/chaos".to_string(), "Apply".to_string())]
    );
    fresh["data"] = json!({});
    fresh["metadata"]["uid"] = json!(created.metadata.uid);
    let applied = config_maps
        .patch("fresh", &params, &Patch::Apply(&fresh))
        .await
        .unwrap();
    assert!(
        applied.data.unwrap_or_default().is_empty(),
        "a field the apply no longer asks for stayed"
    );
}

/// The chaos plugin granted NetworkPolicies, with the RayClusterNetworkPolicy gate on (otherwise the
/// operator takes the kind out of its policy).
const NETWORK_POLICY_PLUGIN: &str = "
- name: chaos
  file: chaos.wasm
  reconciles: testing.kuberay-wasm.io/v1/Chaos
  owns: [networking.k8s.io/v1/NetworkPolicy, testing.kuberay-wasm.io/v1/Chaos]
  verbs:
    testing.kuberay-wasm.io/v1/Chaos: [get, apply-status, record-event, apply]
    networking.k8s.io/v1/NetworkPolicy: [apply]
  rayHeads: false
";

/// NetworkPolicies only ever widen what the Pods they select may send and receive: a plugin granted them
/// could open another cluster's head to the world. One it invents must select Pods of a RayCluster its
/// object controls; the same policy asked for by its user is written.
#[tokio::test]
async fn a_network_policy_a_plugin_invents_cannot_open_someone_elses_pods() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "provenance-netpol").await;
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![kuberay_plugin_artifacts::CHAOS],
            policy: Some(policy_with(NETWORK_POLICY_PLUGIN)),
            feature_gates: Some(
                kuberay_wasm::kuberay_flags::FeatureGates::parse("RayClusterNetworkPolicy=true").unwrap(),
            ),
            ..OperatorOptions::default()
        },
    )
    .await;
    let chaos = chaos_api(&client, ns.name());
    let open = |name: &str| {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
            "spec": {"podSelector": {"matchLabels": {"ray.io/cluster": "victim-cluster", "ray.io/node-type": "head"}},
                "policyTypes": ["Ingress"], "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]}})
    };
    create_chaos(
        &chaos,
        "forged-netpol",
        json!({"behaviour": "apply", "forged": open("evil-open").to_string()}),
    )
    .await;
    create_chaos(
        &chaos,
        "asked-netpol",
        json!({"behaviour": "apply", "object": open("asked-open")}),
    )
    .await;
    let (reason, message) = chaos_refusal(&chaos, "forged-netpol").await;
    assert_eq!(reason, "ReconcileFailed", "{message}");
    assert!(
        message.contains("forbidden") && message.contains("may pick Pods that are not"),
        "{message}"
    );
    observed(&chaos, "asked-netpol").await;
    let policies: Api<k8s_openapi::api::networking::v1::NetworkPolicy> =
        Api::namespaced(client.clone(), ns.name());
    assert!(policies.get_opt("evil-open").await.unwrap().is_none());
    assert!(policies.get_opt("asked-open").await.unwrap().is_some());
    operator.stop().await;
}
