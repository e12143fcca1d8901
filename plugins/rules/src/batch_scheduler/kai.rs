//! NVIDIA KAI Scheduler (`kai-scheduler`): KAI's own PodGrouper makes the gangs, so KubeRay only points the
//! Pods at the scheduler and copies the owner's `kai.scheduler/queue` label (when not empty; without it the
//! Pods stay pending). A `K8sJobMode` RayJob is refused: its submitter Pod comes after the cluster is ready,
//! which KAI cannot gang.

use kuberay_crds::{JobSubmissionMode, RayJob};

use super::{Decoration, Parent, submission_mode};

/// The queue label, copied from the owner to the children.
pub const QUEUE_LABEL: &str = "kai.scheduler/queue";

/// KubeRay's refusal of a `K8sJobMode` RayJob.
pub const K8S_JOB_MODE_REFUSAL: &str = "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod \
     is created after RayCluster is ready, preventing proper gang scheduling";

/// What a child of `parent` gets (without the `schedulerName`, which the caller adds).
pub fn decoration(parent: Parent<'_>) -> Decoration {
    let mut decoration = Decoration::default();
    if let Some(queue) = parent.nonempty_label(QUEUE_LABEL) {
        decoration.labels.insert(QUEUE_LABEL.into(), queue.into());
    }
    decoration
}

/// `K8sJobMode` RayJobs are refused.
pub fn refuses_job(job: &RayJob) -> Option<String> {
    (submission_mode(job) == JobSubmissionMode::K8sJobMode).then(|| K8S_JOB_MODE_REFUSAL.to_string())
}
