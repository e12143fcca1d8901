//! Host-side bindings of `wit/plugin.wit`. Imports are async so that a Kubernetes or Ray call made by one
//! plugin never blocks a runtime thread that other reconciles need.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "reconcile-plugin",
    imports: { default: async },
    exports: { default: async },
});

pub use self::{
    exports::kuberay::plugin::reconciler as wit_reconciler,
    kuberay::plugin::{
        config as wit_config, kubernetes as wit_k8s, log as wit_log, ray_head as wit_ray, types as wit_types,
    },
};
