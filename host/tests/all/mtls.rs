//! `tlsOptions` with KubeRay's RayClusterMTLS gate, against the real cert-manager the test environment runs:
//! KubeRay's sample `ray-cluster.mtls.yaml`, applied unchanged, gets KubeRay's Issuers and Certificates, which
//! cert-manager issues; its Pods mount their node's Secret and are named in their certificate (checked in the
//! issued X.509 certificate itself); deleting the cluster takes the PKI, Secrets included, with it.

use std::time::Duration;

use k8s_openapi::{api::core::v1::Secret, api::events::v1::Event};
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams},
};
use serde_json::Value;
use x509_parser::{extensions::GeneralName, pem::parse_x509_pem};

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, pods, rayclusters, ready_cluster, sample,
    start_operator,
};

const CLUSTER: &str = "raycluster-mtls";

fn cert_manager(client: &kube::Client, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "cert-manager.io".into(),
        version: "v1".into(),
        api_version: "cert-manager.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::namespaced_with(client.clone(), ns, &resource)
}

fn value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap()
}

/// The IP addresses named in the X.509 certificate of a Secret's `tls.crt`.
fn issued_ips(secret: &Secret) -> Vec<String> {
    let pem = &secret.data.as_ref().unwrap()["tls.crt"].0;
    let (_, pem) = parse_x509_pem(pem).unwrap();
    let certificate = pem.parse_x509().unwrap();
    let names = certificate.subject_alternative_name().unwrap().unwrap();
    names
        .value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::IPAddress(bytes) if bytes.len() == 4 => {
                Some(std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string())
            }
            _ => None,
        })
        .collect()
}

fn pod_ip(pod: &k8s_openapi::api::core::v1::Pod) -> String {
    pod.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap()
}

#[tokio::test]
async fn kuberays_mtls_sample_gets_certificates_cert_manager_issues_for_its_pods() {
    let env = env().await;
    let ns = namespace(env, "mtls").await;
    let client = env.client().await.unwrap();
    let _operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            feature_gates: Some(
                kuberay_wasm::kuberay_flags::FeatureGates::parse("RayClusterMTLS=true").unwrap(),
            ),
            ..OperatorOptions::default()
        },
    )
    .await;
    apply_manifest(&client, &ns, &sample("ray-cluster.mtls.yaml")).await;
    let cluster = ready_cluster(&client, &ns, CLUSTER).await;
    let uid = cluster["metadata"]["uid"].as_str().unwrap().to_string();

    let issuers = cert_manager(&client, ns.name(), "Issuer", "issuers");
    let mut names: Vec<String> = issuers
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|i| i.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ray-ca-issuer-raycluster-mtls",
            "ray-selfsigned-issuer-raycluster-mtls"
        ]
    );
    let certificates = cert_manager(&client, ns.name(), "Certificate", "certificates");
    for name in [
        "ray-ca-certificate-raycluster-mtls",
        "ray-head-cert-raycluster-mtls",
        "ray-worker-cert-raycluster-mtls",
    ] {
        let certificate = value(&certificates.get(name).await.unwrap());
        let owner = &certificate["metadata"]["ownerReferences"][0];
        assert_eq!(
            (owner["uid"].as_str(), owner["controller"].as_bool()),
            (Some(uid.as_str()), Some(true))
        );
    }
    let ca = value(
        &certificates
            .get("ray-ca-certificate-raycluster-mtls")
            .await
            .unwrap(),
    );
    assert_eq!(
        ca["spec"]["secretName"],
        format!("{CLUSTER}-ca-secret-{}", &uid[..8])
    );

    // Each node's certificate names its Pods' IPs once cert-manager has reissued it, in the X.509 certificate
    // the Pods mount.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    for (node, selector) in [
        ("head", "ray.io/node-type=head"),
        ("worker", "ray.io/node-type=worker"),
    ] {
        let running = pods(&client, &ns, &format!("ray.io/cluster={CLUSTER},{selector}")).await;
        assert_eq!(running.len(), 1, "{node} Pods");
        let ip = pod_ip(&running[0]);
        let secret_name = format!("ray-{node}-secret-{CLUSTER}");
        let spec = running[0].spec.as_ref().unwrap();
        let volume = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "ray-tls")
            .unwrap();
        assert_eq!(
            volume.secret.as_ref().unwrap().secret_name.as_deref(),
            Some(secret_name.as_str())
        );
        assert_eq!(
            spec.init_containers.as_ref().unwrap()[0].name,
            "wait-for-tls-ip-san"
        );
        let secret = eventually(
            &format!("the {node} certificate to name {ip}"),
            Duration::from_secs(60),
            || async {
                let secret = secrets.get(&secret_name).await.ok()?;
                issued_ips(&secret).contains(&ip).then_some(secret)
            },
        )
        .await;
        let keys: Vec<&String> = secret.data.as_ref().unwrap().keys().collect();
        assert_eq!(keys, ["ca.crt", "tls.crt", "tls.key"]);
        let certificate = value(
            &certificates
                .get(&format!("ray-{node}-cert-{CLUSTER}"))
                .await
                .unwrap(),
        );
        let ips: Vec<&str> = certificate["spec"]["ipAddresses"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut expected = vec![ip.as_str(), "127.0.0.1"];
        expected.sort_unstable();
        assert_eq!(ips, expected, "{node} certificate");
    }

    // Each issued Secret has KubeRay's owner reference to its Certificate (cert-manager here runs without
    // `--enable-certificate-owner-ref`, so it is the operator's): not a controller reference.
    for certificate in [
        "ray-ca-certificate-raycluster-mtls".to_string(),
        format!("ray-head-cert-{CLUSTER}"),
        format!("ray-worker-cert-{CLUSTER}"),
    ] {
        let issued = value(&certificates.get(&certificate).await.unwrap());
        let secret_name = issued["spec"]["secretName"].as_str().unwrap().to_string();
        let expected = (
            issued["metadata"]["uid"].as_str().map(str::to_string),
            Some(certificate.clone()),
        );
        let owner = eventually(
            &format!("Secret {secret_name} to be owned by Certificate {certificate}"),
            Duration::from_secs(30),
            || async {
                let secret = serde_json::to_value(secrets.get(&secret_name).await.ok()?).ok()?;
                let refs = secret["metadata"]["ownerReferences"].as_array()?.clone();
                refs.into_iter().find(|r| {
                    (
                        r["uid"].as_str().map(str::to_string),
                        r["name"].as_str().map(str::to_string),
                    ) == expected
                })
            },
        )
        .await;
        assert_eq!(owner["kind"], "Certificate");
        assert_eq!(owner["apiVersion"], "cert-manager.io/v1");
        assert_ne!(owner["controller"], true, "{owner}");
    }

    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    eventually("the MTLSPKIReady event", Duration::from_secs(30), || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("MTLSPKIReady"))
            .then_some(())
    })
    .await;

    // The PKI goes with the cluster: Issuers and Certificates by their owner reference to it, the Secrets by
    // theirs to their Certificate.
    rayclusters(&client, &ns)
        .delete(CLUSTER, &DeleteParams::background())
        .await
        .unwrap();
    eventually("the PKI to be collected", Duration::from_secs(60), || async {
        let left = issuers.list(&ListParams::default()).await.ok()?.items.len()
            + certificates.list(&ListParams::default()).await.ok()?.items.len()
            + secrets
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .iter()
                .filter(|s| s.metadata.name.as_deref().is_some_and(|n| n.contains(CLUSTER)))
                .count();
        (left == 0).then_some(())
    })
    .await;
}
