//! The install artifacts in `deploy/`: what the Helm chart renders for each value that matters and refuses
//! for values that make no sense (`chart.rs`, `bad_values.rs`), KubeRay's chart values with KubeRay's meaning
//! (`kuberay_values.rs`), the kustomize overlays and their agreement
//! with the chart (`kustomize.rs`), the documented permissions (`docs.rs`), and the rights a ServiceAccount
//! really has once each is installed into the test environment's control plane (`install.rs`), and the
//! installed chart's operator running in its Pods (`incluster.rs`): two replicas handing leadership over
//! (`failover.rs`), a RayJob in proxy routing with only that mode's rights (`proxy_rayjob.rs`), and a plugin
//! served from the test environment's registry by a ReconcilePlugin resource (`plugin_resource.rs`), and the
//! switch from KubeRay's operator to the chart installed with KubeRay's values and back (`switch.rs`). The
//! apiserver's chart: what it renders and refuses, KubeRay's apiserver chart values included
//! (`apiserver_chart.rs`), and its backend Pod serving TLS to a user (`apiserver_incluster.rs`). They fail
//! when `make deploy-tools` has not built helm and kustomize.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod apiserver_chart;
mod apiserver_e2e_harness;
mod apiserver_incluster;
mod bad_values;
mod chart;
mod docs;
mod failover;
mod incluster;
mod install;
mod kuberay_values;
mod kustomize;
mod plugin_resource;
mod proxy_rayjob;
mod switch;

use kuberay_deploy_tests::Tools;

/// The tools; a test fails when they are not built (see [`Tools::for_test`]).
fn tools() -> Tools {
    Tools::for_test().unwrap_or_else(|e| panic!("{e}"))
}
