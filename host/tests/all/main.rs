//! End-to-end tests of the operator on the real control plane of `tests/support`: one integration-test
//! binary, one module per capability. Each test runs its own operator in-process, watching only the
//! namespace it created.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod admission;
mod authoring;
mod budgets;
mod cli;
mod compile_bounds;
mod compile_cache;
mod containment;
mod endpoints;
mod escaping;
mod finalizer;
mod grandchild;
mod identity;
mod isolated;
mod k8s_job_switch;
mod kuberay_lease;
mod kuberay_samples;
mod leadership;
mod limits;
mod mtls;
mod plugin_config;
mod plugin_signatures;
mod policy;
mod profiles;
mod provenance;
mod python_plugin;
mod ray_routing;
mod raycluster_lifecycle;
mod raycluster_recreate;
mod raycluster_samples;
mod raycluster_scaling;
mod raycronjob;
mod rayjob;
mod rayservice;
mod rayservice_bad_input;
mod rayservice_cases;
mod rayservice_incremental;
mod rayservice_real;
mod rbac;
mod reconcileplugin;
mod reload;
mod sidecar_submitter_restart;
mod steady_state;
mod support;
