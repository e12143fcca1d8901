//! A property-based fuzzer, schemathesis (from the API-tools virtualenv, `make apitools`), run over the
//! OpenAPI document the server serves, against the running server as a user with rights in one namespace:
//! every operation of the document (the REST API, the `ray.io/v1` pass-through, the probes) gets
//! generated valid and invalid requests, and no answer may be a 5xx or disagree with the document (status
//! code, content type, headers, body schema).
//!
//! The run is bounded (examples per operation, a wall-time limit) and deterministic (schemathesis's
//! deterministic mode: a fixed seed and no example database). `KUBERAY_FUZZ_EXAMPLES=<n>` runs more
//! examples per operation, `KUBERAY_FUZZ_SEED=<n>` explores with another seed, `KUBERAY_FUZZ_REPORT=1`
//! prints the report even when it passes.
//!
//! Checks left out, because this document cannot make them hold: `positive_data_acceptance` and
//! `negative_data_rejection` compare the server's validation with the schemas, which describe protobuf's
//! JSON mapping, not every rule the server and Kubernetes apply (names must be DNS names, a page size must
//! not be negative, a pass-through body is checked by the CRD's schema): a schema-valid request may be
//! refused with 400, and that is right. `use_after_free` and the other stateful checks need links, which
//! the document does not declare.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use kuberay_testenv::HeadMode;
use serde_json::{Value, json};

use crate::support::{Server, User, env, expect, namespace, template};

/// The longest the fuzzer may run: it takes about 30 s with the default number of examples on an idle
/// machine, and several times that on a loaded one (a safety net against a hang, not a speed check).
const WALL_TIME: Duration = Duration::from_secs(360);

/// Examples per operation in each of the fuzzing phase's modes.
const EXAMPLES: &str = "25";

/// The checks: no server error, and every answer as the document says.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance";

fn schemathesis() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = std::env::var_os("KUBERAY_WASM_ROOT").map_or(root, PathBuf::from);
    let path = root.join(".local/apitools-venv/bin/schemathesis");
    assert!(
        path.is_file(),
        "{} is missing: run `make apitools` (tests/apitools/setup.sh)",
        path.display()
    );
    path
}

/// schemathesis's configuration: the caller's token and namespace, and in request bodies the values an
/// object needs to be created (a valid name, user and version, the compute template that exists, a
/// Serve config, an entrypoint), so that creations succeed and the answers with whole objects are
/// checked too. Everything else in the bodies is generated; names in paths are half the time those of
/// the objects created. (The coverage phase generates its boundary cases without these values.)
fn config(namespace: &str) -> String {
    format!(
        r#"
[auth.openapi.bearerAuth]
bearer = "${{KUBERAY_FUZZ_TOKEN}}"

[parameters]
"path.namespace" = "{namespace}"
"path.name" = {{ dictionary = "names", probability = 0.5 }}
"body.namespace" = "{namespace}"
"body.name" = "fuzz-a"
"body.user" = "fuzzer"
"body.version" = "2.9.0"
"body.entrypoint" = "python -c 'print(1)'"
"body.serveConfigV2" = "applications: []"
"body.clusterSpec.headGroupSpec.computeTemplate" = "small"
"body.clusterSpec.headGroupSpec.imagePullPolicy" = "IfNotPresent"
"body.clusterSpec.headGroupSpec.rayStartParams" = {{ "dashboard-host" = "0.0.0.0" }}
"body.clusterSpec.workerGroupSpec[*].computeTemplate" = "small"

[dictionaries.names]
values = ["fuzz-a", "fuzz-b"]
"#
    )
}

/// How many answers of each status each operation got, from schemathesis's HAR report.
fn statuses(har: &std::path::Path) -> BTreeMap<(String, String, u16), usize> {
    let file = std::fs::read_dir(har)
        .unwrap()
        .filter_map(Result::ok)
        .find(|f| f.file_name().to_string_lossy().ends_with(".json"))
        .expect("schemathesis wrote no HAR report");
    let report: Value = serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
    let mut counts = BTreeMap::new();
    for entry in report["log"]["entries"].as_array().into_iter().flatten() {
        let url = entry["request"]["url"].as_str().unwrap_or_default();
        let path = url.split('?').next().unwrap_or_default();
        let path = path.split_once("://").map_or(path, |(_, rest)| {
            rest.find('/').map_or("", |slash| &rest[slash..])
        });
        let method = entry["request"]["method"].as_str().unwrap_or_default();
        let status = entry["response"]["status"].as_u64().unwrap_or_default();
        *counts
            .entry((
                method.to_string(),
                path.to_string(),
                u16::try_from(status).unwrap_or(0),
            ))
            .or_insert(0) += 1;
    }
    counts
}

#[tokio::test]
async fn schemathesis_finds_no_server_error_and_no_answer_outside_the_document() {
    let env = env().await;
    let ns = namespace(env, "fuzz", HeadMode::Fake).await;
    let user = User::service_account(env, ns.name(), "fuzzer").await;
    user.grant(env, ns.name()).await;
    let server = Server::start(env, &[]).await;
    expect(
        server
            .rest(Some(&user.token))
            .post(
                &format!("/apis/v1/namespaces/{}/compute_templates", ns.name()),
                &template("small", 1),
            )
            .await,
        200,
    );
    // The fuzzer deletes what it finds (names from earlier answers included); a finalizer keeps the
    // template readable, so creations can still succeed after it "deleted" it.
    let admin = env.client().await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(admin, ns.name());
    let keep = |finalizers: Value| {
        let config_maps = config_maps.clone();
        async move {
            let patch = Patch::Merge(json!({"metadata": {"finalizers": finalizers}}));
            config_maps
                .patch("small", &PatchParams::default(), &patch)
                .await
                .unwrap();
        }
    };
    keep(json!(["tests.kuberay-wasm.io/keep"])).await;
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("schemathesis.toml");
    std::fs::write(&config_file, config(ns.name())).unwrap();
    let har = dir.path().join("har");
    // A longer run on request (not in `make test`) gets a longer limit.
    let (examples, wall_time) = match std::env::var("KUBERAY_FUZZ_EXAMPLES") {
        Ok(examples) => (examples, Duration::from_secs(1800)),
        Err(_) => (EXAMPLES.to_string(), WALL_TIME),
    };
    let started = Instant::now();
    let child = tokio::process::Command::new(schemathesis())
        .arg(format!("--config-file={}", config_file.display()))
        .args(["run", &format!("{}/openapi.json", server.url())])
        .arg(format!("--checks={CHECKS}"))
        .args([
            // Examples (none are declared), boundary cases, then generated requests; no stateful phase
            // (the document declares no links).
            "--phases=examples,coverage,fuzzing",
            "--mode=all",
            &format!("--max-examples={examples}"),
            "--workers=2",
            "--request-timeout=20",
            "--no-color",
            "--suppress-health-check=all",
            "--report=har",
            &format!("--report-dir={}", har.display()),
        ])
        // A fixed seed and no example database: each run sends the same requests (another seed on
        // request, to explore).
        .arg(match std::env::var("KUBERAY_FUZZ_SEED") {
            Ok(seed) => format!("--seed={seed}"),
            Err(_) => "--generation-deterministic".into(),
        })
        .current_dir(dir.path())
        .env("KUBERAY_FUZZ_TOKEN", &user.token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(wall_time, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("schemathesis did not finish within {wall_time:?}"))
        .unwrap();
    let took = started.elapsed();
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if std::env::var_os("KUBERAY_FUZZ_REPORT").is_some() {
        eprintln!("{report}");
    }
    eprintln!("schemathesis ran for {took:?}");
    assert!(
        output.status.success(),
        "schemathesis found problems ({}):\n{report}",
        output.status
    );
    assert!(report.contains("passed"), "no test ran:\n{report}");

    // The run reached the server's core: objects were created and read back whole (so their schemas
    // were checked), through the REST API and the pass-through.
    let statuses = statuses(&har);
    let base = format!("/apis/v1/namespaces/{}", ns.name());
    let answered = |method: &str, path: &str, status: u16| {
        statuses
            .get(&(method.to_string(), path.to_string(), status))
            .copied()
            .unwrap_or(0)
    };
    let mut missing = Vec::new();
    for (method, path) in [
        ("POST", format!("{base}/clusters")),
        ("POST", format!("{base}/jobs")),
        ("POST", format!("{base}/services")),
        ("GET", format!("{base}/clusters/fuzz-a")),
        ("GET", format!("{base}/jobs/fuzz-a")),
        ("GET", format!("{base}/services/fuzz-a")),
        (
            "GET",
            format!("/apis/ray.io/v1/namespaces/{}/rayclusters", ns.name()),
        ),
    ] {
        if answered(method, &path, 200) == 0 {
            missing.push(format!("{method} {path}"));
        }
    }
    let total: usize = statuses.values().sum();
    assert!(
        missing.is_empty(),
        "no successful answer to {missing:?} in {total} requests; the fuzzer did not get past validation:\n{report}"
    );
    keep(Value::Null).await;
    server.stop().await.unwrap();
}
