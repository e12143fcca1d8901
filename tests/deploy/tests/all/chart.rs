//! What the chart renders: lint, the default Deployment, the arguments and rules of each routing mode, one
//! Role and RoleBinding per watched namespace, the policy ConfigMap, the values of ReconcilePlugin resources
//! (their arguments, CA volume and rights) and the CRDs.

use std::collections::BTreeSet;

use kuberay_deploy_tests::{
    manifests::{self, container_args, one},
    rules::{EVENTS_OF_CLUSTER_SCOPED, Permissions, Sources, granted_by, repo_root},
    tools::{CHART, stdout_of},
};
use serde_json::Value;

use crate::tools;

#[test]
fn the_chart_lints_clean_in_strict_mode() {
    let tools = tools();
    let mut helm = tools.helm();
    helm.args(["lint", "--strict", CHART]);
    let out = stdout_of(helm).unwrap();
    assert!(out.contains("0 chart(s) failed"), "{out}");
    for values in [
        &["--set", "routing=proxy"][..],
        &["--set", "watchNamespaces={a,b}"],
        &["--set", "singleNamespaceInstall=true"],
        &[
            "-f",
            crate::kuberay_values::KUBERAY_DEFAULTS,
            "--set",
            "image.repository=kuberay-wasm",
        ],
    ] {
        let mut helm = tools.helm();
        helm.args(["lint", "--strict", CHART]).args(values);
        stdout_of(helm).unwrap();
    }
}

#[test]
fn the_defaults_render_two_leader_elected_replicas_with_direct_routing_in_every_namespace() {
    let tools = tools();
    let objects = tools.template("ops", &[]).unwrap();
    let deployment = one(&objects, "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "kuberay-wasm:0.1.0");
    assert!(
        container.get("command").is_none(),
        "the image's entrypoint must run"
    );
    assert_eq!(
        container_args(deployment),
        [
            "operator",
            "--log-format=json",
            "--enable-leader-election",
            "--leader-election-namespace=$(POD_NAMESPACE)",
            "--plugins=/opt/kuberay-wasm/plugins",
            "--cache-dir=/var/cache/kuberay-wasm/compiled",
            "--concurrency=8",
            "--metrics-bind-address=0.0.0.0:8080",
            "--health-probe-bind-address=0.0.0.0:8082",
        ]
    );
    assert_secure(pod);
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    let env: Vec<_> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["valueFrom"]["fieldRef"]["fieldPath"])
        .collect();
    assert_eq!(env, ["metadata.name", "metadata.namespace"]);

    let sources = Sources::read().unwrap();
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        union(&sources.direct, &sources.plugins)
    );
    assert_plugin_roles(&objects, &sources, "ops");
    assert_eq!(user_roles(&objects).len(), 6);
    assert_eq!(
        sorted(kinds(&objects, "ClusterRoleBinding")),
        ["kuberay-wasm", "kuberay-wasm-plugins"]
    );
    for binding in manifests::of_kind(&objects, "ClusterRoleBinding")
        .into_iter()
        .chain(manifests::of_kind(&objects, "RoleBinding"))
    {
        let subject = &binding["subjects"][0];
        assert_eq!(
            (&subject["name"], &subject["namespace"]),
            (&"kuberay-wasm".into(), &"ops".into()),
            "{}",
            manifests::name(binding)
        );
    }
    assert_eq!(kinds(&objects, "Service"), ["kuberay-wasm-metrics"]);
    assert!(kinds(&objects, "ServiceMonitor").is_empty());
    assert!(kinds(&objects, "ConfigMap").is_empty());
}

/// KubeRay's chart values for the flags both operators have render those flags, as KubeRay's chart does; KubeRay's
/// default feature gates are ones the operator starts with (the CLI tests check that they start it).
#[test]
fn kuberays_values_render_kuberays_flags() {
    let tools = tools();
    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "reconcileConcurrency=2",
                "--set",
                "kubeClient.qps=50.5",
                "--set",
                "kubeClient.burst=80",
                "--set",
                "featureGates[0].name=RayClusterStatusConditions",
                "--set",
                "featureGates[0].enabled=true",
                "--set",
                "featureGates[1].name=RayCronJob",
                "--set",
                "featureGates[1].enabled=false",
            ],
        )
        .unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    for flag in [
        "--reconcile-concurrency=2",
        "--qps=50.5",
        "--burst=80",
        "--feature-gates=RayClusterStatusConditions=true,RayCronJob=false",
    ] {
        assert!(args.contains(&flag.into()), "{flag} not in {args:?}");
    }
    let defaults = container_args(one(&tools.template("ops", &[]).unwrap(), "Deployment").unwrap());
    assert!(
        !defaults.iter().any(|a| a.starts_with("--qps")
            || a.starts_with("--feature-gates")
            || a.starts_with("--reconcile")),
        "{defaults:?}"
    );
}

#[test]
fn proxy_routing_adds_the_flag_and_the_proxy_rules_and_nothing_else() {
    let tools = tools();
    let sources = Sources::read().unwrap();
    let objects = tools.template("ops", &["--set", "routing=proxy"]).unwrap();
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(args.contains(&"--use-kubernetes-proxy".into()), "{args:?}");
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        union(&sources.watched(true), &sources.plugins)
    );
    assert!(!sources.proxy.is_empty() && sources.proxy.is_disjoint(&sources.direct));
}

#[test]
fn watched_namespaces_get_a_role_each_and_no_cluster_role_but_the_plugin_resources_one() {
    let tools = tools();
    let sources = Sources::read().unwrap();
    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "watchNamespaces={team-a,team-b}",
                "--set",
                "routing=proxy",
            ],
        )
        .unwrap();
    // ReconcilePlugin resources are cluster-scoped: their rules alone are granted cluster-wide (to the operator; the
    // editor and viewer ClusterRoles are for people, as KubeRay's chart creates them with watchNamespace too).
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        sources.plugins
    );
    assert_eq!(kinds(&objects, "ClusterRoleBinding"), ["kuberay-wasm-plugins"]);
    for ns in ["team-a", "team-b"] {
        assert_eq!(
            granted_by(&objects, "Role", Some(ns)).unwrap(),
            sources.watched(true),
            "{ns}"
        );
        let binding = manifests::of_kind(&objects, "RoleBinding")
            .into_iter()
            .find(|b| manifests::namespace(b) == ns)
            .unwrap();
        assert_eq!(binding["roleRef"]["kind"], "Role");
        assert_eq!(binding["subjects"][0]["namespace"], "ops");
    }
    assert_plugin_roles(&objects, &sources, "ops");
    let args = container_args(one(&objects, "Deployment").unwrap());
    assert!(
        args.contains(&"--watch-namespace=team-a,team-b".into()),
        "{args:?}"
    );
}

#[test]
fn the_plugin_resource_values_become_arguments_and_a_mounted_ca() {
    let tools = tools();
    // Served by default with the operator's defaults: no argument (the defaults test lists them all).
    for (ca, source) in [
        ("pluginResources.registryCA.configMap=registry-ca", "configMap"),
        ("pluginResources.registryCA.secret=registry-ca", "secret"),
    ] {
        let objects = tools
            .template(
                "ops",
                &[
                    "--set",
                    "disablePlugins={raycluster,rayjob}",
                    "--set",
                    "pluginResources.selector=operator in (team-a)",
                    "--set",
                    "pluginResources.allowTags=true",
                    "--set",
                    ca,
                ],
            )
            .unwrap();
        let deployment = one(&objects, "Deployment").unwrap();
        let args = container_args(deployment);
        let added: Vec<&str> = args[args.len() - 4..].iter().map(String::as_str).collect();
        assert_eq!(
            added,
            [
                "--disable-plugins=raycluster,rayjob",
                "--plugin-resource-selector=operator in (team-a)",
                "--allow-plugin-tags",
                "--plugin-registry-ca=/etc/kuberay-wasm-registry-ca/ca.crt",
            ]
        );
        let pod = &deployment["spec"]["template"]["spec"];
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "plugin-registry-ca")
            .unwrap();
        let name = if source == "secret" { "secretName" } else { "name" };
        assert_eq!(volume[source][name], "registry-ca", "{volume}");
        assert_eq!(
            volume[source]["items"],
            serde_json::json!([{"key": "ca.crt", "path": "ca.crt"}])
        );
        let mount = pod["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "plugin-registry-ca")
            .unwrap();
        assert_eq!(
            (&mount["mountPath"], &mount["readOnly"]),
            (&"/etc/kuberay-wasm-registry-ca".into(), &true.into())
        );
    }
}

#[test]
fn plugin_resources_disabled_pass_the_flag_and_grant_nothing_for_them() {
    let tools = tools();
    let sources = Sources::read().unwrap();
    let objects = tools
        .template(
            "ops",
            &[
                "--set",
                "pluginResources.enabled=false",
                "--set",
                "pluginResources.registryCA.configMap=ignored",
            ],
        )
        .unwrap();
    let deployment = one(&objects, "Deployment").unwrap();
    let args = container_args(deployment);
    assert!(args.contains(&"--plugin-resources=false".into()), "{args:?}");
    assert!(
        !args.iter().any(|a| a.starts_with("--plugin-registry-ca")),
        "{args:?}"
    );
    let volumes = &deployment["spec"]["template"]["spec"]["volumes"];
    assert!(!volumes.to_string().contains("plugin-registry-ca"), "{volumes}");
    assert_eq!(
        granted_by(&operator_rbac(&objects), "ClusterRole", None).unwrap(),
        sources.direct
    );
    assert_eq!(
        granted_by(&objects, "Role", Some("ops")).unwrap(),
        sources.leader_election
    );
    assert!(
        granted_by(&objects, "Role", Some(EVENTS_OF_CLUSTER_SCOPED))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_policy_becomes_a_mounted_config_map_whose_change_rolls_the_pods() {
    let tools = tools();
    let policy = std::fs::read_to_string(repo_root().join("host/deploy/policy.yaml")).unwrap();
    // From a file, as an administrator would pass it (`--set-string` splits at commas).
    let render = |policy: &str| {
        let file = std::env::temp_dir().join(format!("kuberay-deploy-policy-{}.yaml", std::process::id()));
        std::fs::write(&file, policy).unwrap();
        let objects = tools
            .template("ops", &["--set-file", &format!("policy={}", file.display())])
            .unwrap();
        std::fs::remove_file(&file).unwrap();
        objects
    };
    let objects = render(&policy);
    let config_map = one(&objects, "ConfigMap").unwrap();
    assert_eq!(
        config_map["data"]["policy.yaml"].as_str().map(str::trim_end),
        Some(policy.trim_end())
    );
    let deployment = one(&objects, "Deployment").unwrap();
    assert!(container_args(deployment).contains(&"--policy=/etc/kuberay-wasm/policy.yaml".into()));
    let checksum = |objects: &[Value]| {
        one(objects, "Deployment").unwrap()["spec"]["template"]["metadata"]["annotations"]["checksum/policy"]
            .clone()
    };
    assert!(checksum(&objects).is_string());
    assert_ne!(
        checksum(&objects),
        checksum(&render(&policy.replace("baseline", "restricted")))
    );
}

#[test]
fn a_plugin_volume_is_mounted_and_used_instead_of_the_shipped_plugins() {
    let tools = tools();
    let objects = tools
        .template(
            "ops",
            &["--set", "plugins.volume.persistentVolumeClaim.claimName=plugins"],
        )
        .unwrap();
    let deployment = one(&objects, "Deployment").unwrap();
    assert!(container_args(deployment).contains(&"--plugins=/var/lib/kuberay-wasm/plugins".into()));
    let pod = &deployment["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "plugins")
        .unwrap();
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], "plugins");
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "plugins")
        .unwrap();
    assert_eq!(
        (&mount["mountPath"], &mount["readOnly"]),
        (&"/var/lib/kuberay-wasm/plugins".into(), &true.into())
    );
}

#[test]
fn the_service_monitor_scrapes_the_metrics_service_when_enabled() {
    let tools = tools();
    let objects = tools
        .template("ops", &["--set", "metrics.serviceMonitor.enabled=true"])
        .unwrap();
    let monitor = one(&objects, "ServiceMonitor").unwrap();
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
    let service = one(&objects, "Service").unwrap();
    for (key, value) in monitor["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&service["metadata"]["labels"][key], value);
    }
}

#[test]
fn the_chart_installs_the_same_crds_as_the_repository() {
    let tools = tools();
    let objects = tools.template("ops", &["--include-crds"]).unwrap();
    let rendered: BTreeSet<&str> = manifests::of_kind(&objects, "CustomResourceDefinition")
        .into_iter()
        .map(manifests::name)
        .collect();
    // The ray.io CRDs (crds/ray.io_<plural>.yaml) and ours (deploy/crds/<group>_<plural>.yaml, the
    // ReconcilePlugin's): each in the chart's crds/ with the same bytes, named `<plural>.<group>`.
    let mut expected = BTreeSet::new();
    for (dir, prefix) in [("crds", "ray.io_"), ("deploy/crds", "")] {
        for entry in std::fs::read_dir(repo_root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(stem) = file.strip_suffix(".yaml") else {
                continue;
            };
            if !file.starts_with(prefix) {
                continue;
            }
            let chart_copy = repo_root().join(CHART).join("crds").join(&file);
            assert_eq!(
                std::fs::read(&chart_copy).unwrap(),
                std::fs::read(&path).unwrap(),
                "{dir}/{file}"
            );
            let (group, plural) = stem.split_once('_').unwrap();
            expected.insert(format!("{plural}.{group}"));
        }
    }
    assert!(
        expected.contains("reconcileplugins.plugins.kuberay-wasm.io"),
        "{expected:?}"
    );
    assert_eq!(rendered, expected.iter().map(String::as_str).collect());
}

/// The Roles for ReconcilePlugin resources and leader election: those of the operator's namespace `namespace`,
/// and the Events one.
fn assert_plugin_roles(objects: &[Value], sources: &Sources, namespace: &str) {
    assert_eq!(
        granted_by(objects, "Role", Some(namespace)).unwrap(),
        sources.own_namespace()
    );
    assert_eq!(
        granted_by(objects, "Role", Some(EVENTS_OF_CLUSTER_SCOPED)).unwrap(),
        sources.plugin_events
    );
}

fn union(a: &Permissions, b: &Permissions) -> Permissions {
    a.union(b).cloned().collect()
}

fn sorted(mut names: Vec<&str>) -> Vec<&str> {
    names.sort_unstable();
    names
}

/// The security settings of the operator's Pod: non-root, no privilege, read-only root filesystem.
pub fn assert_secure(pod: &Value) {
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 65532);
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    let security = &pod["containers"][0]["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
}

/// Whether `object` is one of the editor and viewer ClusterRoles of the Ray kinds, which are for people (KubeRay's
/// `<kind>-editor-role` and `<kind>-viewer-role`, named after the release here).
pub fn is_user_role(object: &Value) -> bool {
    let name = manifests::name(object);
    object["kind"] == "ClusterRole" && (name.ends_with("-editor-role") || name.ends_with("-viewer-role"))
}

/// The editor and viewer ClusterRoles of `objects`.
pub fn user_roles(objects: &[Value]) -> Vec<&Value> {
    objects.iter().filter(|o| is_user_role(o)).collect()
}

/// `objects` without the editor and viewer ClusterRoles: what grants the operator its rights.
pub fn operator_rbac(objects: &[Value]) -> Vec<Value> {
    objects.iter().filter(|o| !is_user_role(o)).cloned().collect()
}

/// The names of the objects of `kind`.
pub fn kinds<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a str> {
    manifests::of_kind(objects, kind)
        .into_iter()
        .map(manifests::name)
        .collect()
}
