//! What the apiserver's chart (`deploy/helm/kuberay-apiserver`) renders: its defaults, KubeRay's apiserver
//! chart values with KubeRay's meaning, TLS from a Secret, proxy routing, `auth: none`, and the values it
//! refuses. The rights it grants are the ones `apiserver/deploy/` ships (one source).

use kuberay_deploy_tests::{
    manifests::{self, container_args, of_kind, one},
    rules::{granted_by, repo_root},
    tools::{APISERVER_CHART, stdout_of},
};
use serde_json::{Value, json};

use crate::tools;

/// KubeRay's apiserver chart's default values (v1.7.0).
pub const KUBERAY_APISERVER_DEFAULTS: &str =
    "tests/deploy/tests/fixtures/kuberay-apiserver-v1.7.0-values.yaml";

fn render(args: &[&str]) -> Vec<Value> {
    tools()
        .template_of(APISERVER_CHART, "kuberay-apiserver", "ray-system", args)
        .unwrap()
}

/// The rules of the ClusterRole in a manifest of `apiserver/deploy/`.
fn shipped_rules(file: &str) -> kuberay_deploy_tests::rules::Permissions {
    let text = std::fs::read_to_string(repo_root().join("apiserver/deploy").join(file)).unwrap();
    granted_by(&manifests::parse(&text).unwrap(), "ClusterRole", None).unwrap()
}

fn named<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    of_kind(objects, kind)
        .into_iter()
        .find(|o| manifests::name(o) == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[test]
fn the_apiserver_chart_lints_clean_with_its_defaults_and_kuberays() {
    let tools = tools();
    for values in [
        &[][..],
        &[
            "-f",
            KUBERAY_APISERVER_DEFAULTS,
            "--set",
            "image.repository=kuberay-apiserver",
        ],
        &["--set", "auth=none,singleNamespaceInstall=true"],
        &[
            "--set",
            "tls.secretName=api-tls,routing=proxy,ingress.enabled=true",
        ],
    ] {
        let mut helm = tools.helm();
        helm.args(["lint", "--strict", APISERVER_CHART]).args(values);
        let out = stdout_of(helm).unwrap();
        assert!(out.contains("0 chart(s) failed"), "{values:?}: {out}");
    }
}

#[test]
fn the_defaults_render_the_server_acting_as_each_caller() {
    let objects = render(&[]);
    let deployment = one(&objects, "Deployment").unwrap();
    assert_eq!(manifests::name(deployment), "kuberay-apiserver");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["name"], "kuberay-apiserver-container");
    assert_eq!(container["image"], "kuberay-apiserver:0.1.0");
    assert!(
        container.get("command").is_none(),
        "the image's entrypoint must run"
    );
    assert_eq!(
        container_args(deployment),
        [
            "--http-bind-address=0.0.0.0:8888",
            "--grpc-bind-address=0.0.0.0:8887",
            "--log-format=json",
            "--auth=kubernetes",
            "--enable-api-server-v2=true",
        ]
    );
    assert_eq!(pod["serviceAccountName"], "kuberay-apiserver");
    assert_eq!(
        container["livenessProbe"]["httpGet"],
        json!({"path": "/healthz", "port": 8888, "scheme": "HTTP"})
    );
    assert_eq!(
        container["readinessProbe"]["httpGet"],
        json!({"path": "/readyz", "port": 8888, "scheme": "HTTP"})
    );
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);

    // KubeRay's Service name and ports.
    let service = one(&objects, "Service").unwrap();
    assert_eq!(manifests::name(service), "kuberay-apiserver-service");
    let ports: Vec<_> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].clone(), p["port"].clone()))
        .collect();
    assert_eq!(ports, [(json!("http"), json!(8888)), (json!("rpc"), json!(8887))]);
    assert_eq!(
        service["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"],
        "the Service selects the Pods"
    );

    // Its own rights, and the user role, exactly as apiserver/deploy ships them.
    let own = named(&objects, "ClusterRole", "kuberay-apiserver");
    let own = granted_by(std::slice::from_ref(own), "ClusterRole", None).unwrap();
    assert_eq!(own, shipped_rules("rbac.yaml"));
    let user = named(&objects, "ClusterRole", "kuberay-apiserver-user");
    let user = granted_by(std::slice::from_ref(user), "ClusterRole", None).unwrap();
    assert_eq!(user, shipped_rules("user-role.yaml"));
    let binding = one(&objects, "ClusterRoleBinding").unwrap();
    assert_eq!(binding["roleRef"]["name"], "kuberay-apiserver");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "kuberay-apiserver", "namespace": "ray-system"}])
    );
}

#[test]
fn kuberays_values_install_with_their_meaning() {
    let objects = render(&[
        "-f",
        KUBERAY_APISERVER_DEFAULTS,
        "--set",
        "image.repository=kuberay-apiserver,enableAPIServerV2=false,replicaCount=2",
        "--set-string",
        "image.tag=1",
        // KubeRay's values leave `cors` empty (null), which `--set cors.allowOrigin` cannot fill.
        "--set-json",
        r#"cors={"allowOrigin": "*"}"#,
    ]);
    let deployment = one(&objects, "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 2);
    let args = container_args(deployment);
    assert!(args.contains(&"--cors-allow-origin=*".to_string()), "{args:?}");
    assert!(
        args.contains(&"--enable-api-server-v2=false".to_string()),
        "{args:?}"
    );
    // The security proxy is not deployed: one container, and the Service targets the server itself.
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1);
    let service = one(&objects, "Service").unwrap();
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8888);
}

#[test]
fn tls_proxy_routing_and_extras_reach_the_server() {
    let objects = render(&[
        "--set",
        "tls.secretName=api-tls,routing=proxy,extraArgs={--token-cache-ttl=0s},env[0].name=RUST_LOG,env[0].value=debug",
    ]);
    let deployment = one(&objects, "Deployment").unwrap();
    let args = container_args(deployment);
    for arg in [
        "--use-kubernetes-proxy",
        "--tls-cert-file=/etc/kuberay-apiserver/tls/tls.crt",
        "--tls-key-file=/etc/kuberay-apiserver/tls/tls.key",
        "--token-cache-ttl=0s",
    ] {
        assert!(args.contains(&arg.to_string()), "{arg} missing: {args:?}");
    }
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["volumes"][0]["secret"]["secretName"], "api-tls");
    let container = &pod["containers"][0];
    assert_eq!(
        container["volumeMounts"][0]["mountPath"],
        "/etc/kuberay-apiserver/tls"
    );
    assert_eq!(container["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
    assert_eq!(container["env"][0], json!({"name": "RUST_LOG", "value": "debug"}));
}

#[test]
fn without_authentication_the_server_holds_the_user_role_itself() {
    let objects = render(&["--set", "auth=none,singleNamespaceInstall=true"]);
    assert!(
        of_kind(&objects, "ClusterRoleBinding").is_empty(),
        "no cluster-wide binding in a single-namespace install"
    );
    let binding = one(&objects, "RoleBinding").unwrap();
    assert_eq!(manifests::namespace(binding), "ray-system");
    assert_eq!(binding["roleRef"]["name"], "kuberay-apiserver-user");
    assert!(
        of_kind(&objects, "ClusterRole")
            .iter()
            .all(|r| manifests::name(r) != "kuberay-apiserver"),
        "no token review or impersonation rights without authentication"
    );
}

#[test]
fn values_it_cannot_honour_are_refused_with_the_reason() {
    let tools = tools();
    for (values, reason) in [
        (
            &["--set", "singleNamespaceInstall=true"][..],
            "cluster-wide rights",
        ),
        (&["--set", "auth=anyone"], "auth"),
        (&["--set", "routing=dns"], "routing"),
        (&["--set", "nosuchkey=1"], "nosuchkey"),
        (&["--set", "image.nosuchkey=1"], "nosuchkey"),
        (
            &[
                "--set",
                "containerPort[0].name=web,containerPort[0].containerPort=80",
            ],
            "a port named \"http\"",
        ),
    ] {
        let error = tools.template_error_of(APISERVER_CHART, values).unwrap();
        assert!(error.contains(reason), "{values:?}: {error}");
    }
}
