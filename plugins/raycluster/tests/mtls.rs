//! `spec.tlsOptions` under the `RayClusterMTLS` gate, on the judged FakeHost playing cert-manager: the
//! Issuers and Certificates are those KubeRay v1.7's mTLS controller makes (`raycluster_mtls_controller.go`),
//! Pods wait for the certificates, carry KubeRay's TLS settings (`configureTLS`) and their IPs join the
//! certificates; without cert-manager the cluster is refused with KubeRay's message.

#![allow(clippy::unwrap_used, reason = "a test fails loudly on any unexpected error")]

mod common;

use common::*;
use kuberay_plugin_raycluster::mtls::{certificate_kind, issuer_kind};
use kuberay_plugin_sdk::{
    Event, EventType, HostError, ReconcileError,
    serde_json::{Value, json},
    testing::FakeHost,
};

const UID: &str = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f";

/// The sample cluster (with `tlsOptions.enabled`) on the judged host, the gate set as `on`.
fn gated(mut cluster: Value, on: bool) -> FakeHost {
    cluster["spec"]["tlsOptions"] = json!({"enabled": true});
    // A uid as the API server makes them: its first 8 characters name the CA's Secret.
    cluster["metadata"]["uid"] = json!(UID);
    let host = host(cluster);
    let mut config = kuberay_plugin_sdk::Host::config(&host);
    config.insert("featureGates".into(), json!({"RayClusterMTLS": on}));
    host.with_config(Value::Object(config))
}

fn tls_host(on: bool) -> FakeHost {
    gated(sample(1), on)
}

/// The first recorded event of `reason`.
fn event(host: &FakeHost, reason: &str) -> Event {
    host.events()
        .into_iter()
        .find(|e| e.reason == reason)
        .unwrap_or_else(|| panic!("no {reason} event in {:?}", event_reasons(host)))
}

fn certificate(host: &FakeHost, name: &str) -> Value {
    host.objects(&certificate_kind())
        .into_iter()
        .find(|c| c["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no Certificate {name}"))
}

/// Plays cert-manager: every Certificate is issued at its current generation (bumped when its spec
/// changed since it was last issued).
fn issue_all(host: &FakeHost) {
    for cert in host.objects(&certificate_kind()) {
        host.update(&certificate_kind(), &name(&cert), |c| {
            let spec = c["spec"].clone();
            let previous = c["metadata"]["annotations"]["test/issued-spec"].clone();
            let mut generation = c["metadata"]["generation"].as_i64().unwrap_or(1);
            if !previous.is_null() && previous != Value::String(spec.to_string()) {
                generation += 1;
            }
            c["metadata"]["generation"] = json!(generation);
            c["metadata"]["annotations"] = json!({"test/issued-spec": spec.to_string()});
            c["status"] = json!({
                "notAfter": "2099-01-01T00:00:00Z",
                "conditions": [{"type": "Ready", "status": "True", "observedGeneration": generation}]
            });
        });
    }
}

fn container<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name} in {list}"))
}

fn tls_env(container: &Value) -> Vec<(String, String)> {
    [
        "RAY_USE_TLS",
        "RAY_TLS_SERVER_CERT",
        "RAY_TLS_SERVER_KEY",
        "RAY_TLS_CA_CERT",
    ]
    .into_iter()
    .filter_map(|n| env_value(container, n))
    .map(|e| {
        (
            e["name"].as_str().unwrap().to_string(),
            e["value"].as_str().unwrap().to_string(),
        )
    })
    .collect()
}

fn expected_env() -> Vec<(String, String)> {
    [
        ("RAY_USE_TLS", "1"),
        ("RAY_TLS_SERVER_CERT", "/etc/ray/tls/tls.crt"),
        ("RAY_TLS_SERVER_KEY", "/etc/ray/tls/tls.key"),
        ("RAY_TLS_CA_CERT", "/etc/ray/tls/ca.crt"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

#[test]
fn the_cluster_gets_kuberays_pki_and_no_pod_before_it_is_issued() {
    let host = tls_host(true);
    reconcile(&host).unwrap();
    assert!(pods(&host).is_empty(), "a Pod before its certificate");
    let mut issuers: Vec<String> = host.objects(&issuer_kind()).iter().map(name).collect();
    issuers.sort();
    assert_eq!(
        issuers,
        [
            "ray-ca-issuer-raycluster-sample",
            "ray-selfsigned-issuer-raycluster-sample"
        ]
    );
    let ca = certificate(&host, "ray-ca-certificate-raycluster-sample");
    assert_eq!(
        ca["spec"],
        json!({
            "secretName": "raycluster-sample-ca-secret-3f2a9c1e",
            "isCA": true,
            "commonName": "ray-ca-raycluster-sample",
            "privateKey": {"algorithm": "RSA", "size": 4096},
            "duration": "87600h0m0s",
            "renewBefore": "720h0m0s",
            "usages": ["cert sign", "crl sign"],
            "issuerRef": {"name": "ray-selfsigned-issuer-raycluster-sample", "kind": "Issuer", "group": "cert-manager.io"}
        })
    );
    assert_eq!(ca["metadata"]["ownerReferences"][0]["uid"], UID);
    assert_eq!(ca["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        ca["metadata"]["labels"],
        json!({
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
            "app.kubernetes.io/component": "ca-certificate",
            "ray.io/cluster": "raycluster-sample"
        })
    );
    let head = certificate(&host, "ray-head-cert-raycluster-sample");
    assert_eq!(
        head["spec"],
        json!({
            "secretName": "ray-head-secret-raycluster-sample",
            "duration": "2160h0m0s",
            "renewBefore": "360h0m0s",
            "dnsNames": ["localhost", "raycluster-sample-head-svc.default.svc.cluster.local"],
            "ipAddresses": ["127.0.0.1"],
            "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
            "issuerRef": {"name": "ray-ca-issuer-raycluster-sample", "kind": "Issuer", "group": "cert-manager.io"}
        })
    );
    let worker = certificate(&host, "ray-worker-cert-raycluster-sample");
    assert_eq!(worker["spec"]["dnsNames"], json!(["localhost"]));
    assert_eq!(
        worker["spec"]["secretName"],
        "ray-worker-secret-raycluster-sample"
    );
    assert!(event_reasons(&host).contains(&"MTLSCertsNotReady".to_string()));

    issue_all(&host);
    assert!(!event_reasons(&host).contains(&"MTLSPKIReady".to_string()));
    reconcile(&host).unwrap();
    assert_eq!(heads(&host).len(), 1);
    assert!(
        event_reasons(&host).contains(&"MTLSPKIReady".to_string()),
        "{:?}",
        event_reasons(&host)
    );
}

#[test]
fn ray_pods_carry_kuberays_tls_settings() {
    let host = tls_host(true);
    reconcile(&host).unwrap();
    issue_all(&host);
    settle(&host, 3);
    let head = &heads(&host)[0];
    assert_eq!(
        head["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "ray-tls")
            .unwrap()["secret"],
        json!({"secretName": "ray-head-secret-raycluster-sample"})
    );
    let ray = &head["spec"]["containers"][0];
    assert_eq!(tls_env(ray), expected_env());
    assert!(ray["volumeMounts"].as_array().unwrap().contains(&json!(
        {"name": "ray-tls", "mountPath": "/etc/ray/tls", "readOnly": true}
    )));
    let wait = &head["spec"]["initContainers"][0];
    assert_eq!(wait["name"], "wait-for-tls-ip-san");
    assert_eq!(wait["image"], "rayproject/ray:2.46.0");
    assert_eq!(wait["command"], json!(["sh", "-c"]));
    let script = wait["args"][0].as_str().unwrap();
    assert!(script.starts_with("CERT=\"/etc/ray/tls/tls.crt\"\n"), "{script}");
    assert!(
        script.contains("grep -qE \"IP Address:${POD_IP}([^0-9.]|$)\""),
        "{script}"
    );
    assert!(script.ends_with("  sleep 5\ndone"), "{script}");
    // KubeRay's BuildPod then gives every init container the head's address (FQ_RAY_IP, RAY_IP).
    assert_eq!(
        wait["env"][0],
        json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    );
    assert_eq!(
        wait["resources"],
        json!({"limits": {"cpu": "50m", "memory": "64Mi"}, "requests": {"cpu": "50m", "memory": "64Mi"}})
    );

    let worker = &workers(&host)[0];
    let volume = worker["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "ray-tls")
        .unwrap()
        .clone();
    assert_eq!(
        volume["secret"]["secretName"],
        "ray-worker-secret-raycluster-sample"
    );
    let init = &worker["spec"]["initContainers"];
    assert_eq!(init[0]["name"], "wait-for-tls-ip-san");
    assert_eq!(tls_env(container(init, "wait-gcs-ready")), expected_env());
    assert_eq!(tls_env(&worker["spec"]["containers"][0]), expected_env());
}

#[test]
fn the_autoscaler_sidecar_speaks_tls_too() {
    let mut cluster = sample(1);
    cluster["spec"]["enableInTreeAutoscaling"] = json!(true);
    let host = gated(cluster, true);
    reconcile(&host).unwrap();
    issue_all(&host);
    settle(&host, 3);
    let head = &heads(&host)[0];
    assert_eq!(
        tls_env(container(&head["spec"]["containers"], "autoscaler")),
        expected_env()
    );
}

#[test]
fn pod_ips_join_their_certificate_and_pods_wait_for_the_reissue() {
    let host = tls_host(true);
    reconcile(&host).unwrap();
    issue_all(&host);
    settle(&host, 3);
    let head = name(&heads(&host)[0]);
    run(&host, &head, "10.0.0.7");
    reconcile(&host).unwrap();
    assert_eq!(
        certificate(&host, "ray-head-cert-raycluster-sample")["spec"]["ipAddresses"],
        json!(["10.0.0.7", "127.0.0.1"])
    );
    let updated = event(&host, "MTLSCertificatesUpdated");
    assert_eq!(
        updated.note,
        "Updated head certificate SANs (IPs: [10.0.0.7 127.0.0.1])"
    );
    assert_eq!(updated.event_type, EventType::Normal);

    // A new worker waits while the worker certificate is reissued at a new generation.
    for w in workers(&host) {
        kuberay_plugin_sdk::Host::delete(&host, &pod_kind(), &name(&w), None).unwrap();
    }
    host.update(&certificate_kind(), "ray-worker-cert-raycluster-sample", |c| {
        c["metadata"]["generation"] = json!(7);
    });
    reconcile(&host).unwrap();
    assert!(
        workers(&host).is_empty(),
        "a worker before its certificate was reissued"
    );
    issue_all(&host);
    reconcile(&host).unwrap();
    assert_eq!(workers(&host).len(), 1);
}

#[test]
fn without_cert_manager_the_cluster_is_refused_with_kuberays_message() {
    let host = tls_host(true);
    host.unserve(issuer_kind());
    host.unserve(certificate_kind());
    let result = reconcile(&host);
    assert!(
        matches!(result, Err(ReconcileError::InvalidObject(_))),
        "{result:?}"
    );
    let event = event(&host, "InvalidRayClusterSpec");
    assert_eq!(
        event.note,
        "The RayCluster spec is invalid default/raycluster-sample: tlsOptions requires cert-manager, but \
         cert-manager is not installed"
    );
    assert!(pods(&host).is_empty());
}

#[test]
fn with_the_gate_off_tls_options_are_refused_and_nothing_is_issued() {
    let host = tls_host(false);
    let result = reconcile(&host);
    assert!(
        matches!(result, Err(ReconcileError::InvalidObject(_))),
        "{result:?}"
    );
    let event = event(&host, "InvalidRayClusterSpec");
    assert!(
        event
            .note
            .ends_with("spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"),
        "{}",
        event.note
    );
    assert!(host.objects(&issuer_kind()).is_empty());
    assert!(host.objects(&certificate_kind()).is_empty());
}

#[test]
fn a_failed_step_is_reported_with_kuberays_event() {
    let host = tls_host(true);
    host.refuse_writes(certificate_kind(), Some(HostError::Forbidden("quota".into())));
    let result = reconcile(&host);
    assert!(matches!(result, Err(ReconcileError::Transient(_))), "{result:?}");
    let failed = event(&host, "MTLSFailedToReconcile");
    assert_eq!(failed.event_type, EventType::Warning);
    assert!(
        failed
            .note
            .starts_with("Failed to reconcile mTLS CA certificate: "),
        "{}",
        failed.note
    );
    assert!(pods(&host).is_empty());
}

#[test]
fn a_certificate_about_to_expire_is_warned_about() {
    let host = tls_host(true);
    reconcile(&host).unwrap();
    issue_all(&host);
    host.update(&certificate_kind(), "ray-ca-certificate-raycluster-sample", |c| {
        c["status"]["notAfter"] = json!("2000-01-01T00:00:00Z");
    });
    reconcile(&host).unwrap();
    let warning = event(&host, "MTLSCertificateExpiringSoon");
    assert!(
        warning
            .note
            .starts_with("TLS certificate ray-ca-certificate-raycluster-sample expires in -"),
        "{}",
        warning.note
    );
}

/// A hostile plugin with the RayClusterMTLS grant, through the same judged host: a Certificate may not point
/// cert-manager at a Secret someone else has (cert-manager would overwrite it), and a Pod may mount only the
/// Secrets its cluster's own Certificates are issued into.
#[test]
fn a_certificate_cannot_take_over_another_secret_nor_a_pod_mount_another_clusters() {
    use kuberay_plugin_sdk::Host;
    let host = tls_host(true);
    host.insert(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-password", "namespace": NS},
        "data": {"password": "c2VjcmV0"}
    }));
    let forged = json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": "innocent", "namespace": NS},
        "spec": {"secretName": "db-password", "issuerRef": {"name": "x", "kind": "Issuer"}}
    });
    let refused = host.create(&forged).unwrap_err();
    assert!(matches!(refused, HostError::Forbidden(_)), "{refused:?}");
    assert!(
        refused.message().contains("cert-manager would overwrite it"),
        "{}",
        refused.message()
    );
    // A Secret that does not exist yet is the Certificate's to be issued into.
    let mut fresh = forged.clone();
    fresh["spec"]["secretName"] = json!("innocent-tls");
    host.create(&fresh).unwrap();

    // Another cluster's certificate Secret, issued for its own Certificate.
    host.insert(json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": "ray-head-cert-other", "namespace": NS,
                     "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "other",
                                          "uid": "other-uid", "controller": true}]},
        "spec": {"secretName": "ray-head-secret-other"}
    }));
    let pod = |secret: &str| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("mount-{secret}"), "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "volumes": [{"name": "v", "secret": {"secretName": secret}}]}
        })
    };
    let refused = host.create(&pod("ray-head-secret-other")).unwrap_err();
    assert!(matches!(refused, HostError::Forbidden(_)), "{refused:?}");
    // The Secret of a Certificate this cluster controls may be mounted.
    reconcile(&host).unwrap();
    host.create(&pod("ray-head-secret-raycluster-sample")).unwrap();
}

#[test]
fn a_label_another_manager_adds_to_a_certificate_does_not_make_it_rewritten() {
    let host = tls_host(true);
    reconcile(&host).unwrap();
    issue_all(&host);
    settle(&host, 3);
    host.update(&certificate_kind(), "ray-head-cert-raycluster-sample", |c| {
        c["metadata"]["labels"]["team"] = json!("ml");
    });
    host.clear_writes();
    reconcile(&host).unwrap();
    let rewritten = host
        .writes()
        .into_iter()
        .any(|w| matches!(w, kuberay_plugin_sdk::testing::Write::Apply(k, _) if k == certificate_kind()));
    assert!(!rewritten, "{:?}", host.writes());
    assert!(!event_reasons(&host).contains(&"MTLSCertificatesUpdated".to_string()));
}

/// While cert-manager has not issued the certificates, the cluster looks again after KubeRay's 30 s (a
/// Certificate's change wakes it earlier: it is a kind the plugin owns), not every 2 s.
#[test]
fn a_cluster_waiting_for_cert_manager_looks_again_after_thirty_seconds() {
    let host = tls_host(true);
    // The first pass writes the PKI and the Services: soon again.
    assert_eq!(reconcile(&host).unwrap().requeue_after, secs(2));
    let waiting = reconcile(&host).unwrap();
    assert_eq!(waiting.requeue_after, secs(30));
    assert!(pods(&host).is_empty());
    issue_all(&host);
    assert_eq!(
        reconcile(&host).unwrap().requeue_after,
        secs(2),
        "Pods were created"
    );
}

fn secret_kind() -> kuberay_plugin_sdk::Kind {
    kuberay_plugin_sdk::Kind::new("", "v1", "Secret")
}

/// Plays cert-manager writing the key pairs: each Certificate's Secret, annotated with its name, no owner
/// reference (cert-manager's default `--enable-certificate-owner-ref=false`).
fn issue_secrets(host: &FakeHost) {
    for cert in host.objects(&certificate_kind()) {
        host.insert(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": cert["spec"]["secretName"], "namespace": NS,
                         "annotations": {"cert-manager.io/certificate-name": name(&cert)}},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5", "ca.crt": "Y2E="}
        }));
    }
}

fn secret(host: &FakeHost, name: &str) -> Value {
    host.objects(&secret_kind())
        .into_iter()
        .find(|s| s["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no Secret {name}"))
}

fn secret_writes(host: &FakeHost) -> Vec<String> {
    host.writes()
        .into_iter()
        .filter_map(|w| match w {
            kuberay_plugin_sdk::testing::Write::Apply(k, name) if k == secret_kind() => Some(name),
            _ => None,
        })
        .collect()
}

/// KubeRay's `ensureSecretOwnedByCertificate`: once cert-manager has made a Secret, it gets a (non-controller)
/// owner reference to its Certificate, once; before that there is nothing to do and nothing fails.
#[test]
fn each_issued_secret_gets_kuberays_owner_reference_to_its_certificate() {
    let host = tls_host(true);
    reconcile(&host).unwrap();
    assert!(secret_writes(&host).is_empty(), "{:?}", host.writes());
    issue_all(&host);
    issue_secrets(&host);
    host.clear_writes();
    reconcile(&host).unwrap();
    let mut written = secret_writes(&host);
    written.sort();
    let mut expected = vec![
        format!("raycluster-sample-ca-secret-{}", &UID[..8]),
        "ray-head-secret-raycluster-sample".to_string(),
        "ray-worker-secret-raycluster-sample".to_string(),
    ];
    expected.sort();
    assert_eq!(written, expected);
    for cert in host.objects(&certificate_kind()) {
        let stored = secret(&host, cert["spec"]["secretName"].as_str().unwrap());
        assert_eq!(
            stored["metadata"]["ownerReferences"],
            json!([{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": name(&cert),
                    "uid": cert["metadata"]["uid"]}])
        );
        assert_eq!(stored["data"]["tls.key"], "a2V5", "the key pair is left alone");
    }
    host.clear_writes();
    reconcile(&host).unwrap();
    assert!(secret_writes(&host).is_empty(), "{:?}", host.writes());
}

/// A hostile plugin with the same grant: the owner reference is the only write to a Secret it does not
/// control, and only KubeRay's: to a Secret cert-manager issued for a Certificate of its cluster that names
/// it. Anything else would let a plugin have someone's Secret collected (or rewritten), and the Secret comes
/// back without its keys.
#[test]
fn an_owner_reference_cannot_take_another_secret_nor_carry_more() {
    use kuberay_plugin_sdk::Host;
    let host = tls_host(true);
    reconcile(&host).unwrap();
    issue_all(&host);
    issue_secrets(&host);
    host.insert(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-password", "namespace": NS},
        "data": {"password": "c2VjcmV0"}
    }));
    let head = certificate(&host, "ray-head-cert-raycluster-sample");
    let reference = |certificate: &Value| {
        json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": name(certificate),
               "uid": certificate["metadata"]["uid"]})
    };
    let owned = |secret: &str, reference: Value| {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": secret, "namespace": NS, "ownerReferences": [reference]}})
    };
    let refused = |object: Value, why: &str| {
        let e = host.apply(&object).unwrap_err();
        assert!(matches!(e, HostError::Forbidden(_)), "{e:?}");
        assert!(e.message().contains(why), "{why}: {}", e.message());
    };
    refused(owned("db-password", reference(&head)), "is not issued into it");
    let mut controller = reference(&head);
    controller["controller"] = json!(true);
    refused(
        owned("ray-head-secret-raycluster-sample", controller),
        "without controller",
    );
    let mut more = owned("ray-head-secret-raycluster-sample", reference(&head));
    more["data"] = json!({"tls.key": "Zm9yZ2Vk"});
    refused(more, "may carry metadata.name");
    let mut labelled = owned("ray-head-secret-raycluster-sample", reference(&head));
    labelled["metadata"]["labels"] = json!({"a": "b"});
    refused(labelled, "may carry metadata.name");
    // Another cluster's Certificate, issued into a Secret of that name.
    host.insert(json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": "ray-head-cert-other", "namespace": NS, "uid": "other-cert",
                     "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "other",
                                          "uid": "other-uid", "controller": true}]},
        "spec": {"secretName": "db-password"}
    }));
    refused(
        owned(
            "db-password",
            json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                                    "name": "ray-head-cert-other", "uid": "other-cert"}),
        ),
        "is not one",
    );
    // A Secret cert-manager did not issue for that Certificate, though the Certificate names it.
    host.update(&secret_kind(), "ray-head-secret-raycluster-sample", |s| {
        s["metadata"]["annotations"] = json!({});
    });
    refused(
        owned("ray-head-secret-raycluster-sample", reference(&head)),
        "cert-manager did not issue it",
    );
    assert_eq!(
        secret(&host, "db-password")["metadata"].get("ownerReferences"),
        None
    );
    // KubeRay's write goes through, and what comes back has no keys in it.
    let worker = certificate(&host, "ray-worker-cert-raycluster-sample");
    let back = host
        .apply(&owned("ray-worker-secret-raycluster-sample", reference(&worker)))
        .unwrap();
    assert_eq!(back.get("data"), None, "{back}");
    assert_eq!(
        back["metadata"]["ownerReferences"][0]["uid"],
        worker["metadata"]["uid"]
    );
}
