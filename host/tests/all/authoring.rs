//! The plugin authoring kit, without a cluster: `plugin run` on the built plugins (what the operator would
//! write, and what it refuses, with its own messages).

use std::{
    path::Path,
    process::{Command, Output},
};

use crate::support::scratch_dir;

fn kuberay_wasm(args: &[&str]) -> (Option<i32>, String, String) {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
        .args(["--log-format", "text"])
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("running kuberay-wasm");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

const RAYCLUSTER: &str = "\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: sample
  namespace: default
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
";

#[test]
fn plugin_run_shows_the_head_pod_and_service_the_raycluster_plugin_creates() {
    let dir = scratch_dir("plugin-run-raycluster");
    let object = dir.join("raycluster.yaml");
    std::fs::write(&object, RAYCLUSTER).unwrap();
    let (code, stdout, stderr) = kuberay_wasm(&[
        "plugin",
        "run",
        kuberay_plugin_artifacts::RAYCLUSTER,
        "--object",
        path(&object),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("grant:    the entry \"raycluster\" of the built-in policy"),
        "{stdout}"
    );
    assert!(
        stdout.contains("object:   ray.io/v1/RayCluster default/sample (reconcile)"),
        "{stdout}"
    );
    // The calls in order, each with what it did: the head Pod is created with a generated name.
    let head = stdout
        .lines()
        .find_map(|l| {
            l.contains("create")
                .then(|| {
                    l.split_once("v1/Pod sample-head- -> created ")
                        .map(|(_, name)| name.trim())
                })
                .flatten()
        })
        .unwrap_or_else(|| panic!("no head Pod created: {stdout}"));
    assert!(
        stdout.contains("apply            v1/Service sample-head-svc -> applied"),
        "{stdout}"
    );
    // The writes, as a diff against the (empty) state: both objects created, controlled by the RayCluster.
    assert!(
        stdout.contains(&format!("+++ v1/Pod default/{head} (created)")),
        "{stdout}"
    );
    assert!(
        stdout.contains("+++ v1/Service default/sample-head-svc (created)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("+    controller: true\n+    kind: RayCluster\n+    name: sample"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("+    podName: {head}")),
        "the status: {stdout}"
    );
    assert!(!stdout.contains("REFUSED"), "{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A Chaos object that makes the chaos plugin write `forged` (its own invention) or `object` (the user's).
fn chaos(behaviour: &str, field: &str, written: &serde_json::Value) -> String {
    let value = match field {
        "forged" => serde_json::Value::String(written.to_string()),
        _ => written.clone(),
    };
    let object = serde_json::json!({
        "apiVersion": "testing.kuberay-wasm.io/v1", "kind": "Chaos",
        "metadata": {"name": "thief", "namespace": "team-a"},
        "spec": {"behaviour": behaviour, field: value},
    });
    serde_yaml::to_string(&object).unwrap()
}

#[test]
fn plugin_run_shows_a_refused_write_with_the_operators_message() {
    let dir = scratch_dir("plugin-run-chaos");
    let (object, state) = (dir.join("chaos.yaml"), dir.join("state.yaml"));
    // The plugin invents a RayCluster with someone else's token Secret (the user's spec names no Secret).
    let cluster = serde_json::json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "token-ray"},
        "spec": {"authOptions": {"mode": "token", "secretName": "victim"},
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}},
    });
    std::fs::write(&object, chaos("apply", "forged", &cluster)).unwrap();
    std::fs::write(
        &state,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: victim}\ndata: {token: c2VjcmV0}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = kuberay_wasm(&[
        "plugin",
        "run",
        kuberay_plugin_artifacts::CHAOS,
        "--object",
        path(&object),
        "--objects",
        path(&state),
    ]);
    assert_eq!(code, Some(2), "a refusal: {stdout}{stderr}");
    // No policy entry for it: what it asks for, under the built-in policy's defaults (no Secrets).
    assert!(
        stdout.contains("what the plugin asks for, under the defaults of the built-in policy"),
        "{stdout}"
    );
    assert!(stdout.contains("withheld: get on v1/Secret"), "{stdout}");
    let message = "ray.io/v1/RayCluster token-ray: /spec/authOptions/secretName refers to Secret victim, \
                   which Chaos thief neither controls nor names in its request (Chaos thief), and the policy \
                   does not grant";
    assert!(
        stdout.contains(&format!("apply ray.io/v1/RayCluster token-ray: {message}")),
        "{stdout}"
    );
    // What the operator does with the first refused write: a Warning event on the object, and its log line.
    assert!(
        stdout.contains(&format!(
            "Warning WriteRefused (Admit): apply ray.io/v1/RayCluster refused: {message}"
        )),
        "{stdout}"
    );
    assert!(
        stderr.contains("refused") && stderr.contains("plugin=chaos"),
        "{stderr}"
    );
    assert!(stdout.contains("outcome:  ReconcileFailed"), "{stdout}");
    assert!(
        stdout.contains("writes (diff against the given state):\n  (none)"),
        "{stdout}"
    );

    // What the user asks for passes provenance, and then the namespace's Pod Security level bounds it.
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "host-pod"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "etc", "hostPath": {"path": "/etc"}}]},
    });
    std::fs::write(&object, chaos("create", "object", &pod)).unwrap();
    let chaos_plugin = kuberay_plugin_artifacts::CHAOS;
    let (code, stdout, stderr) = kuberay_wasm(&["plugin", "run", chaos_plugin, "--object", path(&object)]);
    assert_eq!(code, Some(0), "privileged by default: {stdout}{stderr}");
    assert!(
        stdout.contains("+++ v1/Pod team-a/host-pod (created)"),
        "{stdout}"
    );
    let (code, stdout, stderr) = kuberay_wasm(&[
        "plugin",
        "run",
        chaos_plugin,
        "--object",
        path(&object),
        "--namespace-level",
        "baseline",
    ]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "REFUSED: v1/Pod host-pod: /spec: volume etc is a hostPath volume (\"/etc\"): namespace team-a enforces Pod Security level baseline"
        ),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
