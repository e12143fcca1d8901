//! Nothing outlives an environment: not after an orderly shutdown, not after the test binary panics.

use std::{path::PathBuf, process::Command, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, api::PostParams};
use kuberay_testenv::{HeadMode, TestEnv, annotations, paths::Layout, stale};
use serde_json::json;

use crate::util::eventually;

/// Starts a private environment and gives it a Pod with a network namespace and a fake Ray head.
async fn private_env_with_sandboxes() -> TestEnv {
    let env = tokio::task::spawn_blocking(|| TestEnv::start_private(&Layout::discover(), HeadMode::Fake))
        .await
        .unwrap()
        .unwrap();
    let client = env.client().await.unwrap();
    let ns = env.namespace("cleanup").await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    for (name, labels) in [
        ("head", json!({"ray.io/node-type": "head"})),
        ("plain", json!({})),
    ] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels, "annotations": {annotations::HTTP_ECHO: "false"}},
            "spec": {"containers": [{"name": "c", "image": "x", "ports": [{"name": "dashboard", "containerPort": 8265}]}]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    eventually(
        "the private environment's pods to run",
        Duration::from_secs(60),
        || async {
            let head = pods.get("head").await.ok()?;
            crate::util::is_ready(&head).then_some(())
        },
    )
    .await;
    env
}

async fn assert_gone(instance: &str, state_dir: PathBuf, pids: Vec<u32>) {
    eventually(
        "the environment to be removed",
        Duration::from_secs(60),
        || async {
            let prefixes = stale::network_prefixes(instance);
            let (namespaces, links) = kuberay_testenv::network::objects_with_prefix("kwt").await;
            let ours = |n: &String| prefixes.iter().any(|p| n.starts_with(p.as_str()));
            let network_left = namespaces.iter().chain(links.iter()).any(ours);
            let process_left = pids
                .iter()
                .any(|p| std::path::Path::new(&format!("/proc/{p}")).exists());
            (!network_left && !process_left && !state_dir.exists()).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn shutting_down_a_private_environment_removes_everything() {
    let env = private_env_with_sandboxes().await;
    let info = env.info().clone();
    assert!(info.state_dir.exists());
    let mut pids = info.component_pids.clone();
    pids.push(info.supervisor_pid);
    tokio::task::spawn_blocking(move || env.shutdown())
        .await
        .unwrap()
        .unwrap();
    assert_gone(&info.instance, info.state_dir, pids).await;
}

const PANIC_CHILD_ENV: &str = "KUBERAY_TESTENV_PANIC_CHILD";

/// Not a test of its own: the body of the child process that `a_panicking_test_binary_leaves_nothing_behind`
/// runs. Outside that child it returns at once.
#[tokio::test]
async fn panicking_child_helper() {
    let Ok(out) = std::env::var(PANIC_CHILD_ENV) else {
        return;
    };
    let env = private_env_with_sandboxes().await;
    std::fs::write(&out, serde_json::to_string(env.info()).unwrap()).unwrap();
    panic!("deliberate panic with a live test environment");
}

#[tokio::test]
async fn a_panicking_test_binary_leaves_nothing_behind() {
    let out = std::env::temp_dir().join(format!("kuberay-testenv-panic-child-{}.json", std::process::id()));
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "cleanup::panicking_child_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PANIC_CHILD_ENV, &out)
        .env("KUBERAY_TESTENV_PRIVATE", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child test was supposed to panic");
    let info: kuberay_testenv::info::EnvInfo = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    let mut pids = info.component_pids.clone();
    pids.push(info.supervisor_pid);
    assert_gone(&info.instance, info.state_dir, pids).await;
}
