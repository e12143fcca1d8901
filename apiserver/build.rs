//! Compiles `proto/` (the API's one definition) without a system `protoc`: protox parses the files into a
//! descriptor set, from which tonic generates the message types, the gRPC servers and clients, and which
//! is embedded whole (with comments) for server reflection, the REST gateway and the OpenAPI document.

use std::{env, path::PathBuf};

const PROTOS: &[&str] = &[
    "cluster.proto",
    "config.proto",
    "job.proto",
    "job_submission.proto",
    "serve.proto",
    "error.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out = PathBuf::from(env::var("OUT_DIR")?);
    let mut compiler = protox::Compiler::new(["proto"])?;
    compiler
        .include_imports(true)
        .include_source_info(true)
        .open_files(PROTOS)?;
    // Encoded by protox itself: prost's descriptor types would drop the custom options (google.api.http,
    // google.api.field_behavior) that the gateway and the OpenAPI document read.
    std::fs::write(out.join("kuberay_api.bin"), compiler.encode_file_descriptor_set())?;
    let descriptors = compiler.file_descriptor_set();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
