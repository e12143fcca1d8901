//! The administrator's policy: a plugin that writes privileged Pods, host mounts, Secrets and
//! ServiceAccounts its user did not ask for, token Secrets, external Services or bindings to foreign roles is
//! refused (reason on the object, refusal metric labelled by the policy), plugin files the policy does not
//! allow are not loaded and an update asking for more keeps the running version, while a well-behaved
//! RayCluster reconciles, and KubeRay's token-auth sample works under the built-in policy.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Secret, Service, ServiceAccount};
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::containment::{ChaosRun, chaos_api, chaos_run, install_chaos_crd_for_tests};
use crate::support::{
    CHAOS_ENTRY, OperatorOptions, apply_manifest, env, eventually, install_plugin_as, logged, namespace,
    policy_with, ready_cluster, sample, start_operator,
};

/// The chaos plugin with enough verbs that the content rules, not the verb grant, decide.
const HOSTILE_CHAOS_ENTRY: &str = "
- name: chaos
  file: chaos.wasm
  reconciles: testing.kuberay-wasm.io/v1/Chaos
  owns: [v1/ConfigMap, v1/Pod, v1/Service, v1/Secret, rbac.authorization.k8s.io/v1/RoleBinding]
  verbs:
    testing.kuberay-wasm.io/v1/Chaos: [get, apply-status, record-event]
    v1/ConfigMap: [get, list, create, apply, delete]
    v1/Pod: [create]
    v1/Service: [apply]
    v1/Secret: [get, create]
    rbac.authorization.k8s.io/v1/RoleBinding: [apply]
  rayHeads: false
  secrets: {owned: true}
";

pub(crate) fn reconciled_message(object: &Value) -> Option<(String, String)> {
    let condition = object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Reconciled")?;
    Some((
        condition["reason"].as_str()?.to_string(),
        condition["message"].as_str().unwrap_or_default().to_string(),
    ))
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "c", "image": "busybox"}]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

/// (Chaos object name, behaviour, target, object, what the refusal must say). The objects are the plugin's
/// own (`forged`: JSON text in the Chaos spec, not settings its user asked for).
fn attacks() -> Vec<(&'static str, &'static str, &'static str, Value, &'static str)> {
    let privileged =
        json!({"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true}}]});
    let secret_env = json!({"containers": [{"name": "c", "image": "busybox", "env": [
        {"name": "STOLEN", "valueFrom": {"secretKeyRef": {"name": "victim", "key": "password"}}}]}]});
    vec![
        (
            "privileged",
            "create",
            "",
            pod("evil-privileged", privileged),
            "privileged",
        ),
        (
            "host-path",
            "create",
            "",
            pod(
                "evil-host-path",
                json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
            ),
            "hostPath",
        ),
        (
            "host-network",
            "create",
            "",
            pod("evil-host-network", json!({"hostNetwork": true})),
            "hostNetwork",
        ),
        (
            "secret-volume",
            "create",
            "",
            pod(
                "evil-secret-volume",
                json!({"volumes": [{"name": "s", "secret": {"secretName": "victim"}}]}),
            ),
            "Secret victim",
        ),
        (
            "secret-env",
            "create",
            "",
            pod("evil-secret-env", secret_env),
            "Secret victim",
        ),
        (
            "service-account",
            "create",
            "",
            pod("evil-service-account", json!({"serviceAccountName": "victim-sa"})),
            "ServiceAccount victim-sa",
        ),
        (
            "token-secret",
            "create",
            "",
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                   "metadata": {"name": "evil-token", "annotations": {"kubernetes.io/service-account.name": "victim-sa"}}}),
            "service-account-token",
        ),
        (
            "external-name",
            "apply",
            "",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "evil-external"},
                   "spec": {"type": "ExternalName", "externalName": "example.com"}}),
            "ExternalName",
        ),
        (
            "external-ips",
            "apply",
            "",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "evil-ips"},
                   "spec": {"ports": [{"port": 80}], "externalIPs": ["203.0.113.1"]}}),
            "externalIPs",
        ),
        (
            "cluster-role",
            "apply",
            "",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "evil-admin"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                   "subjects": [{"kind": "ServiceAccount", "name": "default"}]}),
            "Role the reconciled object controls",
        ),
        (
            "read-secret",
            "secret",
            "victim",
            json!({}),
            "neither controlled by",
        ),
    ]
}

pub(crate) async fn create_chaos(api: &Api<DynamicObject>, name: &str, spec: Value) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

pub(crate) async fn victims(client: &kube::Client, ns: &str) -> (Secret, ServiceAccount) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let victim: Secret = serde_json::from_value(json!({
        "metadata": {"name": "victim"}, "stringData": {"password": "hunter2"},
    }))
    .unwrap();
    let secret = secrets.create(&PostParams::default(), &victim).await.unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "victim-sa"}})).unwrap();
    let sa = accounts.create(&PostParams::default(), &sa).await.unwrap();
    (secret, sa)
}

#[tokio::test]
async fn hostile_content_is_refused_while_a_raycluster_reconciles() {
    let plugins = vec![
        kuberay_plugin_artifacts::RAYCLUSTER,
        kuberay_plugin_artifacts::CHAOS,
    ];
    let ChaosRun {
        client,
        ns,
        operator,
        chaos,
    } = chaos_run("policy-content", plugins, policy_with(HOSTILE_CHAOS_ENTRY)).await;
    let (secret, _) = victims(&client, ns.name()).await;
    for (name, behaviour, target, object, _) in attacks() {
        create_chaos(
            &chaos,
            name,
            json!({"behaviour": behaviour, "target": target, "forged": object.to_string()}),
        )
        .await;
    }
    create_chaos(&chaos, "fine", json!({"behaviour": "ok"})).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;

    for (name, _, _, _, needle) in attacks() {
        let (reason, message) = eventually(
            &format!("{name} to be refused"),
            Duration::from_secs(60),
            || async { reconciled_message(&serde_json::to_value(chaos.get(name).await.ok()?).ok()?) },
        )
        .await;
        assert_eq!(reason, "ReconcileFailed", "{name}: {message}");
        assert!(
            message.contains("forbidden") && message.contains(needle),
            "{name}: {message}"
        );
    }
    // The refusal is in the log too, with the object it was made for and the reason.
    for (name, needle) in [("privileged", "privileged"), ("secret-env", "Secret victim")] {
        let object = format!("object={}/{name}", ns.name());
        logged(&["refused", "plugin=chaos", &object, needle]).await;
    }
    eventually(
        "the well-behaved Chaos object",
        Duration::from_secs(30),
        || async {
            let object = serde_json::to_value(chaos.get("fine").await.ok()?).ok()?;
            (object["status"]["observed"] == "ok").then_some(())
        },
    )
    .await;

    // Counted once per refusal, labelled by the policy entry and kinds the policy names.
    let refused = |verb: &str, kind: &str| {
        operator.metric(
            "kuberay_wasm_refused_calls_total",
            &[
                "plugin=\"chaos\"",
                &format!("verb=\"{verb}\""),
                &format!("kind=\"{kind}\""),
            ],
        )
    };
    assert!(refused("create", "v1/Pod") >= 6.0);
    assert!(refused("create", "v1/Secret") >= 1.0);
    assert!(refused("apply", "v1/Service") >= 2.0);
    assert!(refused("apply", "rbac.authorization.k8s.io/v1/RoleBinding") >= 1.0);
    assert!(refused("get", "v1/Secret") >= 1.0);
    let text = operator.metrics.encode();
    assert!(
        text.lines()
            .all(|l| l.starts_with('#') || l.rsplit_once(' ').is_some_and(|(_, v)| v.parse::<f64>().is_ok()))
    );

    // Nothing was created; the victim Secret is untouched.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    for name in [
        "evil-privileged",
        "evil-host-path",
        "evil-host-network",
        "evil-secret-volume",
        "evil-secret-env",
        "evil-service-account",
    ] {
        assert!(pods.get_opt(name).await.unwrap().is_none(), "{name} was created");
    }
    for name in ["evil-external", "evil-ips"] {
        assert!(
            services.get_opt(name).await.unwrap().is_none(),
            "{name} was created"
        );
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    assert!(secrets.get_opt("evil-token").await.unwrap().is_none());
    let after = secrets.get("victim").await.unwrap();
    assert_eq!(after.metadata.resource_version, secret.metadata.resource_version);
    assert!(after.metadata.owner_references.is_none());
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    operator.stop().await;
}

#[tokio::test]
async fn plugins_outside_the_policy_are_refused_and_an_update_asking_for_more_keeps_the_running_one() {
    let env = env().await;
    let client = env.client().await.unwrap();
    install_chaos_crd_for_tests(&client).await;
    let ns = namespace(env, "policy-load").await;
    let entries = format!(
        "{CHAOS_ENTRY}
- name: chaos-secrets
  file: chaos-secrets.wasm
  reconciles: testing.kuberay-wasm.io/v1/ChaosSecrets
  verbs: {{v1/Pod: [create, list, delete]}}
"
    )
    // The greedy build's extra Pod verbs are within the entry: only the reload rule refuses them.
    .replace(
        "    ray.io/v1/RayCluster: [get, apply]\n",
        "    ray.io/v1/RayCluster: [get, apply]\n    v1/Pod: [create, list, delete]\n",
    );
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::CHAOS,
            ],
            reload: Some(Duration::from_millis(300)),
            policy: Some(policy_with(&entries)),
            ..OperatorOptions::default()
        },
    )
    .await;
    let chaos = chaos_api(&client, ns.name());
    let observed = |name: &'static str| {
        let chaos = chaos.clone();
        async move {
            eventually(
                &format!("{name} to be reconciled"),
                Duration::from_secs(60),
                || async {
                    let object = serde_json::to_value(chaos.get(name).await.ok()?).ok()?;
                    (object["status"]["observed"] == "ok").then_some(())
                },
            )
            .await;
        }
    };
    create_chaos(&chaos, "first", json!({"behaviour": "ok"})).await;
    observed("first").await;
    apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;

    let dir = operator.plugins_dir.clone();
    let refusals = |plugin: &str, reason: &str| {
        operator.metric(
            "kuberay_wasm_plugin_refusals_total",
            &[&format!("plugin=\"{plugin}\""), &format!("reason=\"{reason}\"")],
        )
    };
    let cases = [
        // A plugin that asks to reconcile v1/Secret (every Secret of the namespace as its input).
        (
            kuberay_plugin_artifacts::CHAOS_SECRETS,
            "chaos-secrets.wasm",
            "chaos-secrets",
            "sensitive-kind",
        ),
        // A file the policy has no entry for.
        (
            kuberay_plugin_artifacts::CHAOS,
            "stranger.wasm",
            "unknown",
            "unknown-plugin",
        ),
        // A plugin in another entry's file, claiming its own name.
        (
            kuberay_plugin_artifacts::CHAOS,
            "chaos-secrets.wasm",
            "chaos-secrets",
            "name-mismatch",
        ),
        // An update of the running plugin that asks for more than it was granted.
        (
            kuberay_plugin_artifacts::CHAOS_GREEDY,
            "chaos.wasm",
            "chaos",
            "escalation",
        ),
    ];
    for (artifact, file, plugin, reason) in cases {
        install_plugin_as(&dir, artifact, file);
        eventually(
            &format!("{file} to be refused ({reason})"),
            Duration::from_secs(30),
            || async { (refusals(plugin, reason) >= 1.0).then_some(()) },
        )
        .await;
    }
    // The running chaos version keeps reconciling, and the RayCluster is unaffected.
    create_chaos(&chaos, "second", json!({"behaviour": "ok"})).await;
    observed("second").await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;
    operator.stop().await;
}

#[tokio::test]
async fn token_auth_sample_works_with_the_builtin_policy() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "policy-auth").await;
    let operator = start_operator(env, &ns, OperatorOptions::default()).await;
    apply_manifest(&client, &ns, &sample("ray-cluster.auth.yaml")).await;
    let cluster = ready_cluster(&client, &ns, "ray-cluster-with-auth").await;
    // The token Secret was created under the cluster's control, and the head reads its token from it.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    let secret = secrets.get("ray-cluster-with-auth").await.unwrap();
    let owner = secret.metadata.owner_references.unwrap_or_default();
    assert!(owner.iter().any(|o| {
        o.controller == Some(true)
            && Some(&o.uid)
                == cluster
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .as_ref()
    }));
    // KubeRay's token: 32 random bytes in padded standard base64.
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("auth_token"))
        .map(|t| t.0.clone())
        .unwrap_or_default();
    assert_eq!(token.len(), 44, "{token:?}");
    assert!(
        token.ends_with(b"=")
            && token[..43]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/'),
        "{token:?}"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let heads = pods
        .list(
            &kube::api::ListParams::default()
                .labels("ray.io/node-type=head,ray.io/cluster=ray-cluster-with-auth"),
        )
        .await
        .unwrap();
    let head = serde_json::to_value(&heads.items[0]).unwrap();
    assert!(head.to_string().contains("\"secretKeyRef\":{\"key\""), "{head}");
    assert_eq!(operator.metric("kuberay_wasm_refused_calls_total", &[]), 0.0);
    operator.stop().await;
}
