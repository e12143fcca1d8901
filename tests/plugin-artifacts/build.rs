//! Builds every plugin component with `cargo build --profile guest --target wasm32-wasip2` into `target/guest`
//! (a target directory of its own, so this nested build never waits on the outer one's lock) and exports
//! each file's path as an environment variable for `src/lib.rs`. Cargo reruns this when plugin, SDK or WIT
//! sources change, so tests always run the plugins of the current tree.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

/// Where the guest profile (the workspace's `[profile.guest]`, as `make plugins` builds) puts components.
const GUEST_OUT: &str = "wasm32-wasip2/guest";

/// (package, library name, exported variable)
const PLUGINS: &[(&str, &str, &str)] = &[
    (
        "kuberay-plugin-raycluster",
        "kuberay_plugin_raycluster",
        "KUBERAY_PLUGIN_RAYCLUSTER",
    ),
    (
        "kuberay-plugin-rayjob",
        "kuberay_plugin_rayjob",
        "KUBERAY_PLUGIN_RAYJOB",
    ),
    (
        "kuberay-plugin-raycronjob",
        "kuberay_plugin_raycronjob",
        "KUBERAY_PLUGIN_RAYCRONJOB",
    ),
    (
        "kuberay-plugin-rayservice",
        "kuberay_plugin_rayservice",
        "KUBERAY_PLUGIN_RAYSERVICE",
    ),
    (
        "kuberay-test-plugin-chaos",
        "kuberay_test_plugin_chaos",
        "KUBERAY_PLUGIN_CHAOS",
    ),
];

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../..");
    let target = root.join("target/guest");
    for watched in [
        "plugins",
        "tests/plugins",
        "wit",
        "crds/src",
        "crds/Cargo.toml",
        // The guest profile lives in the workspace manifest.
        "Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    // The chaos plugin's variants first (each overwrites the chaos output, which the last build restores),
    // copied aside under their own names.
    let out = target.join(GUEST_OUT);
    let variants = target.join("variants");
    let _ = std::fs::create_dir_all(&variants);
    for (feature, file, var) in CHAOS_VARIANTS {
        cargo_build(
            &root,
            &target,
            &["-p", "kuberay-test-plugin-chaos", "--features", feature],
        );
        let path = variants.join(file);
        if let Err(e) = std::fs::copy(out.join("kuberay_test_plugin_chaos.wasm"), &path) {
            panic!("copying the chaos variant {feature}: {e}");
        }
        println!("cargo:rustc-env={var}={}", path.display());
    }
    let mut args = Vec::new();
    for (package, _, _) in PLUGINS {
        args.extend(["-p", package]);
    }
    cargo_build(&root, &target, &args);
    for (_, lib, var) in PLUGINS {
        let path = target.join(GUEST_OUT).join(format!("{lib}.wasm"));
        assert!(Path::new(&path).is_file(), "{} was not built", path.display());
        println!("cargo:rustc-env={var}={}", path.display());
    }
}

/// (feature, file name, exported variable) of the chaos plugin's variants.
const CHAOS_VARIANTS: &[(&str, &str, &str)] = &[
    ("greedy", "chaos-greedy.wasm", "KUBERAY_PLUGIN_CHAOS_GREEDY"),
    (
        "reconcile-secrets",
        "chaos-secrets.wasm",
        "KUBERAY_PLUGIN_CHAOS_SECRETS",
    ),
];

/// `cargo build --profile guest --target wasm32-wasip2 ARGS` into `target`.
fn cargo_build(root: &Path, target: &Path, args: &[&str]) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .args(["build", "--profile", "guest", "--target", "wasm32-wasip2"])
        .args(args);
    // The outer build's flags and target directory are for the host; the guests get their own.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        command.env_remove(var);
    }
    command.env("CARGO_TARGET_DIR", target);
    match command.status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("building the plugin components failed ({s}); see the output above"),
        Err(e) => panic!("could not run cargo to build the plugin components: {e}"),
    }
}
