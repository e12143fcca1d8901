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
    // A key neither chart has is refused, not ignored (a misspelt watchNamespace would install cluster-wide).
    (
        &["--set", "watchNamespaceList={team-a}"],
        "at '': additional properties 'watchNamespaceList' not allowed",
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
    // KubeRay's values: unknown keys in its objects, wrong types and values.
    (
        &["--set", "logging.level=debug"],
        "at '/logging': additional properties 'level' not allowed",
    ),
    (
        &["--set", "metrics.serviceMonitor.port=http"],
        "at '/metrics/serviceMonitor': additional properties 'port' not allowed",
    ),
    (
        &["--set", "useKubernetesProxy=yes"],
        "at '/useKubernetesProxy': got string, want boolean",
    ),
    (
        &["--set", "logging.stdoutEncoder=xml"],
        "at '/logging/stdoutEncoder': value must be one of '', 'json', 'console'",
    ),
    (
        &["--set", "service.type=ExternalName"],
        "at '/service/type': value must be one of 'ClusterIP', 'NodePort', 'LoadBalancer'",
    ),
    (&["--set", "service.port=0"], "at '/service/port': minimum"),
    // The probes' timing only: what they probe is the chart's.
    (
        &["--set", "livenessProbe.httpGet.path=/metrics"],
        "at '/livenessProbe': additional properties 'httpGet' not allowed",
    ),
    (
        &["--set", "watchNamespace={team_a}"],
        "watchNamespace: \"team_a\" is not a namespace name",
    ),
    (
        &["--set", "leaderElectionEnabled=false"],
        "replicas is 2 with leaderElectionEnabled false",
    ),
    (
        &["--set", "labels.app\\.kubernetes\\.io/name=x"],
        "labels: \"app.kubernetes.io/name\" is set by the chart",
    ),
    (
        &["--set", "image.repository=quay.io/kuberay/operator"],
        "image.repository is quay.io/kuberay/operator, KubeRay's operator image",
    ),
    (
        &["-f", crate::kuberay_values::KUBERAY_DEFAULTS],
        "image.repository is quay.io/kuberay/operator, KubeRay's operator image",
    ),
    // KubeRay's operator refuses both at once, and a scheduler it does not know.
    (
        &[
            "--set",
            "batchScheduler.enabled=true",
            "--set",
            "batchScheduler.name=yunikorn",
        ],
        "batchScheduler: enabled (deprecated, Volcano) and name (\"yunikorn\") are both set",
    ),
    (
        &["--set", "batchScheduler.name=slurm"],
        "'/batchScheduler/name': value must be one of",
    ),
    // KubeRay's values for what kuberay-wasm does not do.
    (
        &["--set", "configuration.enabled=true"],
        "configuration.enabled asks the chart to render KubeRay's Configuration file, which this chart does not do yet",
    ),
    (
        &["--set", "logging.baseDir=/var/log/kuberay"],
        "logging.baseDir (\"/var/log/kuberay\") and logging.fileName (\"\") ask for a log file",
    ),
    (
        &["--set", "logging.fileName=operator.log"],
        "ask for a log file, which kuberay-wasm does not write",
    ),
    (
        &[
            "--set",
            "singleNamespaceInstall=true",
            "--set",
            "pluginResources.enabled=true",
        ],
        "singleNamespaceInstall (KubeRay's value) installs no cluster-wide RBAC, and pluginResources.enabled needs",
    ),
    // A KubeRay value and the chart's for the same setting, both set and different.
    (
        &[
            "--set",
            "watchNamespace={team-a}",
            "--set",
            "watchNamespaces={team-b}",
        ],
        "watchNamespace (KubeRay's name) is [team-a] and watchNamespaces is [team-b]",
    ),
    (
        &["--set", "useKubernetesProxy=false", "--set", "routing=proxy"],
        "useKubernetesProxy (KubeRay's name) is false and routing is proxy",
    ),
    (
        &[
            "--set",
            "leaderElectionEnabled=true",
            "--set",
            "leaderElection.enabled=false",
        ],
        "leaderElectionEnabled (KubeRay's name) is true and leaderElection.enabled is false",
    ),
    (
        &["--set", "rbacEnable=true", "--set", "rbac.create=false"],
        "rbacEnable (KubeRay's name) is true and rbac.create is false",
    ),
    (
        &["--set", "logging.stdoutEncoder=json", "--set", "logFormat=text"],
        "logging.stdoutEncoder (KubeRay's value) is json and logFormat is text",
    ),
    (
        &["--set", "labels.team=a", "--set", "podLabels.team=b"],
        "labels (KubeRay's value) and podLabels both set \"team\", to different values (a and b)",
    ),
    (
        &["--set", "annotations.owner=a", "--set", "podAnnotations.owner=b"],
        "annotations (KubeRay's value) and podAnnotations both set \"owner\"",
    ),
    (
        &[
            "--set",
            "metrics.serviceMonitor.enabled=true",
            "--set",
            "metrics.serviceMonitor.additionalLabels.release=a",
            "--set",
            "metrics.serviceMonitor.labels.release=b",
        ],
        "metrics.serviceMonitor.additionalLabels (KubeRay's value) and metrics.serviceMonitor.labels both set \"release\"",
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
        // KubeRay's values agreeing with the chart's.
        &["--set", "watchNamespace={a,b}", "--set", "watchNamespaces={b,a}"],
        &["--set", "useKubernetesProxy=true", "--set", "routing=proxy"],
        &["--set", "leaderElectionEnabled=true"],
        &[
            "--set",
            "leaderElectionEnabled=false",
            "--set",
            "leaderElection.enabled=false",
            "--set",
            "replicas=1",
        ],
        &["--set", "rbacEnable=false", "--set", "rbac.create=false"],
        &[
            "--set",
            "logging.stdoutEncoder=console",
            "--set",
            "logFormat=text",
        ],
        &["--set", "logging.stdoutEncoder=json", "--set", "logFormat=auto"],
        &["--set", "labels.team=a", "--set", "podLabels.team=a"],
        &[
            "--set",
            "singleNamespaceInstall=true",
            "--set",
            "pluginResources.enabled=false",
        ],
        // Without RBAC from the chart, the ClusterRole ReconcilePlugin resources need is someone else's.
        &[
            "--set",
            "singleNamespaceInstall=true",
            "--set",
            "rbacEnable=false",
            "--set",
            "pluginResources.enabled=true",
        ],
    ] {
        tools.template("ops", values).unwrap();
    }
}
