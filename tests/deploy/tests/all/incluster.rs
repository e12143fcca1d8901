//! The chart installed with its operator Pods run for real: the simulated kubelet maps the chart's image to
//! the operator binary built here and the image's plugin directory to the plugins built for the tests, so the
//! Pods run `kuberay-wasm operator` with their ServiceAccount's in-cluster configuration and the chart's RBAC.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use kuberay_deploy_tests::{
    Tools,
    tools::{CHART, stdout_of},
};
pub use kuberay_testenv::fixtures::{eventually, small_cluster};
use kuberay_testenv::{
    TestEnv,
    fixtures::is_ready,
    images::{ImageMap, ImageSpec},
    operator_binary,
};
use serde_json::json;

/// The chart's default image repository; each release gets a tag of its own, so that tests sharing an
/// environment map their own plugin directories.
const REPOSITORY: &str = "kuberay-wasm";
/// Where the image keeps its plugins (the chart's `--plugins` without `plugins.volume`).
const IMAGE_PLUGINS: &str = "/opt/kuberay-wasm/plugins";
/// The operator Pods' labels.
pub const SELECTOR: &str = "app.kubernetes.io/name=kuberay-wasm";
/// The label key of the ReconcilePlugin resources a release serves (its value: the release namespace).
pub const PLUGIN_LABEL: &str = "kuberay-wasm-test";

/// A release of the chart whose Pods run the operator.
pub struct Operator {
    uninstall: Command,
    plugins: PathBuf,
}

impl Operator {
    /// Maps the chart's image (tagged `namespace`) and installs the chart into `namespace`, watching
    /// `watched`, with `values` (`--set` arguments). It serves only the ReconcilePlugin resources labelled
    /// [`PLUGIN_LABEL`]`=<namespace>`: they are cluster-scoped, and other tests' and the demo's are not its
    /// business.
    pub fn install(tools: &Tools, env: &TestEnv, namespace: &str, watched: &str, values: &[&str]) -> Self {
        let operator = operator_binary().unwrap();
        let plugins = plugins_dir(namespace);
        let spec = ImageSpec::new(&operator).with_path(IMAGE_PLUGINS, &plugins);
        let image = format!("{REPOSITORY}:{namespace}");
        env.map_images(&ImageMap::one(&image, spec)).unwrap();
        let release = format!("kuberay-wasm-{namespace}");
        let watched = format!("watchNamespaces={{{watched}}}");
        let mut install = helm(
            tools,
            env,
            &["install", &release, CHART, "--namespace", namespace],
        );
        let tag = format!("image.tag={namespace}");
        let selector = format!("pluginResources.selector={PLUGIN_LABEL}={namespace}");
        install
            .args(["--set", &watched, "--set", &tag, "--set", &selector])
            .args(values);
        stdout_of(install).unwrap();
        let uninstall = helm(tools, env, &["uninstall", &release, "--namespace", namespace]);
        Self { uninstall, plugins }
    }

    pub fn uninstall(self) {
        stdout_of(self.uninstall).unwrap();
        let _ = std::fs::remove_dir_all(self.plugins);
    }
}

fn helm(tools: &Tools, env: &TestEnv, args: &[&str]) -> Command {
    let mut helm = tools.helm();
    helm.arg("--kubeconfig").arg(env.kubeconfig()).args(args);
    helm
}

/// A directory any user may read, holding the plugins under the names the built-in policy knows.
fn plugins_dir(release: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kwt-chart-plugins-{release}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, built) in [
        ("raycluster.wasm", kuberay_plugin_artifacts::RAYCLUSTER),
        ("rayjob.wasm", kuberay_plugin_artifacts::RAYJOB),
    ] {
        let file = dir.join(name);
        std::fs::copy(Path::new(built), &file).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    dir
}

/// Waits until `count` operator Pods in `namespace` are Ready, and returns them.
pub async fn ready_pods(client: &Client, namespace: &str, count: usize) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    eventually(
        &format!("{count} Ready operator Pods"),
        // Each replica compiles the four plugins in a debug build on start, on two cores shared with the
        // other tests.
        Duration::from_secs(240),
        || async {
            let list = pods.list(&ListParams::default().labels(SELECTOR)).await.ok()?;
            let ready: Vec<Pod> = list.items.into_iter().filter(is_ready).collect();
            (ready.len() == count).then_some(ready)
        },
    )
    .await
}

/// The API of a `ray.io/v1` kind in `namespace`.
pub fn ray_api(client: &Client, namespace: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ray.io", "v1", kind);
    Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk))
}

pub async fn create_cluster(client: &Client, namespace: &str, name: &str) {
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name}, "spec": small_cluster(),
    }))
    .unwrap();
    ray_api(client, namespace, "RayCluster")
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
}

pub async fn head_pod_created(client: &Client, namespace: &str, cluster: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let selector = format!("ray.io/cluster={cluster},ray.io/node-type=head");
    eventually(
        &format!("the head Pod of {cluster}"),
        Duration::from_secs(90),
        || async {
            let list = pods.list(&ListParams::default().labels(&selector)).await.ok()?;
            (!list.items.is_empty()).then_some(())
        },
    )
    .await;
}
