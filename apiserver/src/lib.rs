//! kuberay-apiserver: KubeRay's REST and gRPC API for Ray clusters, compute templates, jobs, job
//! submissions and services, served as the calling user.
//!
//! One definition (`proto/`) gives the gRPC services, the REST routes (the gateway transcodes HTTP+JSON
//! to in-process gRPC calls from the `google.api.http` bindings) and the OpenAPI document. Every call is
//! authenticated and then acts toward the Kubernetes API as the caller (impersonation), so the API
//! server's RBAC decides what a user may do.

pub mod api;
pub mod auth;
pub mod config;
pub mod context;
pub mod convert;
pub mod error;
pub mod metrics;
pub mod openapi;
pub mod passthrough;
pub mod resources;
pub mod rest;
pub mod server;
pub mod services;
pub mod submissions;
pub mod telemetry;
pub mod validate;
