//! KubeRay's samples for its batch schedulers and alpha feature gates, each run as KubeRay's recording profile
//! ran it (`kuberay_testenv::kuberay_samples::profiles`: the same `--batch-scheduler` or `--feature-gates`):
//! every object KubeRay v1.7.0 made (PodGroups, NetworkPolicies, the Pods' scheduler names, labels and
//! annotations, sidecars) is made the same here, with no refused call, as in `kuberay_samples.rs`. The
//! profiles run at once, one operator each, on the shared control plane (which has the schedulers' CRDs:
//! `make batch-schedulers`).

use kuberay_rules::batch_scheduler::BatchScheduler;
use kuberay_testenv::kuberay_samples::{self, profiles::PROFILES};
use kuberay_wasm::kuberay_flags::FeatureGates;

use crate::kuberay_samples::{read_golden, run_samples, samples_operator};
use crate::support::OperatorOptions;

#[tokio::test]
async fn batch_scheduler_and_feature_gate_samples_make_what_kuberay_makes() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let runs = PROFILES.iter().map(|profile| {
        let root = root.clone();
        async move {
            let cases = profile
                .samples
                .iter()
                .map(|path| {
                    let sample = kuberay_samples::load(&root, path).unwrap_or_else(|e| panic!("{path}: {e}"));
                    // Without the documents KubeRay's recording left out too (objects of CRDs not installed).
                    let sample = profile.documents(&sample);
                    let golden = read_golden(&profile.golden_path(&root, path), path);
                    (sample, golden)
                })
                .collect();
            let gates: Vec<String> = profile
                .feature_gates
                .iter()
                .map(|g| format!("{g}=true"))
                .collect();
            let options = OperatorOptions {
                instance: Some(format!("profile-{}", profile.name)),
                batch_scheduler: profile
                    .batch_scheduler
                    .map(|name| BatchScheduler::parse(name).unwrap().unwrap()),
                feature_gates: Some(FeatureGates::parse(&gates.join(",")).unwrap()),
                ..samples_operator()
            };
            let run = run_samples(cases, options).await;
            run.summary(&format!(
                "KubeRay v1.7.0 with its profile {} (tests/fixtures/kuberay-objects/{}/{})",
                profile.name, profile.group, profile.name
            ))
        }
    });
    let summaries = futures::future::join_all(runs).await;
    let failed: Vec<String> = summaries.into_iter().filter(|s| !s.is_empty()).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
