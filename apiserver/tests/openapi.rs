//! The generated OpenAPI document passes a real validator: `openapi-spec-validator` from the project's
//! API-tools virtualenv (`make apitools`, `tests/apitools/setup.sh`). Set `OPENAPI_DOCUMENT_COPY=<file>`
//! to keep a copy of the document checked.

use std::{path::PathBuf, process::Command};

fn validator() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = std::env::var_os("KUBERAY_WASM_ROOT").map_or(root, PathBuf::from);
    let path = root.join(".local/apitools-venv/bin/openapi-spec-validator");
    assert!(
        path.is_file(),
        "{} is missing: run `make apitools` (tests/apitools/setup.sh)",
        path.display()
    );
    path
}

#[test]
fn the_document_passes_openapi_spec_validator() {
    let document = kuberay_apiserver::openapi::document(serde_json::Map::new()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    if let Some(copy) = std::env::var_os("OPENAPI_DOCUMENT_COPY") {
        std::fs::copy(&file, copy).unwrap();
    }
    let output = Command::new(validator()).arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "openapi-spec-validator failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("OK"),
        "unexpected validator output:\n{stdout}\n{stderr}"
    );
}

#[test]
fn the_validator_rejects_a_broken_document() {
    // The check above can fail: a document with a dangling reference does not pass.
    let mut document = kuberay_apiserver::openapi::document(serde_json::Map::new()).unwrap();
    let schemas = document["components"]["schemas"].as_object_mut().unwrap();
    schemas.remove("proto.Cluster");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec(&document).unwrap()).unwrap();
    let output = Command::new(validator()).arg(&file).output().unwrap();
    assert!(
        !output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn the_swagger_documents_pass_openapi_spec_validator_as_swagger_2() {
    let document = kuberay_apiserver::openapi::document(serde_json::Map::new()).unwrap();
    let documents = kuberay_apiserver::openapi::swagger2::documents(&document).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, document) in &documents {
        let file = dir.path().join(format!("{name}.swagger.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(document).unwrap()).unwrap();
        files.push(file);
    }
    let output = Command::new(validator())
        .args(["--schema", "2.0", "--validation-errors", "all"])
        .args(&files)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "openapi-spec-validator failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(stdout.matches("OK").count(), files.len(), "{stdout}\n{stderr}");
}
