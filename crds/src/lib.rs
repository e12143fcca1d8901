//! KubeRay's `ray.io/v1` API in Rust: [`RayCluster`], [`RayJob`], [`RayService`] and [`RayCronJob`], and
//! (with the `schema` feature) the CustomResourceDefinitions generated from these very types, so that the
//! types and the CRDs in `crds/*.yaml` cannot drift apart.
//!
//! # The types
//!
//! Field names are KubeRay's JSON names in snake case, so a KubeRay manifest reads as it would in Go:
//! `spec.workerGroupSpecs[0].minReplicas` is `spec.worker_group_specs[0].min_replicas`. Every field that
//! KubeRay may leave out is an `Option` and is omitted when `None`, so reading an object and writing it back
//! changes nothing. Kubernetes types embedded in the API (Pod templates, Services, conditions, quantities)
//! are `k8s-openapi`'s.
//!
//! String fields with a fixed set of values that the CRD enforces are plain Rust enums. Those whose values the
//! CRD does not restrict ([`JobDeploymentStatus`], [`JobSubmissionMode`], ...) have an `Other(String)`
//! variant, so that an unexpected value never makes an object unreadable.
//!
//! The four top-level types implement `k8s_openapi::Resource`, `ListableResource` and `Metadata`, so with
//! `kube` they work directly (`kube::Api::<RayCluster>::namespaced(client, ns)`) and `k8s_openapi::List<T>`
//! reads list responses; this crate itself does not depend on `kube`, which keeps it usable in the
//! `wasm32-wasip2` plugins. They serialize `apiVersion` and `kind` and refuse objects of another kind.
//!
//! Names that belong to the contract without being fields (labels, annotations, finalizers, condition
//! types and reasons) are in [`constants`].
//!
//! # Features
//!
//! - default: the types only (serde, serde_json and k8s-openapi); builds for `wasm32-wasip2`.
//! - `schema`: `schemars::JsonSchema` for every type and the module `crd`, which renders the CRDs; the `crdgen`
//!   binary (`make crds`) writes them to `crds/`.

#[macro_use]
mod macros;

pub mod common;
pub mod constants;
pub mod raycluster;
pub mod raycronjob;
pub mod rayjob;
pub mod rayservice;

#[cfg(feature = "schema")]
pub mod crd;

pub use common::{MANAGED_BY_KUBERAY, MANAGED_BY_MULTIKUEUE};
pub use constants::{conditions, reasons};
pub use raycluster::*;
pub use raycronjob::*;
pub use rayjob::*;
pub use rayservice::*;

/// The API group of every kind here.
pub const GROUP: &str = "ray.io";
/// The version of these types (stored; RayCluster, RayJob and RayService are also served as KubeRay's
/// deprecated `v1alpha1`, see `crd`).
pub const VERSION: &str = "v1";
/// `GROUP/VERSION`, the `apiVersion` of every object.
pub const API_VERSION: &str = "ray.io/v1";
