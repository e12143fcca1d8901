//! Proof that the test environment is real: one integration-test binary, one module per capability.
//! Every test shares this binary's environment (started on first use, or the running `make cluster`) and
//! works in a namespace of its own.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod cleanup;
mod cluster_services;
mod control_plane;
mod crds;
mod exec;
mod garbage_collection;
mod kubelet;
mod mapped_images;
mod operator_in_pod;
mod proxy;
mod ray_fake;
mod ray_real;
mod rbac;
mod registry;
mod util;
