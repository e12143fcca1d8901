//! Invalid RayJobs end in `ValidationFailed` with KubeRay's message and a Warning event, once; nothing is
//! created, and data the types cannot read is reported the same way instead of failing the reconcile.

mod common;

use common::*;
use kuberay_plugin_sdk::{
    EventType,
    serde_json::{Value, json},
};

fn rejected(spec: Value) -> (String, String) {
    let mut job = sample("ray-job.sample.yaml");
    for (k, v) in spec.as_object().into_iter().flatten() {
        job["spec"][k] = v.clone();
    }
    let host = host(job);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "ValidationFailed", "{s}");
    assert_eq!(s["reason"], "ValidationFailed");
    assert!(host.objects(&ray_cluster_kind()).is_empty());
    let event = host
        .events()
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no event"));
    (
        s["message"].as_str().unwrap_or_default().to_string(),
        event.reason,
    )
}

#[test]
fn spec_rules_with_kuberays_messages() {
    let cases = [
        (
            json!({"rayClusterSpec": null}),
            "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set",
        ),
        (
            json!({"activeDeadlineSeconds": 0}),
            "The RayJob spec is invalid: activeDeadlineSeconds must be a positive integer",
        ),
        (
            json!({"backoffLimit": -1}),
            "The RayJob spec is invalid: backoffLimit must be a positive integer",
        ),
        (
            json!({"runtimeEnvYAML": "- just\n- a list\n"}),
            "failed to unmarshal RuntimeEnvYAML: - just\n- a list\n: expected a mapping, found a sequence",
        ),
        (
            json!({"submissionMode": "BatchMode"}),
            "The RayJob spec is invalid: unknown submissionMode \"BatchMode\" (expected K8sJobMode, HTTPMode, \
             InteractiveMode or SidecarMode)",
        ),
        (
            json!({"entrypointResources": "{not json"}),
            "The RayJob spec is invalid: entrypointResources is not a JSON object of numbers: key must be a \
             string at line 1 column 2",
        ),
    ];
    for (spec, message) in cases {
        let (got, reason) = rejected(spec);
        assert_eq!(got, message);
        assert_eq!(reason, "InvalidRayJobSpec");
    }
}

#[test]
fn k8s_token_auth_is_not_supported() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["rayClusterSpec"]["authOptions"] = json!({"mode": "token", "enableK8sTokenAuth": true});
    let host = host(job);
    step(&host);
    assert_eq!(
        status(&host)["message"],
        "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob"
    );
}

/// The cluster spec a RayJob carries is checked with KubeRay's cluster rules (`ValidateRayClusterSpec`),
/// so a bad one fails the RayJob with the rule's message before any RayCluster is made.
#[test]
fn the_cluster_spec_is_checked_with_kuberays_cluster_rules() {
    let mut job = sample("ray-job.sample.yaml");
    let mut cluster = job["spec"]["rayClusterSpec"].clone();
    cluster["workerGroupSpecs"][0]["minReplicas"] = json!(5);
    cluster["workerGroupSpecs"][0]["maxReplicas"] = json!(2);
    let (message, reason) = rejected(json!({"rayClusterSpec": cluster}));
    assert_eq!(
        message,
        "The RayJob spec is invalid: worker group small-group has minReplicas 5 greater than maxReplicas 2"
    );
    assert_eq!(reason, "InvalidRayJobSpec");

    // A feature-gated option follows the gate as the RayCluster plugin does: refused while it is off...
    job["spec"]["rayClusterSpec"]["networkPolicy"] = json!({"mode": "DenyAll"});
    let host = host(job.clone());
    step(&host);
    assert_eq!(
        status(&host)["message"],
        "The RayJob spec is invalid: spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be \
         enabled"
    );
    // ...and taken with it on.
    let host = host_with_gate(job, "RayClusterNetworkPolicy");
    step(&host);
    assert_ne!(deployment(&host), "ValidationFailed", "{}", status(&host));
}

/// The judged host with the feature gate `gate` on, over the policy entry's configuration.
fn host_with_gate(job: Value, gate: &str) -> kuberay_plugin_sdk::testing::FakeHost {
    let host = host(job);
    let mut config = kuberay_plugin_sdk::Host::config(&host);
    config.insert("featureGates".into(), json!({gate: true}));
    host.with_config(Value::Object(config))
}

#[test]
fn names_must_leave_room_for_the_cluster_suffix() {
    let mut job = sample("ray-job.sample.yaml");
    job["metadata"]["name"] = json!("a".repeat(48));
    let host = host(job);
    step(&host);
    let s = status(&host);
    assert_eq!(
        s["message"],
        "The RayJob metadata is invalid: RayJob name should be no more than 47 characters"
    );
    let event = host.events().into_iter().next().expect("event");
    assert_eq!(event.reason, "InvalidRayJobMetadata");
    assert_eq!(event.event_type, EventType::Warning);
    assert_eq!(event.action, "Validate");
    assert!(
        event
            .note
            .starts_with(&format!("default/{}: The RayJob metadata", "a".repeat(48)))
    );
}

#[test]
fn names_must_be_dns1035_labels() {
    let mut job = sample("ray-job.sample.yaml");
    job["metadata"]["name"] = json!("1job");
    let host = host(job);
    step(&host);
    assert_eq!(
        status(&host)["message"],
        "The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: [a DNS-1035 label must \
         consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with \
         an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is \
         '[a-z]([-a-z0-9]*[a-z0-9])?')]"
    );
}

#[test]
fn validation_failed_is_recorded_once_and_then_left_alone() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["activeDeadlineSeconds"] = json!(-5);
    let host = host(job);
    step(&host);
    host.clear_writes();
    let outcome = step(&host);
    assert_eq!(host.writes(), vec![]);
    assert!(host.events().is_empty());
    assert_eq!(outcome.requeue_after, None);
    // KubeRay never leaves ValidationFailed, even when the spec is fixed.
    let mut job = host.primary();
    job["spec"]["activeDeadlineSeconds"] = json!(100);
    host.set_primary(job);
    step(&host);
    assert_eq!(deployment(&host), "ValidationFailed");
}

#[test]
fn waiting_outside_interactive_mode_is_an_invalid_status() {
    let mut job = sample("ray-job.sample.yaml");
    job["status"] = json!({"jobDeploymentStatus": "Waiting"});
    let host = host(job);
    step(&host);
    assert_eq!(
        status(&host)["message"],
        "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not \
         InteractiveMode"
    );
    assert_eq!(event_reasons(&host), vec!["InvalidRayJobStatus"]);
}

#[test]
fn unreadable_objects_fail_validation_without_losing_the_status() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["entrypointNumCpus"] = json!("lots");
    job["status"] = json!({"failed": 2, "jobId": "rayjob-sample-xxxxx"});
    let host = host(job);
    step(&host);
    let s = status(&host);
    assert_eq!(s["jobDeploymentStatus"], "ValidationFailed");
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("The RayJob could not be read: ")),
        "{s}"
    );
    assert_eq!(
        (s["failed"].clone(), s["jobId"].clone()),
        (json!(2), json!("rayjob-sample-xxxxx"))
    );
}

#[test]
fn a_rayjob_of_another_controller_is_left_alone() {
    let mut job = sample("ray-job.sample.yaml");
    job["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    let host = host(job);
    step(&host);
    assert_eq!(host.writes(), vec![]);
    assert!(status(&host).is_null());
}
