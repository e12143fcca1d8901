//! Installed into the test environment's control plane (`helm install`, `kubectl apply --server-side -k`),
//! the chart and each overlay give the operator's ServiceAccount exactly the documented rights of its
//! routing mode, where they should and nowhere else, as `kubectl auth can-i --list` reports them. The
//! operator's Pods are not waited for (no `--wait`): this is about what is installed, not about the
//! operator running.

use std::{process::Command, time::Duration};

use kuberay_deploy_tests::{
    Tools, can_i,
    rules::{Permissions, Sources, authenticated},
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
    let Some(tools) = tools() else { return };
    let env = TestEnv::shared().await.unwrap();
    let sources = Sources::read().unwrap();
    let release_ns = env.namespace("chart-direct").await.unwrap();
    let other = env.namespace("chart-any").await.unwrap();
    let release = format!("kuberay-wasm-{}", release_ns.name());
    let uninstall = helm_install(&tools, env, &release, release_ns.name(), &[]);
    for crd in ["rayclusters", "rayjobs", "rayservices", "raycronjobs"] {
        kubectl(env, &["get", "crd", &format!("{crd}.ray.io")]);
    }
    let sa = (release_ns.name(), release.as_str());
    let in_release_ns = sources.direct.union(&sources.leader_election).cloned().collect();
    assert_rights(env, sa, release_ns.name(), &plus_authenticated(in_release_ns)).await;
    assert_rights(env, sa, other.name(), &plus_authenticated(sources.direct.clone())).await;
    stdout_of(uninstall).unwrap();
}

#[tokio::test]
async fn the_chart_grants_proxy_routing_in_the_watched_namespaces_only() {
    let Some(tools) = tools() else { return };
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
    assert_rights(
        env,
        sa,
        release_ns.name(),
        &plus_authenticated(sources.leader_election.clone()),
    )
    .await;
    assert_rights(
        env,
        sa,
        watched.name(),
        &plus_authenticated(sources.watched(true)),
    )
    .await;
    assert_rights(env, sa, other.name(), &authenticated()).await;
    stdout_of(uninstall).unwrap();
}

/// Both overlays in turn (they install the same cluster-wide names): direct, then proxy over it.
#[tokio::test]
async fn the_overlays_grant_what_their_routing_mode_needs() {
    let Some(tools) = tools() else { return };
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
        let in_own_ns = sources
            .watched(proxy)
            .union(&sources.leader_election)
            .cloned()
            .collect();
        assert_rights(env, sa, "kuberay-system", &plus_authenticated(in_own_ns)).await;
        assert_rights(env, sa, other.name(), &plus_authenticated(sources.watched(proxy))).await;
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
