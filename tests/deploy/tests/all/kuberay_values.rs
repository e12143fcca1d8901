//! KubeRay's chart values (its `kuberay-operator` chart, v1.7) with KubeRay's meaning: its whole default values file
//! renders the equivalent of KubeRay's default install, and each of its values set to something else renders what
//! it means here (those that cannot be honoured are refused, in `bad_values.rs`).

use kuberay_deploy_tests::{
    Permission,
    manifests::{self, container_args, one},
    rules::{EVENTS_OF_CLUSTER_SCOPED, Permissions, Sources, expand, granted_by},
};
use serde_json::{Value, json};

use crate::{
    chart::{assert_secure, kinds, operator_rbac, user_roles},
    tools,
};

/// KubeRay v1.7.0's default values, every key (relative to the checkout, where helm runs).
pub const KUBERAY_DEFAULTS: &str = "tests/deploy/tests/fixtures/kuberay-operator-v1.7.0-values.yaml";

/// KubeRay's default values with the image replaced by ours: KubeRay's own image is refused (`bad_values.rs`).
const KUBERAY_DEFAULTS_WITH_OUR_IMAGE: &[&str] = &[
    "-f",
    KUBERAY_DEFAULTS,
    "--set",
    "image.repository=kuberay-wasm",
    "--set",
    "image.tag=0.1.0",
];

/// `KUBERAY_DEFAULTS_WITH_OUR_IMAGE` and then `more`.
fn kuberay_defaults_and<'a>(more: &[&'a str]) -> Vec<&'a str> {
    KUBERAY_DEFAULTS_WITH_OUR_IMAGE
        .iter()
        .chain(more)
        .copied()
        .collect()
}

/// The Pod template of the one Deployment of `objects`.
fn pod(objects: &[Value]) -> &Value {
    &one(objects, "Deployment").unwrap()["spec"]["template"]["spec"]
}

#[test]
fn kuberays_default_values_render_kuberays_default_install() {
    let tools = tools();
    let objects = tools.template("ops", KUBERAY_DEFAULTS_WITH_OUR_IMAGE).unwrap();
    let deployment = one(&objects, "Deployment").unwrap();
    // fullnameOverride, nameOverride and componentOverride: kuberay-operator.
    assert_eq!(manifests::name(deployment), "kuberay-operator");
    assert_eq!(
        deployment["spec"]["selector"]["matchLabels"],
        json!({"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-wasm"})
    );
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"],
        "kuberay-operator"
    );
    // replicas: 1, with leader election (leaderElectionEnabled: true).
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        container_args(deployment),
        [
            "operator",
            "--log-stdout-encoder=json",
            "--enable-leader-election",
            "--leader-election-namespace=$(POD_NAMESPACE)",
            "--plugins=/opt/kuberay-wasm/plugins",
            "--cache-dir=/var/cache/kuberay-wasm/compiled",
            "--concurrency=8",
            "--reconcile-concurrency=1",
            "--qps=100",
            "--burst=200",
            "--feature-gates=RayClusterStatusConditions=true,RayJobDeletionPolicy=true,\
             RayMultiHostIndexing=true,RayServiceIncrementalUpgrade=true,RayCronJob=false,RayClusterMTLS=false,\
             RayClusterNetworkPolicy=false,RayClusterHistoryServer=false",
            "--metrics-bind-address=0.0.0.0:8080",
            "--health-probe-bind-address=0.0.0.0:8082",
        ]
    );
    let pod = pod(&objects);
    let container = &pod["containers"][0];
    assert!(
        container.get("command").is_none(),
        "operatorCommand /manager is KubeRay's binary: the image's entrypoint runs"
    );
    // KubeRay's securityContext is the chart's, field for field; its empty podSecurityContext keeps the chart's.
    assert_secure(pod);
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        assert_eq!(
            container[probe],
            json!({
                "httpGet": {"path": path, "port": "health"},
                "initialDelaySeconds": 10, "periodSeconds": 5, "failureThreshold": 5,
            }),
            "{probe}"
        );
    }
    assert_eq!(
        container["resources"]["limits"],
        json!({"cpu": "100m", "memory": "512Mi"})
    );
    assert_eq!(
        container["env"].as_array().unwrap().len(),
        2,
        "env: null adds none"
    );
    assert_eq!(pod["serviceAccountName"], "kuberay-operator");
    assert_eq!(kinds(&objects, "ServiceAccount"), ["kuberay-operator"]);

    // rbacEnable, not singleNamespaceInstall: the operator's rights cluster-wide, and the editor and viewer roles.
    let sources = Sources::read().unwrap();
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        sources.direct.union(&sources.plugins).cloned().collect()
    );
    assert_eq!(
        granted_by(&objects, "Role", Some("ops")).unwrap(),
        sources.own_namespace()
    );
    assert_eq!(user_roles(&objects).len(), 6);

    // The metrics Service (service: ClusterIP, 8080); no ServiceMonitor (metrics.serviceMonitor.enabled: false).
    let service = one(&objects, "Service").unwrap();
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert_eq!(service["spec"]["ports"][0]["port"], 8080);
    assert!(kinds(&objects, "ServiceMonitor").is_empty());
}

/// KubeRay's names for settings of this chart: watchNamespace, useKubernetesProxy, leaderElectionEnabled, rbacEnable.
#[test]
fn kuberays_names_for_the_charts_settings_set_them() {
    let tools = tools();
    let sources = Sources::read().unwrap();

    let objects = tools
        .template("ops", &["--set", "watchNamespace={team-a,team-b}"])
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(
        args.contains(&"--watch-namespace=team-a,team-b".into()),
        "{args:?}"
    );
    for ns in ["team-a", "team-b"] {
        assert_eq!(
            granted_by(&objects, "Role", Some(ns)).unwrap(),
            sources.direct,
            "{ns}"
        );
    }
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        sources.plugins
    );
    // The same list under both names is no conflict.
    let same = tools
        .template(
            "ops",
            &[
                "--set",
                "watchNamespace={team-a,team-b}",
                "--set",
                "watchNamespaces={team-b,team-a}",
            ],
        )
        .unwrap();
    assert_eq!(granted_by(&same, "Role", Some("team-b")).unwrap(), sources.direct);

    let objects = tools
        .template("ops", &["--set", "useKubernetesProxy=true"])
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(args.contains(&"--use-kubernetes-proxy".into()), "{args:?}");
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        sources.watched(true).union(&sources.plugins).cloned().collect()
    );
    let objects = tools
        .template("ops", &["--set", "useKubernetesProxy=false"])
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(!args.contains(&"--use-kubernetes-proxy".into()), "{args:?}");

    let objects = tools
        .template(
            "ops",
            &["--set", "leaderElectionEnabled=false", "--set", "replicas=1"],
        )
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--enable-leader-election") || a.starts_with("--leader-election")),
        "{args:?}"
    );
    assert_eq!(
        granted_by(&objects, "Role", Some("ops")).unwrap(),
        sources.pull_secrets,
        "no leader-election Role"
    );

    let objects = tools.template("ops", &["--set", "rbacEnable=false"]).unwrap();
    for kind in ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"] {
        assert!(
            kinds(&objects, kind).is_empty(),
            "{kind}: {:?}",
            kinds(&objects, kind)
        );
    }
    assert_eq!(kinds(&objects, "Deployment"), ["kuberay-wasm"]);
}

/// batchScheduler: KubeRay's flags, and the rights on the PodGroups of the schedulers that have them (as KubeRay's
/// chart adds them), nothing for the others.
#[test]
fn kuberays_batch_scheduler_values_set_the_flag_and_the_podgroup_rights() {
    let tools = tools();
    let sources = Sources::read().unwrap();
    let cases: [(&[&str], &str, Option<&str>); 5] = [
        (
            &["--set", "batchScheduler.name=volcano"],
            "--batch-scheduler=volcano",
            Some("volcano"),
        ),
        (
            &["--set", "batchScheduler.enabled=true"],
            "--enable-batch-scheduler",
            Some("volcano"),
        ),
        (
            &["--set", "batchScheduler.name=scheduler-plugins"],
            "--batch-scheduler=scheduler-plugins",
            Some("scheduler-plugins"),
        ),
        (
            &["--set", "batchScheduler.name=yunikorn"],
            "--batch-scheduler=yunikorn",
            None,
        ),
        (
            &["--set", "batchScheduler.name=kai-scheduler"],
            "--batch-scheduler=kai-scheduler",
            None,
        ),
    ];
    for (values, flag, rights) in cases {
        let objects = tools.template("ops", values).unwrap();
        let args = container_args(one(&objects, "Deployment").unwrap());
        assert!(args.contains(&flag.to_string()), "{values:?}: {args:?}");
        let granted = granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap();
        let mut expected = sources.watched(false);
        if let Some(scheduler) = rights {
            expected.extend(sources.batch_schedulers[scheduler].iter().cloned());
        }
        let expected: std::collections::BTreeSet<_> = expected.union(&sources.plugins).cloned().collect();
        assert_eq!(granted, expected, "{values:?}");
    }
    let none = tools.template("ops", &[]).unwrap();
    let args = container_args(one(&none, "Deployment").unwrap());
    assert!(!args.iter().any(|a| a.contains("batch-scheduler")), "{args:?}");
}

/// singleNamespaceInstall: the release namespace watched (when no namespace is named) with namespaced RBAC only;
/// crNamespacedRbacEnable false leaves the operator's rights there to someone else.
#[test]
fn a_single_namespace_install_has_namespaced_rbac_only() {
    let tools = tools();
    let sources = Sources::read().unwrap();

    let objects = tools
        .template("ops", &["--set", "singleNamespaceInstall=true"])
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(args.contains(&"--watch-namespace=ops".into()), "{args:?}");
    // ReconcilePlugin resources are cluster-scoped: not served (and no rights for them) unless asked for.
    assert!(args.contains(&"--plugin-resources=false".into()), "{args:?}");
    assert!(kinds(&objects, "ClusterRole").is_empty());
    assert!(kinds(&objects, "ClusterRoleBinding").is_empty());
    assert_eq!(
        granted_by(&objects, "Role", Some("ops")).unwrap(),
        sources.direct.union(&sources.leader_election).cloned().collect()
    );
    assert!(
        granted_by(&objects, "Role", Some(EVENTS_OF_CLUSTER_SCOPED))
            .unwrap()
            .is_empty()
    );

    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "singleNamespaceInstall=true",
                "--set",
                "watchNamespace={team-a}",
            ],
        )
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(args.contains(&"--watch-namespace=team-a".into()), "{args:?}");
    assert_eq!(
        granted_by(&objects, "Role", Some("team-a")).unwrap(),
        sources.direct
    );
    assert_eq!(
        granted_by(&objects, "Role", Some("ops")).unwrap(),
        sources.leader_election
    );

    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "singleNamespaceInstall=true",
                "--set",
                "crNamespacedRbacEnable=false",
            ],
        )
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(args.contains(&"--watch-namespace=ops".into()), "{args:?}");
    assert_eq!(
        granted_by(&objects, "Role", Some("ops")).unwrap(),
        sources.leader_election,
        "only the leader-election Role"
    );
    assert_eq!(kinds(&objects, "RoleBinding"), ["kuberay-wasm-leader-election"]);

    // Without singleNamespaceInstall, crNamespacedRbacEnable has no effect (as in KubeRay).
    let objects = tools
        .template("ops", &["--set", "crNamespacedRbacEnable=false"])
        .unwrap();
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        sources.direct.union(&sources.plugins).cloned().collect()
    );
}

/// The editor and viewer ClusterRoles KubeRay's chart ships, for RayJobs, RayServices and RayCronJobs (v1.7 has none
/// for RayClusters), named after the release, bound to nobody; created with RBAC unless singleNamespaceInstall.
#[test]
fn the_editor_and_viewer_roles_are_kuberays() {
    let tools = tools();
    let objects = tools.template("ops", &[]).unwrap();
    let roles = user_roles(&objects);
    let mut names: Vec<&str> = roles.iter().map(|r| manifests::name(r)).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "kuberay-wasm-raycronjob-editor-role",
            "kuberay-wasm-raycronjob-viewer-role",
            "kuberay-wasm-rayjob-editor-role",
            "kuberay-wasm-rayjob-viewer-role",
            "kuberay-wasm-rayservice-editor-role",
            "kuberay-wasm-rayservice-viewer-role",
        ]
    );
    let permissions = |resource: &str, verbs: &[&str]| -> Permissions {
        let status = format!("{resource}/status");
        verbs
            .iter()
            .map(|verb| Permission::new("ray.io", resource, verb))
            .chain([Permission::new("ray.io", &status, "get")])
            .collect()
    };
    for role in &roles {
        let name = manifests::name(role);
        let kind = name
            .strip_prefix("kuberay-wasm-")
            .and_then(|n| n.split('-').next())
            .unwrap();
        let resource = format!("{kind}s");
        let expected = if name.ends_with("-editor-role") {
            permissions(
                &resource,
                &["create", "delete", "get", "list", "patch", "update", "watch"],
            )
        } else {
            permissions(&resource, &["get", "list", "watch"])
        };
        assert_eq!(expand(&role["rules"]).unwrap(), expected, "{name}");
    }
    for binding in manifests::of_kind(&objects, "ClusterRoleBinding")
        .into_iter()
        .chain(manifests::of_kind(&objects, "RoleBinding"))
    {
        let role = binding["roleRef"]["name"].as_str().unwrap();
        assert!(!names.contains(&role), "{role} is bound");
    }
    for values in [
        &["--set", "singleNamespaceInstall=true"][..],
        &["--set", "rbacEnable=false"],
        &["--set", "rbac.create=false"],
    ] {
        let objects = tools.template("ops", values).unwrap();
        assert!(user_roles(&objects).is_empty(), "{values:?}");
    }
}

/// KubeRay's values for the operator's Pods: labels, annotations, priority class, security contexts laid over the
/// chart's, probe timing, env, command, names and log encoder.
#[test]
fn kuberays_pod_values_shape_the_deployment() {
    let tools = tools();
    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "labels.team=ray",
                "--set",
                "podLabels.tier=control",
                "--set",
                "annotations.example\\.com/owner=ml",
                "--set",
                "priorityClassName=system-cluster-critical",
                "--set",
                "podSecurityContext.fsGroup=2000",
                "--set",
                "podSecurityContext.runAsUser=1001",
                "--set",
                "securityContext.readOnlyRootFilesystem=false",
                "--set",
                "securityContext.capabilities.add={NET_BIND_SERVICE}",
                "--set",
                "livenessProbe.timeoutSeconds=3",
                "--set",
                "readinessProbe.periodSeconds=20",
                "--set",
                "env[0].name=RUST_LOG",
                "--set",
                "env[0].value=debug",
                "--set",
                "env[1].name=ENABLE_PROBES_INJECTION",
                "--set-string",
                "env[1].value=false",
                "--set",
                "operatorCommand=/usr/local/bin/kuberay-wasm",
                "--set",
                "nameOverride=ray-control",
                "--set",
                "componentOverride=operator",
                "--set",
                "logging.stdoutEncoder=console",
            ],
        )
        .unwrap();
    let deployment = one(&objects, "Deployment").unwrap();
    // nameOverride: the name label (and selector) of every object, and the full name's base.
    assert_eq!(manifests::name(deployment), "kuberay-wasm-ray-control");
    for object in &objects {
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/name"],
            "ray-control",
            "{}",
            manifests::name(object)
        );
    }
    assert_eq!(deployment["metadata"]["labels"]["team"], "ray");
    let metadata = &deployment["spec"]["template"]["metadata"];
    assert_eq!(
        metadata["labels"],
        json!({
            "app.kubernetes.io/name": "ray-control",
            "app.kubernetes.io/instance": "kuberay-wasm",
            "app.kubernetes.io/component": "operator",
            "team": "ray",
            "tier": "control",
        })
    );
    assert_eq!(metadata["annotations"], json!({"example.com/owner": "ml"}));
    assert!(
        deployment["metadata"]["annotations"].is_null(),
        "KubeRay's annotations are the Pods'"
    );

    let pod = pod(&objects);
    assert_eq!(pod["priorityClassName"], "system-cluster-critical");
    assert_eq!(
        pod["securityContext"],
        json!({
            "runAsNonRoot": true, "runAsUser": 1001, "runAsGroup": 65532, "fsGroup": 2000,
            "seccompProfile": {"type": "RuntimeDefault"},
        })
    );
    let container = &pod["containers"][0];
    assert_eq!(
        container["securityContext"],
        json!({
            "runAsNonRoot": true, "runAsUser": 65532, "readOnlyRootFilesystem": false,
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        })
    );
    assert_eq!(
        container["livenessProbe"],
        json!({"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10, "timeoutSeconds": 3})
    );
    assert_eq!(
        container["readinessProbe"],
        json!({"httpGet": {"path": "/readyz", "port": "health"}, "periodSeconds": 20})
    );
    let env = container["env"].as_array().unwrap();
    assert_eq!(env.len(), 4);
    assert_eq!(env[0]["name"], "POD_NAME");
    assert_eq!(env[2], json!({"name": "RUST_LOG", "value": "debug"}));
    assert_eq!(
        env[3],
        json!({"name": "ENABLE_PROBES_INJECTION", "value": "false"})
    );
    assert_eq!(container["command"], json!(["/usr/local/bin/kuberay-wasm"]));
    let args = container_args(deployment);
    assert_eq!(args[..2], ["operator", "--log-stdout-encoder=console"]);
    assert!(!args.iter().any(|a| a.starts_with("--log-format")), "{args:?}");
}

/// KubeRay's metrics values: the Service's type and port, the ServiceMonitor's namespace, labels and honorLabels;
/// metrics.enabled is accepted and changes nothing (/metrics always serves KubeRay's families).
#[test]
fn kuberays_metrics_values_shape_the_service_and_the_service_monitor() {
    let tools = tools();
    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "service.type=NodePort",
                "--set",
                "service.port=9090",
                "--set",
                "metrics.serviceMonitor.enabled=true",
                "--set",
                "metrics.serviceMonitor.namespace=monitoring",
                "--set",
                "metrics.serviceMonitor.honorLabels=true",
                "--set",
                "metrics.serviceMonitor.additionalLabels.release=prometheus",
                "--set",
                "metrics.serviceMonitor.labels.team=ray",
            ],
        )
        .unwrap();
    let service = one(&objects, "Service").unwrap();
    assert_eq!(service["spec"]["type"], "NodePort");
    assert_eq!(
        service["spec"]["ports"],
        json!([{"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}])
    );
    let monitor = one(&objects, "ServiceMonitor").unwrap();
    assert_eq!(manifests::namespace(monitor), "monitoring");
    assert_eq!(monitor["metadata"]["labels"]["release"], "prometheus");
    assert_eq!(monitor["metadata"]["labels"]["team"], "ray");
    assert_eq!(monitor["spec"]["namespaceSelector"]["matchNames"], json!(["ops"]));
    assert_eq!(
        monitor["spec"]["endpoints"],
        json!([{"port": "metrics", "path": "/metrics", "interval": "30s", "honorLabels": true}])
    );

    let defaults = tools.template("ops", &[]).unwrap();
    let disabled = tools
        .template("ops", &["--set", "metrics.enabled=false"])
        .unwrap();
    assert_eq!(disabled, defaults);
}

/// KubeRay's values that only act with what is refused here (a log file, the Configuration file) are accepted
/// without effect, as KubeRay ignores them without it.
#[test]
fn kuberays_values_without_effect_here_change_nothing() {
    let tools = tools();
    let defaults = tools.template("ops", &[]).unwrap();
    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "logging.fileEncoder=console",
                "--set",
                "logging.sizeLimit=1Gi",
                "--set",
                "configuration.defaultContainerEnvs[0].name=RAY_enable_open_telemetry",
                "--set-string",
                "configuration.defaultContainerEnvs[0].value=true",
                "--set",
                "configuration.defaultPodLabels.team=ray",
                "--set",
                "configuration.headSidecarContainers[0].name=fluentbit",
                "--set",
                "batchScheduler.enabled=false",
                "--set",
                "operatorCommand=/manager",
            ],
        )
        .unwrap();
    assert_eq!(objects, defaults);
}

/// On top of KubeRay's whole default values file, KubeRay's commented-out values and the ones a platform team
/// changes most render what they mean.
#[test]
fn kuberays_values_file_with_changes_renders_them() {
    let tools = tools();
    let sources = Sources::read().unwrap();
    let objects = tools
        .template(
            "ops",
            &kuberay_defaults_and(&[
                "--set",
                "watchNamespace={team-a}",
                "--set",
                "useKubernetesProxy=true",
                "--set",
                "replicas=3",
                "--set",
                "singleNamespaceInstall=true",
            ]),
        )
        .unwrap();
    let deployment = one(&objects, "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 3);
    let args = container_args(deployment);
    for flag in [
        "--watch-namespace=team-a",
        "--use-kubernetes-proxy",
        "--enable-leader-election",
        "--plugin-resources=false",
    ] {
        assert!(args.contains(&flag.into()), "{flag} not in {args:?}");
    }
    assert!(kinds(&objects, "ClusterRole").is_empty());
    assert_eq!(
        granted_by(&objects, "Role", Some("team-a")).unwrap(),
        sources.watched(true)
    );
}
