//! Writes the API server refuses (Pod Security admission, a quota, a webhook): the `ReplicaFailure`
//! condition and the Warning events carry the API server's message alone, as KubeRay's do (Go's client
//! returns it as the error's text), not the SDK's kind prefix.

mod common;

use common::*;
use kuberay_plugin_sdk::{HostError, serde_json::Value};

const REFUSAL: &str = "pods \"raycluster-sample-head-x\" is forbidden: violates PodSecurity \"baseline:latest\": \
                       host namespaces (hostNetwork=true)";

fn note(host: &kuberay_plugin_sdk::testing::FakeHost, reason: &str) -> Option<String> {
    host.events()
        .into_iter()
        .find(|e| e.reason == reason)
        .map(|e| e.note)
}

#[test]
fn a_refused_head_pod_reports_the_api_servers_message() {
    let host = host(sample(1));
    host.refuse_writes(pod_kind(), Some(HostError::Invalid(REFUSAL.into())));
    // The reconcile fails (and is retried); the status says why first.
    assert!(reconcile(&host).is_err());
    let failure = condition(&host, "ReplicaFailure").unwrap_or_else(|| panic!("{}", status(&host)));
    assert_eq!(failure["status"], "True");
    assert_eq!(failure["reason"], "FailedCreateHeadPod");
    assert_eq!(
        failure["message"],
        Value::from(format!("FailedCreateHeadPod\n{REFUSAL}"))
    );
    assert_eq!(
        note(&host, "FailedToCreateHeadPod"),
        Some(format!(
            "Failed to create head Pod default/raycluster-sample-head-, {REFUSAL}"
        ))
    );
}

#[test]
fn a_refused_worker_pod_reports_the_api_servers_message() {
    let host = running(sample(1));
    edit(&host, |c| c["spec"]["workerGroupSpecs"][0]["replicas"] = 2.into());
    let refusal =
        "pods \"w\" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2";
    host.refuse_writes(pod_kind(), Some(HostError::Unavailable(refusal.into())));
    assert!(reconcile(&host).is_err());
    let failure = condition(&host, "ReplicaFailure").unwrap_or_else(|| panic!("{}", status(&host)));
    assert_eq!(failure["reason"], "FailedCreateWorkerPod");
    assert_eq!(
        failure["message"],
        Value::from(format!("FailedCreateWorkerPod\n{refusal}"))
    );
    assert_eq!(
        note(&host, "FailedToCreateWorkerPod"),
        Some(format!(
            "Failed to create worker Pod for the cluster default/raycluster-sample, {refusal}"
        ))
    );
}
