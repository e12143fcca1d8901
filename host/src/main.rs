//! `kuberay-wasm`: the operator binary. The reconcile host lands with the plugin-host issue; until then the
//! binary only reports its version so that the workspace, CI and packaging have a real target to build.

fn main() {
    println!("kuberay-wasm {}", env!("CARGO_PKG_VERSION"));
}
