//! Recording profiles: KubeRay's operator run with extra flags (a batch scheduler, alpha feature gates) on the
//! samples meant for them. Each profile's golden graphs live under
//! `tests/fixtures/kuberay-objects/<group>/<profile>/<sample path>`; the default recording (no profile: KubeRay's
//! default flags, every sample but [`super::SKIPPED`]) stays at the top of that folder.
//!
//! `make kuberay-samples-record RECORD_ARGS="--profile volcano"` records one profile; the operator's tests can
//! iterate [`PROFILES`] to run the same samples with the same settings.

use std::path::{Path, PathBuf};

use super::{GOLDEN_DIR, Sample};

/// One way of running KubeRay's operator and the samples it is recorded on.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// Its name, as `--profile` takes it and as the folder of its golden graphs.
    pub name: &'static str,
    /// The folder its folder is in, under [`GOLDEN_DIR`]: one of [`GROUPS`].
    pub group: &'static str,
    /// KubeRay's `--batch-scheduler`, if the profile sets one.
    pub batch_scheduler: Option<&'static str>,
    /// Feature gates turned on, besides the `RayCronJob` gate every recording turns on.
    pub feature_gates: &'static [&'static str],
    /// The samples recorded, paths under `tests/fixtures/kuberay-samples`.
    pub samples: &'static [&'static str],
    /// Documents of these samples that are not created, as `(apiVersion, kind, why)`: objects of CRDs the
    /// test environment does not have, which KubeRay never reads.
    pub omitted: &'static [(&'static str, &'static str, &'static str)],
}

/// The folders of the profiles under [`GOLDEN_DIR`].
pub const GROUPS: &[&str] = &["batch-schedulers", "feature-gates"];

/// Every profile.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "volcano",
        group: "batch-schedulers",
        batch_scheduler: Some("volcano"),
        feature_gates: &[],
        samples: &[
            "ray-cluster.volcano-scheduler-queue.yaml",
            "ray-cluster.volcano-scheduler.yaml",
            "ray-job.volcano-scheduler-queue.yaml",
        ],
        omitted: &[],
    },
    Profile {
        name: "yunikorn",
        group: "batch-schedulers",
        batch_scheduler: Some("yunikorn"),
        feature_gates: &[],
        samples: &[
            "ray-cluster.yunikorn-scheduler.yaml",
            "ray-job.yunikorn-scheduler.yaml",
        ],
        omitted: &[],
    },
    Profile {
        name: "scheduler-plugins",
        group: "batch-schedulers",
        batch_scheduler: Some("scheduler-plugins"),
        feature_gates: &[],
        samples: &["ray-cluster.scheduler-plugins.yaml"],
        omitted: &[],
    },
    Profile {
        name: "kai-scheduler",
        group: "batch-schedulers",
        batch_scheduler: Some("kai-scheduler"),
        feature_gates: &[],
        samples: &[
            "ray-cluster.kai-gpu-sharing.yaml",
            "ray-cluster.kai-scheduler.yaml",
        ],
        omitted: &[(
            "scheduling.run.ai/v2",
            "Queue",
            "KAI's Queue CRD is not installed; KubeRay only copies the RayCluster's kai.scheduler/queue label to its Pods",
        )],
    },
    Profile {
        name: "network-policy",
        group: "feature-gates",
        batch_scheduler: None,
        feature_gates: &["RayClusterNetworkPolicy"],
        samples: &["ray-cluster.network-policy-deny-all.yaml"],
        omitted: &[],
    },
    Profile {
        name: "history-server",
        group: "feature-gates",
        batch_scheduler: None,
        feature_gates: &["RayClusterHistoryServer"],
        samples: &["ray-cluster.historyserver.yaml"],
        omitted: &[],
    },
    Profile {
        name: "embedded-gcs-ft",
        group: "feature-gates",
        batch_scheduler: None,
        feature_gates: &["GCSFaultToleranceEmbeddedStorage"],
        samples: &["ray-cluster.embedded-gcs-ft.yaml"],
        omitted: &[],
    },
    // The sidecar submitter restarts on its own (`restartPolicy: OnFailure` on its container, Kubernetes 1.35's
    // container restart rules, which the test API server serves) and checks for its earlier submission.
    Profile {
        name: "sidecar-submitter-restart",
        group: "feature-gates",
        batch_scheduler: None,
        feature_gates: &["SidecarSubmitterRestart"],
        samples: &["ray-job.sidecar-mode.yaml"],
        omitted: &[],
    },
    // The test environment runs cert-manager (`controlplane::cert_manager`), so KubeRay's operator finds its API
    // and runs its mTLS controller.
    Profile {
        name: "mtls",
        group: "feature-gates",
        batch_scheduler: None,
        feature_gates: &["RayClusterMTLS"],
        samples: &["ray-cluster.mtls.yaml"],
        omitted: &[],
    },
];

/// The profile named `name`.
pub fn profile(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.name == name)
}

impl Profile {
    /// The folder of its golden graphs in the checkout `root`.
    pub fn golden_dir(&self, root: &Path) -> PathBuf {
        root.join(GOLDEN_DIR).join(self.group).join(self.name)
    }

    /// The golden graph of one of its samples.
    pub fn golden_path(&self, root: &Path, sample: &str) -> PathBuf {
        self.golden_dir(root).join(sample)
    }

    /// KubeRay's flags for the profile (added to the recorder's own): `--batch-scheduler=<name>`.
    pub fn operator_args(&self) -> Vec<String> {
        self.batch_scheduler
            .map(|s| format!("--batch-scheduler={s}"))
            .into_iter()
            .collect()
    }

    /// `sample` without the documents the profile omits.
    pub fn documents(&self, sample: &Sample) -> Sample {
        let omitted = |d: &serde_json::Value| {
            self.omitted
                .iter()
                .any(|(api_version, kind, _)| d["apiVersion"] == *api_version && d["kind"] == *kind)
        };
        Sample {
            path: sample.path.clone(),
            documents: sample.documents.iter().filter(|d| !omitted(d)).cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_unique_in_known_groups_and_name_existing_samples() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let paths = super::super::sample_paths(&root).unwrap();
        for (i, p) in PROFILES.iter().enumerate() {
            assert!(GROUPS.contains(&p.group), "{}: group {}", p.name, p.group);
            assert!(PROFILES[..i].iter().all(|q| q.name != p.name), "{} twice", p.name);
            assert!(
                p.batch_scheduler.is_some() || !p.feature_gates.is_empty(),
                "{}: changes nothing",
                p.name
            );
            for s in p.samples {
                assert!(paths.iter().any(|x| x == s), "{}: no sample {s}", p.name);
            }
        }
    }
}
