//! `kubectl exec` into Pods the simulated kubelet runs: the API server sends `pods/exec` to the kubelet's
//! streaming endpoint with its kubelet client certificate, and the command runs in the container's network
//! and mount namespaces as the container's user. Both of kubectl's protocols are used: WebSocket (its
//! default, which the API server translates) and SPDY (what client-go's `NewSPDYExecutor` speaks, as KubeRay's
//! apiserver end-to-end suite does).

use std::{
    io::Write,
    process::{Command, Output, Stdio},
};

use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kuberay_testenv::{
    TestEnv, TestNamespace,
    images::{ImageMap, ImageSpec},
};
use serde_json::json;

use crate::util::{create, env, kubelet_port, ready_pod, whoami_binary};

const APP: &str = "testenv-whoami:exec";
const TOOLS: &str = "testenv-tools:exec";

pub(crate) fn map_images(env: &TestEnv) {
    let whoami = whoami_binary();
    for tool in ["/usr/bin/sleep", "/usr/bin/curl", "/bin/sh", "/usr/bin/getent"] {
        assert!(
            std::path::Path::new(tool).is_file(),
            "{tool} is missing: install coreutils, curl, a POSIX shell and getent (libc-bin)"
        );
    }
    let mut map = ImageMap::one(APP, ImageSpec::new(whoami));
    map.images
        .insert(TOOLS.into(), ImageSpec::new("/usr/bin/curl").with_host_commands());
    env.map_images(&map).unwrap();
}

/// A Pod with the whoami server and a tools container that sleeps, as KubeRay's e2e apiserver Pod has its
/// `apiserver-curl` container.
pub(crate) async fn pod(env: &TestEnv, ns: &TestNamespace) -> String {
    let client = env.client().await.unwrap();
    let _: ServiceAccount = create(&client, ns, json!({"metadata": {"name": "whoami"}})).await;
    let _: Pod = create(
        &client,
        ns,
        json!({
            "metadata": {"name": "target", "labels": {"app": "target"}},
            "spec": {
                "serviceAccountName": "whoami",
                "terminationGracePeriodSeconds": 2,
                "securityContext": {"runAsUser": 65532, "runAsGroup": 65532},
                "volumes": [{"name": "data", "emptyDir": {}}],
                "containers": [
                    {
                        "name": "app",
                        "image": APP,
                        "args": ["--port", "8082"],
                        "ports": [{"name": "http", "containerPort": 8082}],
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8082}, "periodSeconds": 1},
                    },
                    {
                        "name": "tools",
                        "image": TOOLS,
                        "command": ["sleep", "infinity"],
                        "env": [{"name": "GREETING", "value": "hello"}],
                        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/exec-test"}],
                    },
                ],
            },
        }),
    )
    .await;
    ready_pod(&client, ns, "target").await;
    "target".into()
}

fn kubectl(env: &TestEnv, who: &str, args: &[&str], stdin: Option<&str>, spdy: bool) -> Output {
    let mut command = env.kubectl().unwrap();
    command
        .env("KUBECONFIG", env.info().kubeconfig(who).unwrap())
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if spdy {
        // kubectl falls back to SPDY when WebSockets are off.
        command.env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");
    }
    let mut child = command.spawn().unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn exec(
    env: &TestEnv,
    ns: &TestNamespace,
    container: &str,
    command: &[&str],
    spdy: bool,
) -> Output {
    let mut args = vec!["exec", "-n", ns.name(), "target", "-c", container, "--"];
    args.extend_from_slice(command);
    kubectl(env, "admin", &args, None, spdy)
}

#[tokio::test]
async fn kubectl_exec_runs_in_the_containers_namespaces_as_its_user() {
    let env = env().await;
    map_images(env);
    let ns = env.namespace("exec").await.unwrap();
    pod(env, &ns).await;
    let client = env.client().await.unwrap();
    assert!(
        kubelet_port(env).await > 0,
        "the Node advertises the kubelet's streaming port"
    );

    for spdy in [false, true] {
        // The container's environment, user, volumes and ServiceAccount files.
        let script = "echo $HOSTNAME $GREETING; id -u; id -g; \
                      echo written > /var/lib/exec-test/f && cat /var/lib/exec-test/f; \
                      cat /var/run/secrets/kubernetes.io/serviceaccount/namespace";
        let out = exec(env, &ns, "tools", &["sh", "-c", script], spdy);
        assert!(out.status.success(), "spdy={spdy}: {}", text(&out.stderr));
        let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
        assert_eq!(
            lines,
            ["target hello", "65532", "65532", "written", ns.name()],
            "spdy={spdy}"
        );

        // The Pod's network: the app container's server on localhost, curl found on the container's PATH.
        let out = exec(
            env,
            &ns,
            "tools",
            &[
                "curl",
                "-s",
                "-w",
                "HTTP_STATUS:%{http_code}",
                "http://localhost:8082/readyz",
            ],
            spdy,
        );
        assert_eq!(
            text(&out.stdout),
            "okHTTP_STATUS:200",
            "spdy={spdy}: {}",
            text(&out.stderr)
        );

        // Standard input, and stderr kept apart from stdout.
        let out = kubectl(
            env,
            "admin",
            &[
                "exec",
                "-i",
                "-n",
                ns.name(),
                "target",
                "-c",
                "tools",
                "--",
                "sh",
                "-c",
                "cat; echo oops >&2",
            ],
            Some("from stdin\n"),
            spdy,
        );
        assert!(out.status.success(), "spdy={spdy}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "from stdin\n");
        assert!(
            text(&out.stderr).contains("oops"),
            "spdy={spdy}: {}",
            text(&out.stderr)
        );

        // A command's exit code is kubectl's.
        let out = exec(env, &ns, "tools", &["sh", "-c", "exit 3"], spdy);
        assert_eq!(out.status.code(), Some(3), "spdy={spdy}: {}", text(&out.stderr));

        // A program that is not there fails with its name.
        let out = exec(env, &ns, "app", &["no-such-program"], spdy);
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("no-such-program"),
            "spdy={spdy}: {}",
            text(&out.stderr)
        );
    }
    ns.delete(&client).await.unwrap();
}

#[tokio::test]
async fn exec_needs_the_right_and_a_container_that_runs() {
    let env = env().await;
    map_images(env);
    let ns = env.namespace("exec-denied").await.unwrap();
    pod(env, &ns).await;
    let client = env.client().await.unwrap();

    // RBAC decides: bob has no right to pods/exec.
    let out = kubectl(
        env,
        "bob",
        &["exec", "-n", ns.name(), "target", "-c", "tools", "--", "true"],
        None,
        false,
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("Forbidden"), "{}", text(&out.stderr));

    // A simulated Pod (image not mapped) runs nothing to exec into: a clear error.
    let _: Pod = create(
        &client,
        &ns,
        json!({"metadata": {"name": "simulated"},
               "spec": {"containers": [{"name": "main", "image": "busybox:stable"}]}}),
    )
    .await;
    ready_pod(&client, &ns, "simulated").await;
    let out = kubectl(
        env,
        "admin",
        &["exec", "-n", ns.name(), "simulated", "--", "true"],
        None,
        false,
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not running a mapped image"),
        "{}",
        text(&out.stderr)
    );

    // The kubelet's port serves only the API server: a client without its certificate is refused at the
    // TLS handshake, before any request is read.
    let port = kubelet_port(env).await;
    let url = format!(
        "https://{}:{port}/exec/{}/target/tools?command=id&stdout=1",
        env.info().host_ip,
        ns.name()
    );
    let out = Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stdout),
        "000",
        "an unauthenticated client got an HTTP answer"
    );
    ns.delete(&client).await.unwrap();
}
