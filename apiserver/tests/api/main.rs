//! End-to-end tests of `kuberay-apiserver` on the real local control plane: the server runs as its own
//! ServiceAccount (reviews and impersonation only) and users call it over REST and gRPC with their own
//! tokens.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod bad_input;
mod calls;
mod fuzz;
mod grpcurl;
mod identities;
mod operations;
mod process;
mod rbac;
mod rest_clusters;
mod setup;
mod support;
