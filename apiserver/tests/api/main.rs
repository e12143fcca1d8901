//! End-to-end tests of `kuberay-apiserver` on the real local control plane: the server runs as its own
//! ServiceAccount (reviews and impersonation only) and users call it over REST and gRPC with their own
//! tokens; the operator runs in-process where clusters and jobs must come to life.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod bad_input;
mod calls;
mod flows;
mod fuzz;
mod grpc_flows;
mod grpcurl;
mod identities;
mod isolated;
mod kubectl;
mod operations;
mod operator;
mod passthrough_watch;
mod process;
mod python_client;
mod rbac;
mod rest_clusters;
mod rest_lifecycle;
mod rest_rayjobs;
mod rest_rayservices;
mod rest_submissions;
mod support;
mod v2_proxy;
