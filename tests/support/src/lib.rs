//! Test environment for kuberay-wasm: a real kube-apiserver, etcd and kube-controller-manager built from
//! their Go modules (`tests/cluster`), a simulated kubelet that gives Pods real addresses in network
//! namespaces, and real or fake Ray heads at those addresses.
//!
//! - `make cluster` runs the `kuberay-testenv` binary, which keeps an environment running in the background
//!   for the demo and for manual use (`.local/kubeconfig`).
//! - Rust tests call [`TestEnv::shared`], which attaches to that environment or starts a private one for the
//!   test binary, and create their own namespace with [`TestEnv::namespace`].
//!
//! Everything runs on this machine: the API server on loopback, Pods on a bridge with no uplink. The
//! environment needs root (network namespaces) and is meant for disposable test machines, not for hosts
//! with workloads of their own.

#![forbid(unsafe_code)]

pub mod annotations;
pub mod conformance;
pub mod controlplane;
pub mod crds;
mod env;
mod error;
pub mod fixtures;
pub mod identities;
pub mod images;
pub mod info;
pub mod kubelet;
pub mod kuberay_samples;
pub mod kuberay_switch;
pub mod network;
pub mod paths;
pub mod proxy_http;
pub mod registry;
pub mod stale;
pub mod supervisor;
pub mod workloads;

pub use env::{
    TEST_NAMESPACE_LABEL, TestEnv, TestNamespace, apiserver_binary, operator_binary, supervisor_binary,
};
pub use error::{Error, Result};
pub use kubelet::HeadMode;
