//! KubeRay's apiserver end-to-end harness, reproduced against our backend: KubeRay's suite
//! (`apiserver/test/e2e`) installs its apiserver with an `apiserver-curl` container (`curlimages/curl`,
//! `sleep infinity`) and sends every request with client-go's SPDY exec of `curl -s -L -w
//! HTTP_STATUS:%{http_code} ...` in that container, to `http://localhost:8888`, without credentials. Here our
//! chart installs the backend with `auth: none` (KubeRay's behaviour) and that container, and the requests go the
//! same way (kubectl exec over SPDY). The suite itself cannot run here: the Go module proxy serves none of
//! KubeRay's `apiserver`, `apiserversdk` and `proto` modules (docs/rest-api.md, "KubeRay's end-to-end suite").

use std::{process::Command, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, api::ListParams};
use kuberay_deploy_tests::tools::{APISERVER_CHART, stdout_of};
use kuberay_testenv::{
    TestEnv, apiserver_binary,
    fixtures::{eventually, is_ready},
    images::{ImageMap, ImageSpec},
};
use serde_json::{Value, json};

use crate::tools;

/// KubeRay's `util.CurlContainerName`.
const CURL_CONTAINER: &str = "apiserver-curl";

/// One request the way KubeRay's `RemoteExecuteClient` sends it: status and body.
fn curl(env: &TestEnv, ns: &str, pod: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let mut command: Command = env.kubectl().unwrap();
    // client-go's SPDY executor, as KubeRay's harness uses (kubectl falls back to it with WebSockets off).
    command.env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");
    command.args(["exec", "-n", ns, pod, "-c", CURL_CONTAINER, "--"]);
    command.args([
        "curl",
        "-s",
        "-L",
        "-w",
        "HTTP_STATUS:%{http_code}",
        "-H",
        "Accept: application/json",
    ]);
    command.args(["-X", method]);
    let text = body.map(Value::to_string);
    if let Some(text) = &text {
        command.args(["-H", "Content-Type: application/json", "-d", text]);
    }
    command.arg(format!("http://localhost:8888{path}"));
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "exec failed: {} / {stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (body, status) = stdout.rsplit_once("HTTP_STATUS:").expect("curl's status suffix");
    (
        status.trim().parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::String(body.to_string())),
    )
}

#[tokio::test]
async fn kuberay_e2e_requests_reach_the_backend_by_exec_of_curl_in_its_pod() {
    let tools = tools();
    let env: &TestEnv = TestEnv::shared().await.unwrap();
    let admin = env.client().await.unwrap();
    env.install_crds().await.unwrap();
    let release = env.namespace("apiserver-e2e").await.unwrap();
    let work = env.namespace("apiserver-e2e-work").await.unwrap();
    let ns = release.name();
    let image = format!("kuberay-apiserver:{ns}");
    let mut images = ImageMap::one(&image, ImageSpec::new(apiserver_binary().unwrap()));
    images.images.insert(
        "curlimages/curl:latest".into(),
        ImageSpec::new("/usr/bin/curl").with_host_commands(),
    );
    env.map_images(&images).unwrap();
    let sidecar = json!([{"name": CURL_CONTAINER, "image": "curlimages/curl:latest",
                          "command": ["sleep", "infinity"], "imagePullPolicy": "IfNotPresent"}]);
    let values = format!("image.tag={ns},name=kas-{ns},userRole.name=kas-user-{ns},auth=none");
    let mut install = tools.helm();
    install.arg("--kubeconfig").arg(env.kubeconfig());
    install.args([
        "install",
        "kuberay-apiserver",
        APISERVER_CHART,
        "--namespace",
        ns,
        "--set",
        &values,
    ]);
    install.args(["--set-json", &format!("sidecarContainers={sidecar}")]);
    stdout_of(install).unwrap();

    // KubeRay's harness finds the Pod by its component label.
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let pod = eventually(
        "the apiserver Pod to be Ready",
        Duration::from_secs(120),
        || async {
            let list = pods
                .list(&ListParams::default().labels("app.kubernetes.io/component=kuberay-apiserver"))
                .await
                .ok()?;
            list.items.into_iter().find(is_ready)
        },
    )
    .await;
    let pod = pod.metadata.name.unwrap();
    let api = format!("/apis/v1/namespaces/{}/compute_templates", work.name());

    let template = json!({"name": "small", "namespace": work.name(), "cpu": 1, "memory": 1});
    let (status, created) = curl(env, ns, &pod, "POST", &api, Some(&template));
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["name"], "small");
    let (status, got) = curl(env, ns, &pod, "GET", &format!("{api}/small"), None);
    assert_eq!((status, &got["cpu"]), (200, &json!(1)), "{got}");
    // KubeRay's answer to an empty name segment: 400 with gRPC code 3 (InvalidArgument).
    let (status, empty) = curl(env, ns, &pod, "GET", &format!("{api}/"), None);
    assert_eq!((status, &empty["code"]), (400, &json!(3)), "{empty}");
    let (status, _) = curl(env, ns, &pod, "DELETE", &format!("{api}/small"), None);
    assert_eq!(status, 200);
    let (status, missing) = curl(env, ns, &pod, "GET", &format!("{api}/small"), None);
    assert_eq!((status, &missing["code"]), (404, &json!(5)), "{missing}");

    let mut uninstall = tools.helm();
    uninstall.arg("--kubeconfig").arg(env.kubeconfig());
    uninstall.args(["uninstall", "kuberay-apiserver", "--namespace", ns]);
    stdout_of(uninstall).unwrap();
    let _ = release.delete(&admin).await;
    let _ = work.delete(&admin).await;
}
