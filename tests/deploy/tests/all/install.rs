//! Installed into the test environment's control plane (`helm install`, `kubectl apply --server-side -k`),
//! the chart and each overlay give the operator's ServiceAccount exactly the documented rights of its
//! routing mode, where they should and nowhere else, as `kubectl auth can-i --list` reports them, and those
//! ReconcilePlugin resources need: read them and write their status everywhere (they are cluster-scoped),
//! Events about them in `default`, their pull Secrets in the operator's namespace and no other. The
//! operator's Pods are not waited for (no `--wait`): this is about what is installed, not about the
//! operator running.

use std::{process::Command, time::Duration};

use kuberay_deploy_tests::{
    Tools, can_i,
    rules::{EVENTS_OF_CLUSTER_SCOPED, Permissions, Sources, authenticated},
    tools::{CHART, stdout_of},
};
use kuberay_testenv::TestEnv;

use crate::tools;

/// `kubectl` as admin of the test environment.
fn kubectl(env: &TestEnv, args: &[&str]) -> String {
    let mut command = env.kubectl().unwrap();
    command.args(args);
    stdout_of(command).unwrap()
}

/// What `system:serviceaccount:<sa_namespace>:<sa>` may do in `namespace`, once it equals `expected` or
/// after 20 s (RBAC changes reach the authorizer through its informers).
async fn assert_rights(
    env: &TestEnv,
    (sa_namespace, sa): (&str, &str),
    namespace: &str,
    expected: &Permissions,
) {
    let user = format!("--as=system:serviceaccount:{sa_namespace}:{sa}");
    let mut actual = Permissions::new();
    for _ in 0..40 {
        actual = can_i::parse(&kubectl(
            env,
            &["auth", "can-i", "--list", &user, "-n", namespace],
        ))
        .unwrap();
        if &actual == expected {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let missing: Vec<String> = expected.difference(&actual).map(ToString::to_string).collect();
    let extra: Vec<String> = actual.difference(expected).map(ToString::to_string).collect();
    panic!("{user} in {namespace}: missing {missing:#?}, more than documented {extra:#?}");
}

/// `expected` with what every authenticated user may do.
fn plus_authenticated(expected: Permissions) -> Permissions {
    expected.union(&authenticated()).cloned().collect()
}

/// The union of `sets`.
fn all(sets: &[&Permissions]) -> Permissions {
    sets.iter().flat_map(|s| s.iter().cloned()).collect()
}

/// Whether `kubectl auth can-i ARGS -n NAMESPACE` (`ARGS`: a verb, `TYPE[/NAME]`, maybe `--subresource`)
/// says yes for the ServiceAccount `sa`.
fn can_i(env: &TestEnv, (sa_namespace, sa): (&str, &str), namespace: &str, args: &[&str]) -> bool {
    let mut command = env.kubectl().unwrap();
    command.args(["auth", "can-i"]).args(args).args(["-n", namespace]);
    command.arg(format!("--as=system:serviceaccount:{sa_namespace}:{sa}"));
    let out = command.output().unwrap();
    match String::from_utf8_lossy(&out.stdout).trim() {
        "yes" => true,
        "no" => false,
        other => panic!(
            "can-i {args:?} -n {namespace}: {other:?} {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// What serving ReconcilePlugin resources needs, asked one by one: the resources and their status anywhere,
/// Events in `default`, the pull Secret in `own` and, unless `secrets_elsewhere` (a ClusterRole grants the
/// plugins' Secrets everywhere), no Secret in `other`.
fn assert_plugin_rights(env: &TestEnv, sa: (&str, &str), own: &str, other: &str, secrets_elsewhere: bool) {
    let reconcileplugins = "reconcileplugins.plugins.kuberay-wasm.io";
    for verb in ["get", "list", "watch"] {
        assert!(
            can_i(env, sa, other, &[verb, reconcileplugins]),
            "{verb} reconcileplugins"
        );
    }
    for verb in ["create", "update", "delete"] {
        assert!(
            !can_i(env, sa, other, &[verb, reconcileplugins]),
            "{verb} reconcileplugins"
        );
    }
    assert!(can_i(
        env,
        sa,
        other,
        &["patch", reconcileplugins, "--subresource=status"]
    ));
    for verb in ["create", "patch"] {
        assert!(
            can_i(env, sa, EVENTS_OF_CLUSTER_SCOPED, &[verb, "events.events.k8s.io"]),
            "{verb} events"
        );
    }
    assert!(
        can_i(env, sa, own, &["get", "secrets/regcred"]),
        "the pull Secret"
    );
    assert!(
        !can_i(env, sa, own, &["list", "secrets"]),
        "Secrets are read by name"
    );
    assert_eq!(
        can_i(env, sa, other, &["get", "secrets/regcred"]),
        secrets_elsewhere,
        "a Secret in {other}"
    );
}

fn helm(tools: &Tools, env: &TestEnv, args: &[&str]) -> Command {
    let mut helm = tools.helm();
    helm.arg("--kubeconfig").arg(env.kubeconfig()).args(args);
    helm
}

/// Installs the chart as release `release` in `namespace` with `values`, and returns the uninstall command.
fn helm_install(tools: &Tools, env: &TestEnv, release: &str, namespace: &str, values: &[&str]) -> Command {
    let mut install = helm(tools, env, &["install", release, CHART, "--namespace", namespace]);
    install.args(values);
    stdout_of(install).unwrap();
    helm(tools, env, &["uninstall", release, "--namespace", namespace])
}

#[tokio::test]
async fn the_chart_grants_direct_routing_in_every_namespace() {
    let tools = tools();
    let env = TestEnv::shared().await.unwrap();
    let sources = Sources::read().unwrap();
    let release_ns = env.namespace("chart-direct").await.unwrap();
    let other = env.namespace("chart-any").await.unwrap();
    let release = format!("kuberay-wasm-{}", release_ns.name());
    let uninstall = helm_install(&tools, env, &release, release_ns.name(), &[]);
    for crd in ["rayclusters", "rayjobs", "rayservices", "raycronjobs"] {
        kubectl(env, &["get", "crd", &format!("{crd}.ray.io")]);
    }
    kubectl(env, &["get", "crd", "reconcileplugins.plugins.kuberay-wasm.io"]);
    let sa = (release_ns.name(), release.as_str());
    let in_release_ns = all(&[&sources.direct, &sources.own_namespace(), &sources.plugins]);
    assert_rights(env, sa, release_ns.name(), &plus_authenticated(in_release_ns)).await;
    let elsewhere = all(&[&sources.direct, &sources.plugins]);
    assert_rights(env, sa, other.name(), &plus_authenticated(elsewhere.clone())).await;
    let in_default = all(&[&elsewhere, &sources.plugin_events]);
    assert_rights(env, sa, EVENTS_OF_CLUSTER_SCOPED, &plus_authenticated(in_default)).await;
    assert_plugin_rights(env, sa, release_ns.name(), other.name(), true);
    stdout_of(uninstall).unwrap();
}

#[tokio::test]
async fn the_chart_grants_proxy_routing_in_the_watched_namespaces_only() {
    let tools = tools();
    let env = TestEnv::shared().await.unwrap();
    let sources = Sources::read().unwrap();
    let release_ns = env.namespace("chart-proxy").await.unwrap();
    let watched = env.namespace("chart-watched").await.unwrap();
    let other = env.namespace("chart-unwatched").await.unwrap();
    let release = format!("kuberay-wasm-{}", release_ns.name());
    let values = [
        "--set",
        "routing=proxy",
        "--set",
        &format!("watchNamespaces={{{}}}", watched.name()),
    ];
    let uninstall = helm_install(&tools, env, &release, release_ns.name(), &values);
    let sa = (release_ns.name(), release.as_str());
    let in_release_ns = all(&[&sources.own_namespace(), &sources.plugins]);
    assert_rights(env, sa, release_ns.name(), &plus_authenticated(in_release_ns)).await;
    let in_watched = all(&[&sources.watched(true), &sources.plugins]);
    assert_rights(env, sa, watched.name(), &plus_authenticated(in_watched)).await;
    // Elsewhere only what ReconcilePlugin resources need: they are cluster-scoped.
    assert_rights(
        env,
        sa,
        other.name(),
        &plus_authenticated(sources.plugins.clone()),
    )
    .await;
    let in_default = all(&[&sources.plugins, &sources.plugin_events]);
    assert_rights(env, sa, EVENTS_OF_CLUSTER_SCOPED, &plus_authenticated(in_default)).await;
    assert_plugin_rights(env, sa, release_ns.name(), other.name(), false);
    stdout_of(uninstall).unwrap();
}

/// Both overlays in turn (they install the same cluster-wide names): direct, then proxy over it.
#[tokio::test]
async fn the_overlays_grant_what_their_routing_mode_needs() {
    let tools = tools();
    let env = TestEnv::shared().await.unwrap();
    let sources = Sources::read().unwrap();
    let other = env.namespace("kustomize-any").await.unwrap();
    let sa = ("kuberay-system", "kuberay-wasm");
    let cluster_objects = [
        "clusterrolebinding/kuberay-wasm-proxy",
        "clusterrole/kuberay-wasm-proxy",
    ];
    // A shared environment may hold the proxy binding of an earlier run.
    kubectl(
        env,
        &[&["delete", "--ignore-not-found"][..], &cluster_objects].concat(),
    );
    for (overlay, proxy) in [("direct", false), ("proxy", true)] {
        let dir = tools.root().join("deploy/kustomize/overlays").join(overlay);
        kubectl(env, &["apply", "--server-side", "-k", &dir.to_string_lossy()]);
        let in_own_ns = all(&[
            &sources.watched(proxy),
            &sources.own_namespace(),
            &sources.plugins,
        ]);
        assert_rights(env, sa, "kuberay-system", &plus_authenticated(in_own_ns)).await;
        let elsewhere = all(&[&sources.watched(proxy), &sources.plugins]);
        assert_rights(env, sa, other.name(), &plus_authenticated(elsewhere.clone())).await;
        let in_default = all(&[&elsewhere, &sources.plugin_events]);
        assert_rights(env, sa, EVENTS_OF_CLUSTER_SCOPED, &plus_authenticated(in_default)).await;
    }
    // The operator must not run on in a shared environment (`make cluster`), nor keep the proxy rights the
    // operator's own RBAC test expects absent; the namespace and the direct-routing RBAC stay (that test
    // applies the same, and a terminating namespace would refuse it).
    kubectl(
        env,
        &[
            "delete",
            "--ignore-not-found",
            "-n",
            "kuberay-system",
            "deployment/kuberay-wasm",
        ],
    );
    kubectl(
        env,
        &[&["delete", "--ignore-not-found"][..], &cluster_objects].concat(),
    );
}
