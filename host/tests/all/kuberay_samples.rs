//! KubeRay's samples with our defaults: every sample of `tests/fixtures/kuberay-samples` that has a golden
//! graph in `tests/fixtures/kuberay-objects` (what KubeRay's operator v1.7.0 made of it, recorded by `make
//! kuberay-samples-record`) is applied into a namespace of its own, one operator with the built-in policy and
//! the four built-in plugins watches them all, and once each namespace settles:
//!
//! - no call was refused (`kuberay_wasm_refused_calls_total` stays 0, no refusal logged for the sample's
//!   objects) and no object carries `Reconciled=False` unless [`DIFFERENCES`] says why for that sample (a
//!   spec KubeRay's validation refuses too, a Pod the API server refuses to both operators);
//! - the normalized graph (`kuberay_testenv::kuberay_samples::graph`) equals the golden one, except for the
//!   deliberate differences of [`DIFFERENCES`], each of which must still occur.
//!
//! The namespaces carry no Pod Security label, as a namespace of a fresh cluster (whose default is
//! `privileged`). A namespace is done when its graph matched for 6 s (not before 20 s), or did not change for
//! 40 s; the whole run takes one to two and a half minutes. `KUBERAY_SAMPLES=a,b` runs only the samples whose
//! path contains one of those.

use std::{collections::BTreeMap, fmt::Write as _, path::PathBuf, time::Duration};

use kube::{
    Api, Client, Discovery,
    api::{DynamicObject, ListParams},
};
use kuberay_testenv::kuberay_samples::{
    self, SKIPPED,
    diff::{Mismatch, diff},
    graph::{Graph, from_golden},
    observe::{Ended, Settle, Target, observe},
    profiles,
};
use kuberay_testenv::workloads::real_ray::http_get;
use serde_json::Value;

use crate::support::{
    OperatorOptions, env, log_line, log_lines, namespace, policy_with, ray_api, start_operator_watching,
};

/// Every series KubeRay's operator dashboard (`config/grafana/KubeRay-Operator.json` in KubeRay's repository:
/// its panels and the variables that list controllers) and its alerts read, plus the rest of the families a
/// KubeRay operator exports (names as facts): each must have at least one sample after the samples ran.
const KUBERAY_METRICS: [&str; 30] = [
    // The dashboard's panels and variables.
    "controller_runtime_active_workers",
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_time_seconds_bucket",
    "workqueue_depth",
    "kuberay_cluster_info",
    "kuberay_cluster_provisioned_duration_seconds",
    "kuberay_cluster_condition_provisioned",
    "kuberay_service_info",
    "kuberay_service_condition_ready",
    "kuberay_service_condition_upgrade_in_progress",
    "kuberay_job_info",
    "kuberay_job_execution_duration_seconds",
    "kuberay_job_deployment_status",
    // The rest of controller-runtime's, the work queue's, client-go's and the process's.
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_panics_total",
    "controller_runtime_max_concurrent_reconciles",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds_bucket",
    "workqueue_work_duration_seconds_bucket",
    "workqueue_retries_total",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "rest_client_requests_total",
    "rest_client_request_duration_seconds_bucket",
    "rest_client_rate_limiter_duration_seconds_bucket",
    "rest_client_request_size_bytes_bucket",
    "rest_client_response_size_bytes_bucket",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_open_fds",
];

/// What of [`KUBERAY_METRICS`] has no sample in `exported`, and the controllers KubeRay has (named as
/// controller-runtime names them) that reconciled nothing.
fn missing_kuberay_metrics(exported: &str) -> Vec<String> {
    let samples: Vec<(&str, &str)> = exported
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let name_end = l.find(['{', ' '])?;
            Some((&l[..name_end], l))
        })
        .collect();
    let mut missing: Vec<String> = KUBERAY_METRICS
        .iter()
        .filter(|name| !samples.iter().any(|(n, _)| n == *name))
        .map(|name| name.to_string())
        .collect();
    for controller in ["raycluster", "rayjob", "rayservice"] {
        let reconciled = samples.iter().any(|(name, line)| {
            *name == "controller_runtime_reconcile_total"
                && line.contains(&format!("controller=\"{controller}\""))
                && !line.ends_with(" 0")
        });
        if !reconciled {
            missing.push(format!(
                "controller_runtime_reconcile_total{{controller=\"{controller}\"}} > 0"
            ));
        }
    }
    missing
}

/// A difference from KubeRay that is deliberate, with the reason. A mismatch is covered when every given
/// part matches (`"*"` matches any sample, section, kind or name; `field` matches the mismatch's field or a
/// field under it, and `None` a whole object on one side only). An entry that covers nothing in a run fails
/// the test, so the table lists exactly the differences that exist.
struct Difference {
    samples: &'static [&'static str],
    section: &'static str,
    kind: &'static str,
    name: &'static str,
    field: Option<&'static str>,
    reason: &'static str,
}

/// The deliberate differences from KubeRay v1.7.0, in one place.
const DIFFERENCES: &[Difference] = &[
    Difference {
        samples: &["*"],
        section: "created",
        kind: "Role",
        name: "*",
        field: Some("spec.rules"),
        reason: "the autoscaler's Role is scoped to its cluster: `rayclusters` only by `resourceNames: [<cluster>]`, \
                 and no `watch` on Pods, which Ray's autoscaler never uses (docs/operator.md, \"Where the plugins differ \
                 from KubeRay\")",
    },
    Difference {
        samples: &[
            "ray-cluster.embedded-gcs-ft.yaml",
            "ray-cluster.historyserver.yaml",
            "ray-cluster.mtls.yaml",
            "ray-cluster.network-policy-deny-all.yaml",
        ],
        section: "applied",
        kind: "RayCluster",
        name: "*",
        field: Some(RECONCILED),
        reason: "the RayCluster plugin refuses the spec as KubeRay's validation does (an alpha feature whose gate is \
                 off by default), and the host reports every failed reconcile as Reconciled=False with the reason \
                 (InvalidObject; docs/operator.md, \"When a plugin fails\"), where KubeRay records a Warning event and \
                 writes no status",
    },
    Difference {
        samples: &[
            "ray-cluster.gke-bucket.yaml",
            "pytorch-resnet-image-classifier/ray-job.pytorch-image-classifier.yaml",
            "vllm/ray-service.vllm-tpu-v6e-singlehost.yaml",
        ],
        section: "*",
        kind: "RayCluster",
        name: "*",
        field: Some(RECONCILED),
        reason: "the API server refuses the head Pod (the sample names a ServiceAccount that does not exist), \
                 which both operators report with ReplicaFailure=True; the host also reports the failed reconcile \
                 as Reconciled=False (ReconcileFailed; docs/operator.md, \"When a plugin fails\")",
    },
    Difference {
        samples: &["ray-cluster.scheduler-plugins.yaml"],
        section: "created",
        kind: "PodGroup",
        name: "*",
        field: Some("owner"),
        reason: "the host makes the reconciled object the controller of everything its plugin creates (the \
                 ownership every write is judged by, docs/threat-model.md), where KubeRay's scheduler-plugins \
                 integration writes a plain owner reference (garbage collection is the same)",
    },
    Difference {
        samples: &["ray-cluster.scheduler-plugins.yaml"],
        section: "created",
        kind: "PodGroup",
        name: "*",
        field: Some("spec.ownerReferences"),
        reason: "the same owner reference, recorded by the graph only when it is not a controller's",
    },
];

/// The host's condition.
const RECONCILED: &str = "status.conditions.Reconciled";

/// Whether a `Reconciled=False` condition in `sample` is a documented difference.
fn reconciled_allowed(sample: &str) -> bool {
    DIFFERENCES
        .iter()
        .any(|d| d.field == Some(RECONCILED) && d.samples.iter().any(|s| *s == "*" || *s == sample))
}

impl Difference {
    fn covers(&self, sample: &str, m: &Mismatch) -> bool {
        let any = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        let field = match (self.field, m.field.as_deref()) {
            (None, None) => true,
            (Some(prefix), Some(field)) => {
                field == prefix
                    || field.starts_with(&format!("{prefix}."))
                    || field.starts_with(&format!("{prefix}["))
            }
            _ => false,
        };
        self.samples.iter().any(|p| any(p, sample))
            && any(self.section, m.section)
            && any(self.kind, &m.kind)
            && any(self.name, &m.name)
            && field
    }
}

/// The mismatches of `ours` against `golden` that no deliberate difference covers, and the indexes of the
/// differences that covered something.
fn unexplained(golden: &Graph, ours: &Graph) -> (Vec<Mismatch>, Vec<usize>) {
    let mut used = Vec::new();
    let mut left = Vec::new();
    for m in diff(golden, ours) {
        match DIFFERENCES.iter().position(|d| d.covers(&golden.sample, &m)) {
            Some(i) => used.push(i),
            None => left.push(m),
        }
    }
    (left, used)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn only() -> Vec<String> {
    std::env::var("KUBERAY_SAMPLES")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A `Reconciled` condition the host wrote on a `ray.io` object.
struct Reconciled {
    object: String,
    status: String,
    reason: String,
    message: String,
}

/// The `Reconciled` conditions on the `ray.io` objects of `namespace`.
async fn reconciled_conditions(client: &Client, namespace: &str) -> Vec<Reconciled> {
    let ns = kuberay_testenv::TestNamespace {
        name: namespace.to_string(),
    };
    let mut out = Vec::new();
    for (kind, plural) in [
        ("RayCluster", "rayclusters"),
        ("RayJob", "rayjobs"),
        ("RayService", "rayservices"),
        ("RayCronJob", "raycronjobs"),
    ] {
        let api: Api<DynamicObject> = ray_api(client, &ns, kind, plural);
        let Ok(list) = api.list(&ListParams::default()).await else {
            continue;
        };
        for item in list.items {
            let value = serde_json::to_value(&item).unwrap_or_default();
            let text = |c: &Value, f: &str| c[f].as_str().unwrap_or_default().to_string();
            for c in value
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|c| c["type"] == "Reconciled")
            {
                out.push(Reconciled {
                    object: format!("{kind} {}", item.metadata.name.clone().unwrap_or_default()),
                    status: text(c, "status"),
                    reason: text(c, "reason"),
                    message: text(c, "message"),
                });
            }
        }
    }
    out
}

/// The refusals the operators logged for objects of `namespace` (each reason once).
fn logged_refusals(namespace: &str) -> Vec<String> {
    let mut out: Vec<String> = log_lines(&["refused plugin=", &format!("object={namespace}/")])
        .into_iter()
        .filter_map(|line| {
            let object = line
                .split_whitespace()
                .find(|w| w.starts_with("object="))?
                .to_string();
            let reason = line.split_once(" reason=").map_or("", |(_, r)| r).to_string();
            Some(format!("{object}: {reason}"))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[tokio::test]
async fn kuberay_samples_make_what_kuberay_makes() {
    let root = root();
    let filter = only();
    let mut cases = Vec::new();
    for sample in kuberay_samples::samples(&root).unwrap() {
        if !filter.is_empty() && !filter.iter().any(|f| sample.path.contains(f.as_str())) {
            continue;
        }
        let golden = read_golden(&kuberay_samples::golden_path(&root, &sample.path), &sample.path);
        cases.push((sample, golden));
    }
    assert!(!cases.is_empty(), "no sample matches KUBERAY_SAMPLES={filter:?}");
    let run = run_samples(
        cases,
        OperatorOptions {
            instance: Some("kuberay-samples".into()),
            ..samples_operator()
        },
    )
    .await;
    let mut summary = run.summary("KubeRay v1.7.0 (golden graphs in tests/fixtures/kuberay-objects)");
    // A documented difference that no longer occurs must go, and KubeRay's metric families must all be
    // exported, as its dashboards and alerts read them (both only judged when every sample ran).
    if filter.is_empty() {
        // A difference of the profiles' samples only (a batch scheduler, a gate on: `profiles.rs`) cannot occur
        // with the default flags.
        let profiled = |sample: &str| profiles::PROFILES.iter().any(|p| p.samples.contains(&sample));
        let judged = |d: &Difference| d.samples.iter().any(|s| *s == "*" || !profiled(s));
        let stale: Vec<String> = DIFFERENCES
            .iter()
            .zip(&run.used)
            .filter(|(d, used)| !**used && judged(d))
            .map(|(d, _)| {
                format!(
                    "{:?} {} {} {} {:?} ({})",
                    d.samples, d.section, d.kind, d.name, d.field, d.reason
                )
            })
            .collect();
        let missing_metrics = missing_kuberay_metrics(&run.exported);
        if !missing_metrics.is_empty() {
            let _ = writeln!(
                summary,
                "\nKubeRay's metrics missing from /metrics (or without data):\n  {}",
                missing_metrics.join("\n  ")
            );
        }
        if !stale.is_empty() {
            let _ = writeln!(
                summary,
                "\ndeliberate differences that no longer occur (remove them from DIFFERENCES):\n  {}",
                stale.join("\n  ")
            );
        }
    }
    assert!(summary.is_empty(), "{summary}");
}

/// The golden graph at `path` of `sample`, or a failure that says how to record it.
pub(crate) fn read_golden(path: &std::path::Path, sample: &str) -> Graph {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "no golden graph for {sample} ({}: {e}); record it with `make kuberay-samples-record`",
            path.display()
        )
    });
    from_golden(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The operator the samples run under: the built-in policy, the four built-in plugins and the binary's
/// default rate limit (KubeRay's `--qps`/`--burst` defaults).
pub(crate) fn samples_operator() -> OperatorOptions {
    OperatorOptions {
        api_rate_limit: Some(kuberay_wasm::ApiRateLimit {
            qps: 100.0,
            burst: 200,
        }),
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::RAYJOB,
            kuberay_plugin_artifacts::RAYSERVICE,
            kuberay_plugin_artifacts::RAYCRONJOB,
        ],
        policy: Some(policy_with("")),
        ..OperatorOptions::default()
    }
}

/// What a run of samples against their golden graphs found.
pub(crate) struct SamplesRun {
    /// How many samples differ, and how.
    failed: usize,
    samples: usize,
    report: String,
    /// Calls the operator refused, and the first refusal it logged.
    refused: f64,
    refusal_lines: Vec<String>,
    first_refusal: Option<String>,
    /// Which of [`DIFFERENCES`] covered a mismatch.
    used: Vec<bool>,
    /// The operator's `/metrics` at the end.
    exported: String,
}

impl SamplesRun {
    /// What failed, empty if nothing did; `against` names the goldens.
    pub(crate) fn summary(&self, against: &str) -> String {
        let mut summary = String::new();
        if self.failed > 0 {
            let _ = writeln!(
                summary,
                "{} of {} samples differ from {against}:{}",
                self.failed, self.samples, self.report
            );
        }
        if self.refused > 0.0 {
            let _ = writeln!(
                summary,
                "\n{} refused calls:\n  {}\n  first refusal logged: {}",
                self.refused,
                self.refusal_lines.join("\n  "),
                self.first_refusal.clone().unwrap_or_default()
            );
        }
        summary
    }
}

/// Applies each sample into a namespace of its own, runs one operator with `options` watching them all, waits
/// until each namespace's graph settles, and compares it with the sample's golden graph (up to
/// [`DIFFERENCES`]), its `Reconciled` conditions and the refusals logged for it.
pub(crate) async fn run_samples(
    cases: Vec<(kuberay_samples::Sample, Graph)>,
    options: OperatorOptions,
) -> SamplesRun {
    let env = env().await;
    let client = env.client().await.unwrap();
    let mut namespaces = Vec::new();
    for (sample, _) in &cases {
        namespaces.push(namespace(env, &kuberay_samples::namespace_prefix(&sample.path)).await);
    }
    let names: Vec<String> = namespaces.iter().map(|n| n.name().to_string()).collect();
    let operator = start_operator_watching(env, names, options).await;
    // Its plugins loaded (a cold compiled-plugin cache means minutes of compiles on a loaded machine) before
    // the samples are applied, so that a quiet namespace means a settled one.
    let readyz = format!("http://{}/readyz", operator.health_addr);
    crate::support::eventually("the operator to be ready", Duration::from_secs(900), || async {
        (http_get(&readyz, Duration::from_secs(2)).await.as_deref() == Some("ok")).then_some(())
    })
    .await;
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let mut targets = Vec::new();
    let mut goldens = Vec::new();
    for ((sample, golden), ns) in cases.into_iter().zip(&namespaces) {
        let applied = kuberay_samples::apply(&client, &discovery, ns.name(), &sample)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        targets.push(Target {
            sample,
            namespace: ns.name().to_string(),
            applied,
        });
        goldens.push(golden);
    }
    let settle = Settle {
        interval: Duration::from_secs(2),
        quiet: Duration::from_secs(40),
        confirm: Duration::from_secs(6),
        accept_after: Duration::from_secs(20),
        deadline: Duration::from_secs(300),
    };
    let observed = observe(
        &client,
        &targets,
        &settle,
        |i, graph| unexplained(&goldens[i], graph).0.is_empty(),
        |_, _| {},
    )
    .await
    .unwrap();
    let mut run = SamplesRun {
        failed: 0,
        samples: targets.len(),
        report: String::new(),
        refused: operator.metric("kuberay_wasm_refused_calls_total", &[]),
        refusal_lines: operator
            .metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with("kuberay_wasm_refused_calls_total") && !l.ends_with(" 0"))
            .map(str::to_string)
            .collect(),
        first_refusal: log_line(&["refused plugin="]),
        used: vec![false; DIFFERENCES.len()],
        exported: String::new(),
    };
    for ((target, seen), golden) in targets.iter().zip(&observed).zip(&goldens) {
        let (left, covered) = unexplained(golden, &seen.graph);
        for i in covered {
            run.used[i] = true;
        }
        let reconciled = reconciled_conditions(&client, &target.namespace).await;
        let refusals = logged_refusals(&target.namespace);
        let unexplained_conditions =
            reconciled.iter().any(|r| r.status == "False") && !reconciled_allowed(&target.sample.path);
        if left.is_empty() && refusals.is_empty() && !unexplained_conditions {
            continue;
        }
        run.failed += 1;
        report_sample(&mut run.report, target, seen, &refusals, &reconciled, &left);
    }
    run.exported = http_get(
        &format!("http://{}/metrics", operator.metrics_addr),
        Duration::from_secs(5),
    )
    .await
    .unwrap_or_default();
    operator.stop().await;
    run
}

/// What differs for one sample, appended to `report`.
fn report_sample(
    report: &mut String,
    target: &Target,
    seen: &kuberay_samples::observe::Observed,
    refusals: &[String],
    reconciled: &[Reconciled],
    left: &[Mismatch],
) {
    let how = match seen.ended {
        Ended::Accepted => "matched",
        Ended::Quiet => "settled",
        Ended::Deadline => "still changing",
    };
    let _ = writeln!(
        report,
        "\n{} (namespace {}, {how} after {:.0}s):",
        target.sample.path,
        target.namespace,
        seen.after.as_secs_f64()
    );
    for r in refusals {
        let _ = writeln!(report, "  refused: {r}");
    }
    for r in reconciled {
        let _ = writeln!(
            report,
            "  {}: Reconciled={} ({}): {}",
            r.object,
            r.status,
            r.reason,
            r.message.replace('\n', " / ")
        );
    }
    for m in left {
        let _ = writeln!(report, "  {m}");
    }
}

/// Every sample has a golden graph or a reason to be skipped, every golden graph a sample, and the folder's
/// README names every skipped sample.
#[test]
fn every_sample_is_recorded_or_skipped() {
    let root = root();
    let paths = kuberay_samples::sample_paths(&root).unwrap();
    let mut problems = Vec::new();
    for path in &paths {
        let golden = kuberay_samples::golden_path(&root, path).is_file();
        match (kuberay_samples::skip_reason(path), golden) {
            (None, false) => problems.push(format!(
                "{path}: no golden graph (run `make kuberay-samples-record`)"
            )),
            (Some(_), true) => problems.push(format!("{path}: skipped, yet it has a golden graph")),
            _ => {}
        }
    }
    for (skipped, _) in SKIPPED {
        if !paths.iter().any(|p| p == skipped) {
            problems.push(format!("{skipped}: skipped, but there is no such sample"));
        }
    }
    let golden_dir = root.join(kuberay_samples::GOLDEN_DIR);
    let mut dirs = vec![golden_dir.clone()];
    let mut goldens = BTreeMap::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            // The recording profiles' folders, checked below.
            let profile_group = dir == golden_dir
                && path
                    .file_name()
                    .is_some_and(|n| profiles::GROUPS.iter().any(|g| n == *g));
            if path.is_dir() && !profile_group {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                let relative = path
                    .strip_prefix(&golden_dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let graph = from_golden(&std::fs::read_to_string(&path).unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                goldens.insert(relative, graph);
            }
        }
    }
    for (relative, graph) in &goldens {
        if !paths.contains(relative) {
            problems.push(format!("{relative}: a golden graph without a sample"));
        }
        if &graph.sample != relative {
            problems.push(format!("{relative}: the graph says it is of {}", graph.sample));
        }
    }
    // Every profile's sample has a golden graph in the profile's folder, and every file there a sample of it.
    for profile in profiles::PROFILES {
        let dir = profile.golden_dir(&root);
        for sample in profile.samples {
            if !profile.golden_path(&root, sample).is_file() {
                problems.push(format!(
                    "{sample}: no golden graph of profile {} (run `make kuberay-samples-record RECORD_ARGS=\"--profile {}\"`)",
                    profile.name, profile.name
                ));
            }
        }
        let mut dirs = vec![dir.clone()];
        while let Some(d) = dirs.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml") {
                    let relative = path.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
                    let graph = from_golden(&std::fs::read_to_string(&path).unwrap())
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    if !profile.samples.contains(&relative.as_str()) {
                        problems.push(format!(
                            "{}: a golden graph of profile {} for a sample it does not record",
                            path.display(),
                            profile.name
                        ));
                    }
                    if graph.sample != relative {
                        problems.push(format!(
                            "{}: the graph says it is of {}",
                            path.display(),
                            graph.sample
                        ));
                    }
                }
            }
        }
    }
    let readme = std::fs::read_to_string(golden_dir.join("README.md")).unwrap_or_default();
    for (skipped, _) in SKIPPED {
        if !readme.contains(skipped) {
            problems.push(format!(
                "{skipped}: skipped, but tests/fixtures/kuberay-objects/README.md does not say so"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
