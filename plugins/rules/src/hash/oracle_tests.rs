//! Our hashes against KubeRay's own, computed by the Go oracle of `tests/kuberay-hash` (`make kuberay-hash`
//! builds it, `make test` does; these tests fail without it).

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use kuberay_crds::RayClusterSpec;
use serde_json::Value;

use super::{quantity, rayservice_hash, recreate_hash};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn oracle() -> PathBuf {
    let path = root().join(".local/bin/kuberay-hash");
    assert!(
        path.exists(),
        "{} is missing: `make kuberay-hash` builds it (`make test` does)",
        path.display()
    );
    path
}

fn samples(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            samples(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// Our hash of every RayCluster and RayService in a file, in the oracle's line format (without its last
/// column).
fn our_hashes(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let Ok(object) = Value::deserialize(document) else {
            continue;
        };
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let hash = match kind {
            "RayCluster" => recreate_hash(&spec(&object["spec"])),
            "RayService" => rayservice_hash(&spec(&object["spec"]["rayClusterConfig"])),
            _ => continue,
        };
        lines.push(format!("{}\t{kind}\t{name}\t{hash}", path.display()));
    }
    lines
}

use serde::Deserialize;

fn spec(value: &Value) -> RayClusterSpec {
    serde_json::from_value(value.clone()).unwrap()
}

#[test]
fn sample_hashes_equal_kuberays() {
    let oracle = oracle();
    let mut files = Vec::new();
    samples(&root().join("tests/fixtures/kuberay-samples"), &mut files);
    let output = Command::new(oracle).arg("hash").args(&files).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let theirs: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let ours: Vec<String> = files.iter().flat_map(|f| our_hashes(f)).collect();
    assert!(ours.len() >= 40, "only {} clusters in the samples", ours.len());
    let mut older = 0;
    let mut mismatches = Vec::new();
    for (ours, theirs) in ours.iter().zip(&theirs) {
        // file, kind, name, hash of KubeRay v1.7's shape, hash of the v1.6.2 module's own function
        let columns: Vec<&str> = theirs.split('\t').collect();
        if ours != &columns[..4].join("\t") {
            mismatches.push(format!("ours   {ours}\ntheirs {theirs}"));
        }
        older += usize::from(columns[3] != columns[4]);
    }
    assert_eq!(ours.len(), theirs.len());
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    eprintln!(
        "{} hashes equal KubeRay's; {older} of them use what KubeRay v1.6.2 did not know",
        ours.len()
    );
}

#[test]
fn quantities_are_canonical_as_in_go() {
    let oracle = oracle();
    let inputs = [
        "1",
        "1000m",
        "1500m",
        "0.5",
        ".5",
        "5.",
        "007",
        "+1",
        "-1",
        "-0",
        "0",
        "0.000",
        "1e3",
        "1E3",
        "1e+3",
        "1e-20",
        "1.5e3",
        "100m",
        "1n",
        "0.1n",
        "-0.1n",
        "1u",
        "1k",
        "1.5k",
        "1M",
        "1G",
        "1T",
        "1P",
        "1E",
        "1000E",
        "1000000000000000000000",
        "12345678901234567890",
        "123456789012345678901234567890123",
        "1Ki",
        "1023Ki",
        "1024Ki",
        "1536Mi",
        "0.5Ki",
        "0.5Gi",
        "1.5Gi",
        "1Ei",
        "8Ei",
        "100Ei",
        "1.G",
        "3000",
        "2048",
        "1024",
        "1025",
        "4096Mi",
        "1x",
        "1k5",
        "1e",
        "abc",
        "",
        " 2 ",
        "1Gi2",
        "9223372036854775807",
        "9223372036854775808",
        "0.000000001",
        "0.0000000015",
        "1.000000001k",
        "500Mi",
        "1.25Gi",
        "12e-3",
    ];
    let mut child = Command::new(oracle)
        .arg("quantity")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", inputs.join("\n")).as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let theirs = String::from_utf8(output.stdout).unwrap();
    let mut mismatches = Vec::new();
    for (input, theirs) in inputs.iter().zip(theirs.lines()) {
        let ours = match quantity::canonical(input) {
            Some(text) => Value::String(text).to_string(),
            None => "error".into(),
        };
        if ours != theirs {
            mismatches.push(format!("{input:?}: ours {ours}, Go {theirs}"));
        }
    }
    assert_eq!(theirs.lines().count(), inputs.len());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
