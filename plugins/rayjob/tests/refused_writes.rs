//! Writes the API server refuses: the Warning events carry the API server's message alone, as KubeRay's do.

mod common;

use common::*;
use kuberay_plugin_sdk::HostError;

#[test]
fn a_refused_cluster_is_reported_with_the_api_servers_message() {
    let host = host(sample_in("K8sJobMode"));
    let refusal = "admission webhook \"vraycluster.kb.io\" denied the request: quota exceeded";
    host.refuse_writes(ray_cluster_kind(), Some(HostError::Invalid(refusal.into())));
    step(&host); // New -> Initializing
    assert!(reconcile(&host).is_err());
    let name = cluster_name(&host);
    assert_eq!(
        event(&host, "FailedToCreateRayCluster").map(|e| e.note),
        Some(format!("Failed to create RayCluster default/{name}: {refusal}"))
    );
}

#[test]
fn a_refused_submitter_job_is_reported_with_the_api_servers_message() {
    let host = host(sample_in("K8sJobMode"));
    let refusal = "jobs.batch \"rayjob-sample\" is forbidden: exceeded quota: jobs";
    host.refuse_writes(job_kind(), Some(HostError::Unavailable(refusal.into())));
    step(&host);
    step(&host);
    cluster_ready(&host, &cluster_name(&host));
    assert!(reconcile(&host).is_err());
    assert_eq!(
        event(&host, "FailedToCreateRayJobSubmitter").map(|e| e.note),
        Some(format!(
            "Failed to create new Kubernetes Job default/rayjob-sample: {refusal}"
        ))
    );
}
