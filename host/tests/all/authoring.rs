//! The plugin authoring kit: `plugin run` on the built plugins (what the operator would write, and what it
//! refuses, with its own messages), `plugin new`'s project built outside this repository for the host and for
//! `wasm32-wasip2`, inspected and run (none of these needs a cluster), and `plugin push` to the test
//! environment's registry.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use kuberay_wasm::reconcileplugin::artifact::{Registry, RegistryOptions, parse_reference};
use oci_client::secrets::RegistryAuth;

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

/// `plugin push` from the command line (a process with no Kubernetes client, which must set up TLS itself),
/// to the test environment's registry: it prints the reference to pin, and that reference pulls the component.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_push_prints_the_reference_a_reconcileplugin_pins() {
    let env = crate::support::env().await;
    let registry = env.registry().expect("the test environment's registry");
    let repository = format!("{}/authoring-{}/chaos", registry.host_port, std::process::id());
    let (code, stdout, stderr) = kuberay_wasm(&[
        "plugin",
        "push",
        kuberay_plugin_artifacts::CHAOS,
        &format!("{repository}:v1"),
        "--username",
        &registry.username,
        "--password",
        &registry.password,
        "--ca-file",
        path(registry.ca_path()),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let pinned = stdout.trim();
    assert!(pinned.starts_with(&format!("{repository}@sha256:")), "{stdout}");
    let options = RegistryOptions {
        extra_roots: vec![std::fs::read(registry.ca_path()).unwrap()],
        timeout: std::time::Duration::from_secs(30),
    };
    let auth = RegistryAuth::Basic(registry.username.clone(), registry.password.clone());
    let pulled = Registry::new(&options)
        .unwrap()
        .pull(&parse_reference(pinned, false).unwrap(), &auth)
        .await
        .unwrap();
    assert_eq!(
        pulled.wasm,
        std::fs::read(kuberay_plugin_artifacts::CHAOS).unwrap()
    );
}

/// The repository's root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn git(repo: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(repo)
        .args([
            "-c",
            "user.name=kuberay-wasm test",
            "-c",
            "user.email=test@kuberay-wasm.invalid",
        ])
        .args(["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"])
        .args(args)
        // The same tree gives the same commit, so the SDK is not rebuilt on every run.
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .status()
        .expect("running git");
    assert!(status.success(), "git {args:?}");
}

/// The SDK as the repository serves it, at the tag the project names: a git repository holding the
/// workspace's manifest (members cut to the SDK and the crates it is built from), those crates and the WIT of
/// this tree, tagged `v<version>`.
fn sdk_repository(dir: &Path) -> PathBuf {
    let repo = dir.join("kuberay-wasm.git");
    let root = workspace();
    // The SDK and what it is built from: the foundation crates and the built-in policy its FakeHost judges by.
    for part in ["plugins/sdk", "crates/core", "crates/admission", "wit"] {
        copy_dir(&root.join(part), &repo.join(part));
    }
    std::fs::create_dir_all(repo.join("host/deploy")).unwrap();
    std::fs::copy(
        root.join("host/deploy/policy.yaml"),
        repo.join("host/deploy/policy.yaml"),
    )
    .unwrap();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let start = manifest.find("members = [").unwrap();
    let end = start + manifest[start..].find(']').unwrap() + 1;
    let manifest = format!(
        "{}members = [\"plugins/sdk\", \"crates/core\", \"crates/admission\"]{}",
        &manifest[..start],
        &manifest[end..]
    );
    std::fs::write(repo.join("Cargo.toml"), manifest).unwrap();
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "--message", "the SDK"]);
    git(
        &repo,
        &["tag", &format!("v{}", kuberay_wasm::authoring::new::SDK_VERSION)],
    );
    repo
}

/// `cargo ARGS` in `project`, with `https://github.com/kuberay-wasm/kuberay-wasm` answered by `repo` (git's
/// `insteadOf`, through the git command line), into a target directory of its own.
fn cargo(project: &Path, repo: &Path, args: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut command = Command::new(cargo);
    command.current_dir(project).args(args);
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_MANIFEST_DIR",
        // `make test` lints our workspace through these; a new author's project builds with plain rustc.
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
    ] {
        command.env_remove(var);
    }
    let status = command
        .env("CARGO_TARGET_DIR", workspace().join("target/plugin-new-test"))
        .env("CARGO_NET_GIT_FETCH_WITH_CLI", "true")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", format!("url.file://{}.insteadOf", path(repo)))
        .env(
            "GIT_CONFIG_VALUE_0",
            "https://github.com/kuberay-wasm/kuberay-wasm",
        )
        .status()
        .expect("running cargo");
    assert!(status.success(), "cargo {args:?} in {}", project.display());
}

/// One test, since it builds a project twice (minutes the first time): `plugin new`, then the project's
/// unit tests natively and its component for `wasm32-wasip2`, exactly as its Cargo.toml says (the SDK by git
/// at the tag), offline but for the local git repository; then `inspect` and `plugin run` on the component.
#[test]
fn plugin_new_writes_a_project_that_builds_outside_the_repository_and_runs() {
    let dir = scratch_dir("plugin-new");
    let project = dir.join("widget-maker");
    let (code, stdout, stderr) = kuberay_wasm(&[
        "plugin",
        "new",
        "widget-maker",
        "--kind",
        "example.com/v1alpha1/Widget",
        "--dir",
        path(&project),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "kuberay-plugin-sdk = {{ git = \"https://github.com/kuberay-wasm/kuberay-wasm\", tag = \"v{}\" }}",
            kuberay_wasm::authoring::new::SDK_VERSION
        )),
        "{manifest}"
    );
    assert!(!manifest.contains("path ="), "no path dependency: {manifest}");
    let (code, _, stderr) = kuberay_wasm(&[
        "plugin",
        "new",
        "widget-maker",
        "--kind",
        "example.com/v1alpha1/Widget",
        "--dir",
        path(&project),
    ]);
    assert_eq!(code, Some(1), "a project is never overwritten");
    assert!(stderr.contains("is not an empty directory"), "{stderr}");

    // The workspace's lock file: the same versions as this tree, and no registry query (`--offline`).
    let repo = sdk_repository(&dir);
    std::fs::copy(workspace().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    cargo(&project, &repo, &["fetch"]);
    cargo(&project, &repo, &["test", "--offline"]);
    cargo(&project, &repo, &["build-plugin", "--offline"]);
    let built = workspace().join("target/plugin-new-test/wasm32-wasip2/release/widget_maker.wasm");
    let component = dir.join("widget-maker.wasm");
    std::fs::copy(&built, &component).unwrap();

    // The operator's policy with the project's entry appended, as the project's README says.
    let mut policy = std::fs::read_to_string(workspace().join("host/deploy/policy.yaml")).unwrap();
    policy.push_str(&std::fs::read_to_string(project.join("policy-entry.yaml")).unwrap());
    std::fs::write(dir.join("policy.yaml"), policy).unwrap();
    let (code, stdout, stderr) = kuberay_wasm(&[
        "inspect",
        "--policy",
        path(&dir.join("policy.yaml")),
        path(&component),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("plugin:      widget-maker 0.1.0"), "{stdout}");
    assert!(
        stdout.contains("reconciles:  example.com/v1alpha1/Widget"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("withheld"),
        "the entry grants all it asks: {stdout}"
    );

    let (code, stdout, stderr) = kuberay_wasm(&[
        "plugin",
        "run",
        path(&component),
        "--object",
        path(&project.join("example.yaml")),
        "--grant",
        path(&project.join("policy-entry.yaml")),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains("withheld"), "{stdout}");
    assert!(
        stdout.contains("+++ v1/ConfigMap default/example-widget (created)"),
        "{stdout}"
    );
    assert!(stdout.contains("+  greeting: hello"), "{stdout}");
    assert!(stdout.contains("+    type: Ready"), "{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}
