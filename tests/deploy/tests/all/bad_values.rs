//! Values that make no sense stop `helm template` (and so `helm install`) with a message naming the value.

use crate::tools;

/// Each case: the values, and what the error must say.
const CASES: &[(&[&str], &str)] = &[
    (
        &["--set", "routing=fast"],
        "at '/routing': value must be one of 'direct', 'proxy'",
    ),
    (&["--set", "replicas=-1"], "at '/replicas': minimum"),
    (
        &["--set", "replicas=0"],
        "replicas is 0 with leaderElection.enabled true",
    ),
    (
        &["--set", "leaderElection.enabled=false"],
        "replicas is 2 with leaderElection.enabled false",
    ),
    (&["--set", "concurrency=0"], "at '/concurrency': minimum"),
    // KubeRay's name for watchNamespaces: refused, not ignored into a cluster-wide install.
    (
        &["--set", "watchNamespace={team-a}"],
        "additional properties 'watchNamespace' not allowed",
    ),
    (
        &["--set", "featureGates[0].name=RayCronJob"],
        "missing property 'enabled'",
    ),
    (&["--set", "kubeClient.qps=fast"], "at '/kubeClient/qps': '"),
    (
        &["--set", "plugins.volume=my-pvc"],
        "at '/plugins/volume': got string, want object",
    ),
    (
        &["--set", "plugins.volume.hostPath=/srv/plugins"],
        "\"hostPath\" is not one",
    ),
    (
        &[
            "--set",
            "plugins.volume.name=p",
            "--set",
            "plugins.volume.configMap.name=p",
        ],
        "plugins.volume must be one Kubernetes volume source",
    ),
    (
        &["--set", "watchNamespaces={team_a}"],
        "\"team_a\" is not a namespace name",
    ),
    (
        &["--set", "watchNamespaces={-a}"],
        "\"-a\" is not a namespace name",
    ),
    (
        &["--set-string", "policy=plugins: [x"],
        "policy is not valid YAML",
    ),
    (
        &[
            "--set",
            "metrics.serviceMonitor.enabled=true",
            "--set",
            "metrics.service.enabled=false",
        ],
        "metrics.serviceMonitor.enabled needs metrics.service.enabled",
    ),
    (
        &["--set", "pluginResources.allowTags=yes"],
        "at '/pluginResources/allowTags': got string, want boolean",
    ),
    (
        &["--set", "pluginResources.registryCA=registry-ca"],
        "at '/pluginResources/registryCA': got string, want object",
    ),
    (
        &["--set", "pluginResources.registryCA.caFile=/ca.pem"],
        "at '/pluginResources/registryCA': additional properties 'caFile' not allowed",
    ),
    (
        &[
            "--set",
            "pluginResources.registryCA.configMap=a",
            "--set",
            "pluginResources.registryCA.secret=b",
        ],
        "pluginResources.registryCA must name one ConfigMap or one Secret",
    ),
    (
        &["--set", "disablePlugins={raycluster,ray job}"],
        "at '/disablePlugins/1': 'ray job' does not match pattern",
    ),
];

#[test]
fn values_that_make_no_sense_fail_with_a_message_naming_them() {
    let tools = tools();
    for (values, message) in CASES {
        let error = tools.template_error(values).unwrap();
        assert!(
            error.contains(message),
            "{values:?}: expected {message:?} in:\n{error}"
        );
    }
}

#[test]
fn values_that_make_sense_render() {
    let tools = tools();
    for values in [
        &["--set", "replicas=0", "--set", "leaderElection.enabled=false"][..],
        &["--set", "replicas=1", "--set", "leaderElection.enabled=false"],
        &["--set", "watchNamespaces={a,b-2}"],
        &["--set", "plugins.volume.configMap.name=plugins"],
        &[
            "--set",
            "pluginResources.registryCA.secret=ca",
            "--set",
            "disablePlugins={raycluster}",
        ],
        &["--set", "pluginResources.enabled=false"],
    ] {
        tools.template("ops", values).unwrap();
    }
}
