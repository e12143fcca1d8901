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
    let descriptors = protox::Compiler::new(["proto"])?
        .include_imports(true)
        .include_source_info(true)
        .open_files(PROTOS)?
        .file_descriptor_set();
    std::fs::write(
        out.join("kuberay_api.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
