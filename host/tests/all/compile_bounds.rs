//! Compiling a hostile component is bounded: a component that is cheap to write but expensive to compile
//! (large functions of straight-line code, within the static limits) is compiled in a child process that is
//! killed at `--plugin-compile-timeout` or runs out of its `--plugin-compile-memory-mib`; the file is refused
//! like any failed load (counted, logged with the file) while the version already running keeps serving.

use std::{path::Path, sync::Arc, time::Duration};

use kuberay_wasm::{
    metrics::Metrics,
    sandbox::{CallLimits, ChildCompiler, Sandbox, SandboxConfig},
};

use crate::support::{
    OperatorOptions, apply, env, eventually, install_plugin, logged, namespace, rayclusters, ready_cluster,
    sample, scratch_dir, start_operator, test_policy,
};

/// A component of `functions` core functions of almost the static limit each (512 KiB): additions on one
/// local, over and over. Written as bytes (a text form would be seven times larger): a few MiB on disk; each
/// function takes seconds and about 285 MiB to compile (3.3 s in a debug build).
fn expensive_component(functions: usize) -> Vec<u8> {
    let ops = (kuberay_wasm::sandbox::MAX_FUNCTION_BYTES - 64) / 7;
    // local.get 0, i32.const 1, i32.add, local.set 0
    let mut body = vec![0x00]; // no locals besides the parameter
    for _ in 0..ops {
        body.extend([0x20, 0x00, 0x41, 0x01, 0x6a, 0x21, 0x00]);
    }
    body.push(0x0b); // end
    let mut code = Vec::new();
    leb128(functions, &mut code);
    for _ in 0..functions {
        leb128(body.len(), &mut code);
        code.extend(&body);
    }
    let mut declared = Vec::new();
    leb128(functions, &mut declared);
    declared.extend(std::iter::repeat_n(0u8, functions)); // each of type 0
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    section(1, &[0x01, 0x60, 0x01, 0x7f, 0x00], &mut module); // one type: (i32) -> ()
    section(3, &declared, &mut module);
    section(10, &code, &mut module);
    // A component (version 0x0d, layer 1) holding that core module.
    let mut component = b"\0asm\x0d\0\x01\0".to_vec();
    section(1, &module, &mut component);
    component
}

fn leb128(n: usize, out: &mut Vec<u8>) {
    let mut n = n as u64;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn section(id: u8, content: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb128(content.len(), out);
    out.extend(content);
}

/// A sandbox of the test policy with a cache in `cache_dir`, compiling in a child with these limits (or in
/// process).
fn sandbox(cache_dir: Option<&Path>, compiler: Option<ChildCompiler>) -> Arc<Sandbox> {
    let config = SandboxConfig {
        cache_dir: cache_dir.map(Path::to_path_buf),
        limits: CallLimits {
            timeout: Duration::from_secs(10),
            memory_bytes: 64 << 20,
            budget: Default::default(),
        },
        policy: Arc::new(test_policy()),
        max_concurrent_calls: 2,
        compiler,
        base_config: Default::default(),
    };
    Sandbox::new(config, Metrics::new()).expect("a sandbox")
}

fn child(timeout: Duration, memory_mib: u64) -> ChildCompiler {
    ChildCompiler {
        executable: env!("CARGO_BIN_EXE_kuberay-wasm").into(),
        timeout,
        memory_bytes: memory_mib << 20,
    }
}

#[tokio::test]
async fn a_component_too_slow_to_compile_is_refused_while_the_running_version_serves() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "compile-timeout").await;
    // The RayCluster plugin is compiled ahead (in process) into the operator's cache, so that only the
    // hostile update meets the tight limit.
    let cache = scratch_dir("compile-timeout-cache");
    let warm = scratch_dir("compile-timeout-warm");
    let path = install_plugin(&warm, kuberay_plugin_artifacts::RAYCLUSTER);
    sandbox(Some(&cache), None)
        .load_file(&path)
        .await
        .expect("the RayCluster plugin compiles");
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            cache_dir: Some(cache.clone()),
            reload: Some(Duration::from_millis(300)),
            compile_timeout: Duration::from_secs(2),
            ..OperatorOptions::default()
        },
    )
    .await;
    crate::support::apply_manifest(&client, &ns, &sample("ray-cluster.sample.yaml")).await;
    ready_cluster(&client, &ns, "raycluster-kuberay").await;

    // The update: cheap to write, too slow to compile.
    let hostile = expensive_component(24);
    let target = operator.plugins_dir.join("raycluster.wasm");
    let partial = operator.plugins_dir.join(".raycluster.wasm.partial");
    std::fs::write(&partial, &hostile).unwrap();
    std::fs::rename(&partial, &target).unwrap();
    eventually("the update to be refused", Duration::from_secs(60), || async {
        let refused = operator.metric(
            "kuberay_wasm_plugin_refusals_total",
            &["plugin=\"raycluster\"", "reason=\"compile-timeout\""],
        );
        (refused >= 1.0).then_some(())
    })
    .await;
    logged(&[
        "raycluster.wasm",
        "the previous version keeps running",
        "compiling the component took longer than 2s",
    ])
    .await;

    // The running version still reconciles: a new cluster comes up.
    let mut second = serde_json::to_value(
        serde_yaml::from_str::<serde_json::Value>(
            &std::fs::read_to_string(sample("ray-cluster.sample.yaml")).unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    second["metadata"]["name"] = "after-the-refusal".into();
    apply(&rayclusters(&client, &ns), &second).await;
    ready_cluster(&client, &ns, "after-the-refusal").await;
    operator.stop().await;
    let _ = std::fs::remove_dir_all(cache);
    let _ = std::fs::remove_dir_all(warm);
}

#[tokio::test]
async fn a_component_too_large_to_compile_in_its_memory_is_refused_and_the_process_lives_on() {
    let dir = scratch_dir("compile-memory");
    let hostile = dir.join("chaos.wasm");
    std::fs::write(&hostile, expensive_component(8)).unwrap();
    // Less than the compiler needs for any component (a RayCluster plugin's took 110 MiB resident).
    let sandbox = sandbox(None, Some(child(Duration::from_secs(600), 128)));
    let refused = sandbox
        .load_file(&hostile)
        .await
        .err()
        .expect("the hostile component was compiled");
    let refusal = refused.refusal().expect("a refusal");
    assert_eq!(refusal.reason, "compile-memory", "{refused}");
    assert_eq!(refusal.entry, "chaos");
    // And a file over a static limit is refused before any compiling (or even reading all of it).
    let huge = vec![0u8; kuberay_wasm::sandbox::MAX_COMPONENT_BYTES as usize + 1];
    std::fs::write(&hostile, huge).unwrap();
    let refused = sandbox.load_file(&hostile).await.err().expect("accepted");
    assert_eq!(
        refused.refusal().map(|r| r.reason),
        Some("component-too-large"),
        "{refused}"
    );
    // This process is fine, and a well-behaved plugin still compiles in a child with the default memory.
    let sandbox = sandbox_with_defaults();
    let chaos = install_plugin(&dir, kuberay_plugin_artifacts::CHAOS);
    sandbox
        .load_file(&chaos)
        .await
        .expect("the chaos plugin compiles in a child");
    let _ = std::fs::remove_dir_all(dir);
}

fn sandbox_with_defaults() -> Arc<Sandbox> {
    sandbox(
        None,
        Some(child(
            Duration::from_secs(600),
            kuberay_wasm::DEFAULT_COMPILE_MEMORY_MIB,
        )),
    )
}
