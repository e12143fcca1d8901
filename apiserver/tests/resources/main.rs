//! End-to-end tests of the v1 services and the resource manager on the real control plane of
//! `tests/support` (kube-apiserver and etcd; no operator, so clusters never become ready): what they create
//! is accepted by the API server and reads back as it was sent, only managed objects are visible, missing
//! templates leave nothing behind, pages follow the Kubernetes list, and a user without rights gets the
//! API server's refusal.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod clusters;
mod jobs;
mod permissions;
mod services;
mod support;
mod templates;
