//! The API as generated from `proto/`: message types, gRPC servers and clients (package `proto`, as
//! KubeRay's), and the encoded descriptor set the REST gateway, reflection and OpenAPI document read.

#![allow(
    clippy::all,
    clippy::allow_attributes_without_reason,
    unused_qualifications,
    rust_2018_idioms,
    reason = "generated code"
)]

tonic::include_proto!("proto");

/// Every file of the API with its imports and comments, as a serialized `FileDescriptorSet`.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kuberay_api.bin"));
