//! Builds every plugin component with `cargo build --release --target wasm32-wasip2` into `target/guest`
//! (a target directory of its own, so this nested build never waits on the outer one's lock) and exports
//! each file's path as an environment variable for `src/lib.rs`. Cargo reruns this when plugin, SDK or WIT
//! sources change, so tests always run the plugins of the current tree.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

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
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&root)
        .args(["build", "--release", "--target", "wasm32-wasip2"]);
    for (package, _, _) in PLUGINS {
        command.args(["-p", package]);
    }
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
    command.env("CARGO_TARGET_DIR", &target);
    let status = command.status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("building the plugin components failed ({s}); see the output above"),
        Err(e) => panic!("could not run cargo to build the plugin components: {e}"),
    }
    for (_, lib, var) in PLUGINS {
        let path = target.join("wasm32-wasip2/release").join(format!("{lib}.wasm"));
        assert!(Path::new(&path).is_file(), "{} was not built", path.display());
        println!("cargo:rustc-env={var}={}", path.display());
    }
}
