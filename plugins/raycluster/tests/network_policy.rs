//! `spec.networkPolicy` under the `RayClusterNetworkPolicy` gate, on the judged FakeHost: the objects are
//! those KubeRay v1.7's NetworkPolicy controller builds for the same input (`networkpolicy_controller.go`
//! and its unit tests), with its events; with the gate off the spec is refused and nothing is touched.

#![allow(clippy::unwrap_used, reason = "a test fails loudly on any unexpected error")]

mod common;

use common::*;
use kuberay_plugin_sdk::{
    EventType, Kind, ReconcileError,
    serde_json::{Value, json},
    testing::FakeHost,
};

fn np_kind() -> Kind {
    Kind::new("networking.k8s.io", "v1", "NetworkPolicy")
}

/// The judged host with the gate set as `on`, over the policy entry's configuration.
fn gated(cluster: Value, on: bool) -> FakeHost {
    let host = host(cluster);
    let mut config = kuberay_plugin_sdk::Host::config(&host);
    config.insert("featureGates".into(), json!({"RayClusterNetworkPolicy": on}));
    host.with_config(Value::Object(config))
}

fn dns_rule() -> Value {
    json!({
        "to": [{
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}
        }],
        "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    })
}

/// The sample cluster with KubeRay's deny-all sample's `networkPolicy`.
fn deny_all() -> Value {
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({
        "mode": "DenyAll",
        "head": {"egressRules": [dns_rule()]},
        "worker": {"egressRules": [dns_rule()]}
    });
    c
}

fn policy(host: &FakeHost, name: &str) -> Value {
    host.objects(&np_kind())
        .into_iter()
        .find(|p| p["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no NetworkPolicy {name}"))
}

fn policy_names(host: &FakeHost) -> Vec<String> {
    let mut names: Vec<String> = host.objects(&np_kind()).iter().map(name).collect();
    names.sort();
    names
}

fn cluster_peer() -> Value {
    json!({"podSelector": {"matchLabels": {"ray.io/cluster": NAME}}})
}

fn labels(group: &str) -> Value {
    json!({
        "ray.io/cluster": NAME,
        "ray.io/group": group,
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator"
    })
}

#[test]
fn deny_all_creates_kuberays_head_and_worker_group_policies() {
    let host = gated(deny_all(), true);
    reconcile(&host).unwrap();
    assert_eq!(
        policy_names(&host),
        ["raycluster-sample-head", "raycluster-sample-workers-small-group"]
    );
    let head = policy(&host, "raycluster-sample-head");
    assert_eq!(head["metadata"]["namespace"], NS);
    assert_eq!(head["metadata"]["labels"], labels("headgroup"));
    let owner = &head["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "RayCluster");
    assert_eq!(owner["uid"], "cluster-uid");
    assert_eq!(owner["controller"], true);
    assert_eq!(
        head["spec"],
        json!({
            "podSelector": {"matchLabels": {"ray.io/cluster": NAME, "ray.io/node-type": "head"}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [cluster_peer()]}],
            "egress": [{"to": [cluster_peer()]}, dns_rule()]
        })
    );
    let workers = policy(&host, "raycluster-sample-workers-small-group");
    assert_eq!(workers["metadata"]["labels"], labels("small-group"));
    assert_eq!(
        workers["spec"],
        json!({
            "podSelector": {"matchLabels": {
                "ray.io/cluster": NAME, "ray.io/node-type": "worker", "ray.io/group": "small-group"
            }},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [cluster_peer()]}],
            "egress": [{"to": [cluster_peer()]}, dns_rule()]
        })
    );
    let created: Vec<(String, String)> = host
        .events()
        .into_iter()
        .filter(|e| e.reason == "CreatedNetworkPolicy")
        .map(|e| (e.action, e.note))
        .collect();
    assert_eq!(
        created,
        [
            (
                "Create".into(),
                "Created NetworkPolicy default/raycluster-sample-head".into()
            ),
            (
                "Create".into(),
                "Created NetworkPolicy default/raycluster-sample-workers-small-group".into()
            ),
        ]
    );
    // The Pods are made as without the feature.
    assert_eq!(heads(&host).len(), 1);
    // Nothing changes on the next rounds.
    host.clear_writes();
    reconcile(&host).unwrap();
    assert!(
        host.writes()
            .iter()
            .all(|w| !format!("{w:?}").contains("NetworkPolicy")),
        "{:?}",
        host.writes()
    );
}

#[test]
fn a_mode_restricts_only_its_direction() {
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({"mode": "DenyAllIngress", "head": {"ingressRules": [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "prometheus"}}}
    ], "ports": [{"port": 8080}]}]}});
    let host = gated(c, true);
    reconcile(&host).unwrap();
    let head = policy(&host, "raycluster-sample-head");
    assert_eq!(head["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(head["spec"].get("egress"), None);
    assert_eq!(head["spec"]["ingress"][1]["ports"], json!([{"port": 8080}]));
    let workers = policy(&host, "raycluster-sample-workers-small-group");
    assert_eq!(workers["spec"]["ingress"], json!([{"from": [cluster_peer()]}]));

    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({"mode": "DenyAllEgress"});
    let host = gated(c, true);
    reconcile(&host).unwrap();
    let head = policy(&host, "raycluster-sample-head");
    assert_eq!(head["spec"]["policyTypes"], json!(["Egress"]));
    assert_eq!(head["spec"].get("ingress"), None);
    assert_eq!(head["spec"]["egress"], json!([{"to": [cluster_peer()]}]));

    // No mode is DenyAll.
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({});
    let host = gated(c, true);
    reconcile(&host).unwrap();
    let head = policy(&host, "raycluster-sample-head");
    assert_eq!(head["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
}

#[test]
fn a_worker_groups_entry_replaces_the_worker_rules() {
    let mut c = deny_all();
    let mut other = c["spec"]["workerGroupSpecs"][0].clone();
    other["groupName"] = json!("gpu");
    c["spec"]["workerGroupSpecs"].as_array_mut().unwrap().push(other);
    let https =
        json!({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 443, "protocol": "TCP"}]});
    c["spec"]["networkPolicy"]["workerGroups"] = json!([{"groupName": "gpu", "egressRules": [https]}]);
    let host = gated(c, true);
    reconcile(&host).unwrap();
    let small = policy(&host, "raycluster-sample-workers-small-group");
    assert_eq!(
        small["spec"]["egress"],
        json!([{"to": [cluster_peer()]}, dns_rule()])
    );
    let gpu = policy(&host, "raycluster-sample-workers-gpu");
    assert_eq!(gpu["spec"]["egress"], json!([{"to": [cluster_peer()]}, https]));
    assert_eq!(gpu["spec"]["podSelector"]["matchLabels"]["ray.io/group"], "gpu");
}

#[test]
fn the_head_of_a_k8s_job_mode_rayjob_admits_its_submitter_on_the_dashboard_port() {
    let mut c = deny_all();
    c["metadata"]["labels"] = json!({"ray.io/job-submission-mode": "K8sJobMode"});
    c["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "ray.io/v1", "kind": "RayJob", "name": "my-job", "uid": "job-uid", "controller": true
    }]);
    c["spec"]["headGroupSpec"]["rayStartParams"] = json!({"dashboard-port": "8266"});
    let host = gated(c.clone(), true);
    reconcile(&host).unwrap();
    let head = policy(&host, "raycluster-sample-head");
    assert_eq!(
        head["spec"]["ingress"],
        json!([
            {"from": [cluster_peer()]},
            {
                "from": [{"podSelector": {"matchLabels": {
                    "ray.io/originated-from-cr-name": "my-job", "ray.io/originated-from-crd": "RayJob"
                }}}],
                "ports": [{"protocol": "TCP", "port": 8266}]
            }
        ])
    );
    // Another submission mode has no submitter Pod.
    c["metadata"]["labels"] = json!({"ray.io/job-submission-mode": "HTTPMode"});
    let host = gated(c, true);
    reconcile(&host).unwrap();
    let head = policy(&host, "raycluster-sample-head");
    assert_eq!(head["spec"]["ingress"], json!([{"from": [cluster_peer()]}]));
}

#[test]
fn changed_rules_update_the_policy_and_removed_groups_lose_theirs() {
    let host = gated(deny_all(), true);
    reconcile(&host).unwrap();
    edit(&host, |c| {
        c["spec"]["networkPolicy"]["head"]["egressRules"] = json!([]);
    });
    host.clear_writes();
    reconcile(&host).unwrap();
    let head = policy(&host, "raycluster-sample-head");
    assert_eq!(head["spec"]["egress"], json!([{"to": [cluster_peer()]}]));
    assert!(host.events().iter().any(|e| e.reason == "UpdatedNetworkPolicy"
        && e.note == "Updated NetworkPolicy default/raycluster-sample-head"));

    // A policy left by a removed group goes; one the cluster does not control stays.
    host.insert(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "foreign", "namespace": NS, "labels": {"ray.io/cluster": NAME}},
        "spec": {"podSelector": {}}
    }));
    edit(&host, |c| {
        c["spec"]["workerGroupSpecs"] = json!([]);
    });
    reconcile(&host).unwrap();
    assert_eq!(policy_names(&host), ["foreign", "raycluster-sample-head"]);
    assert!(host.events().iter().any(|e| e.reason == "DeletedNetworkPolicy"
        && e.action == "Delete"
        && e.note == "Deleted NetworkPolicy default/raycluster-sample-workers-small-group"));

    // Without networkPolicy, the cluster's policies go.
    edit(&host, |c| {
        c["spec"].as_object_mut().unwrap().remove("networkPolicy");
    });
    reconcile(&host).unwrap();
    assert_eq!(policy_names(&host), ["foreign"]);
}

#[test]
fn a_policy_of_the_same_name_not_owned_by_the_cluster_is_a_collision() {
    let host = gated(deny_all(), true);
    host.insert(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "raycluster-sample-head", "namespace": NS},
        "spec": {"podSelector": {}}
    }));
    let result = reconcile(&host);
    let Err(ReconcileError::Transient(message)) = result else {
        panic!("expected a retry, got {result:?}");
    };
    assert_eq!(
        message,
        "NetworkPolicy default/raycluster-sample-head already exists and is not owned by this RayCluster"
    );
    let collision = host
        .events()
        .into_iter()
        .find(|e| e.reason == "NetworkPolicyNameCollision")
        .unwrap();
    assert_eq!(collision.event_type, EventType::Warning);
    assert_eq!(collision.action, "Validate");
    assert_eq!(
        collision.note,
        "NetworkPolicy default/raycluster-sample-head already exists and is not owned by this RayCluster, \
         network isolation will not be applied. Rename the existing NetworkPolicy or use a different RayCluster \
         name to avoid the collision"
    );
    // The foreign policy is untouched, and the cluster's Pods are still made.
    assert_eq!(
        policy(&host, "raycluster-sample-head")["spec"],
        json!({"podSelector": {}})
    );
    assert_eq!(heads(&host).len(), 1);
}

#[test]
fn a_refused_write_is_reported_with_kuberays_event() {
    let host = gated(deny_all(), true);
    host.refuse_writes(
        np_kind(),
        Some(kuberay_plugin_sdk::HostError::Forbidden("quota".into())),
    );
    let result = reconcile(&host);
    assert!(matches!(result, Err(ReconcileError::Transient(_))), "{result:?}");
    let failed = host
        .events()
        .into_iter()
        .find(|e| e.reason == "FailedToCreateNetworkPolicy")
        .unwrap();
    assert_eq!(failed.event_type, EventType::Warning);
    assert!(
        failed
            .note
            .starts_with("Failed to create NetworkPolicy default/raycluster-sample-head: "),
        "{}",
        failed.note
    );
}

#[test]
fn with_the_gate_off_the_spec_is_refused_and_policies_are_left_alone() {
    let host = gated(deny_all(), false);
    let result = reconcile(&host);
    let Err(ReconcileError::InvalidObject(message)) = result else {
        panic!("expected InvalidObject, got {result:?}");
    };
    assert!(
        message
            .ends_with("spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled")
    );
    assert!(host.objects(&np_kind()).is_empty());

    // A policy made while the gate was on stays when the gate is off.
    let host = gated(sample(1), false);
    host.insert_owned(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "raycluster-sample-head", "namespace": NS, "labels": {"ray.io/cluster": NAME}},
        "spec": {"podSelector": {}}
    }));
    reconcile(&host).unwrap();
    assert_eq!(policy_names(&host), ["raycluster-sample-head"]);
    assert!(host.lists().iter().all(|(kind, _)| *kind != np_kind()));
}

fn refused(cluster: Value, expected: &str) {
    let host = gated(cluster, true);
    let result = reconcile(&host);
    let Err(ReconcileError::InvalidObject(message)) = result else {
        panic!("expected InvalidObject, got {result:?}");
    };
    assert!(
        message.ends_with(expected),
        "{message:?} should end with {expected:?}"
    );
    assert!(host.events().iter().any(|e| e.reason == "InvalidRayClusterSpec"));
    // KubeRay's NetworkPolicy controller does not validate: the head's policy is made all the same.
    assert!(
        host.objects(&np_kind())
            .iter()
            .any(|p| name(p) == "raycluster-sample-head")
    );
}

#[test]
fn kuberays_validation_of_the_network_policy() {
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({"mode": "DenyAllEgress", "head": {"ingressRules": [{}]}});
    refused(
        c,
        r#"networkPolicy.head.ingressRules cannot be set when mode is "DenyAllEgress" (ingress is not restricted)"#,
    );
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({"mode": "DenyAllIngress", "worker": {"egressRules": [{}]}});
    refused(
        c,
        r#"networkPolicy.worker.egressRules cannot be set when mode is "DenyAllIngress" (egress is not restricted)"#,
    );
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({"mode": "DenyAllEgress", "workerGroups": [{"groupName": "small-group", "ingressRules": [{}]}]});
    refused(
        c,
        r#"networkPolicy.workerGroups["small-group"].ingressRules cannot be set when mode is "DenyAllEgress" (ingress is not restricted)"#,
    );
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({"workerGroups": [{"groupName": "missing"}]});
    refused(
        c,
        r#"networkPolicy.workerGroups["missing"] does not match any group name in workerGroupSpecs"#,
    );
    let mut c = sample(1);
    c["spec"]["workerGroupSpecs"][0]["groupName"] = json!("Small_Group");
    c["spec"]["networkPolicy"] = json!({});
    refused(
        c,
        "worker group name \"Small_Group\" must be a valid DNS1123 label when networkPolicy is enabled (it is \
         embedded in the NetworkPolicy name): [a lowercase RFC 1123 label must consist of lower case alphanumeric \
         characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
         regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]",
    );
    // Rules of both directions under DenyAll are fine.
    let mut c = sample(1);
    c["spec"]["networkPolicy"] = json!({"head": {"ingressRules": [{}], "egressRules": [{}]}});
    let host = gated(c, true);
    reconcile(&host).unwrap();
}
