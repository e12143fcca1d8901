//! The kinds of KubeRay's optional integrations (a batch scheduler's PodGroups, the NetworkPolicies of the
//! RayClusterNetworkPolicy gate, the embedded GCS store's claims of the GCSFaultToleranceEmbeddedStorage gate,
//! cert-manager's Issuers and Certificates of the RayClusterMTLS gate):
//! taken out of the policy when the operator was not started with them (so it
//! neither watches them nor needs their rights, as KubeRay's controllers do not own them then), and checked to
//! be served at start when it was. KubeRay's operator fails at start the same way (its controllers cannot watch a
//! kind the API server lacks); here the message says what to install.

use kube::{Client, api::GroupVersionKind, discovery::pinned_kind};
use kuberay_plugin_sdk::Kind;
use kuberay_rules::batch_scheduler::{BatchScheduler, scheduler_plugins, volcano};

use super::{OperatorConfig, OperatorError};

/// The gate whose NetworkPolicies the RayCluster plugin writes.
const NETWORK_POLICY_GATE: &str = "RayClusterNetworkPolicy";
/// The gate whose PersistentVolumeClaims the RayCluster plugin writes.
const EMBEDDED_STORAGE_GATE: &str = "GCSFaultToleranceEmbeddedStorage";
/// The gate whose cert-manager Issuers and Certificates the RayCluster plugin writes. Unlike the others, the
/// operator starts without cert-manager, as KubeRay's does: a cluster asking for TLS is then refused with
/// KubeRay's message (the plugin finds the kinds unserved).
const MTLS_GATE: &str = "RayClusterMTLS";

/// The PodGroup kind `scheduler` writes, if it writes one (YuniKorn and KAI only label Pods).
pub(crate) fn pod_group_kind(scheduler: BatchScheduler) -> Option<Kind> {
    match scheduler {
        BatchScheduler::Volcano => Some(volcano::kind()),
        BatchScheduler::SchedulerPlugins => Some(scheduler_plugins::kind()),
        BatchScheduler::YuniKorn | BatchScheduler::KaiScheduler => None,
    }
}

/// The policy kinds of the integrations `config` does not run with.
pub(crate) fn unused_kinds(config: &OperatorConfig) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = BatchScheduler::ALL
        .into_iter()
        .filter(|s| config.batch_scheduler != Some(*s))
        .filter_map(pod_group_kind)
        .collect();
    if !config.feature_gates.enabled(NETWORK_POLICY_GATE) {
        kinds.push(Kind::new("networking.k8s.io", "v1", "NetworkPolicy"));
    }
    if !config.feature_gates.enabled(EMBEDDED_STORAGE_GATE) {
        kinds.push(Kind::new("", "v1", "PersistentVolumeClaim"));
    }
    if !config.feature_gates.enabled(MTLS_GATE) {
        kinds.push(Kind::new("cert-manager.io", "v1", "Issuer"));
        kinds.push(Kind::new("cert-manager.io", "v1", "Certificate"));
    }
    kinds
}

/// Fails unless the API server serves the PodGroups of `scheduler`, if it has any.
pub(crate) async fn batch_scheduler_served(
    client: &Client,
    scheduler: BatchScheduler,
) -> Result<(), OperatorError> {
    let Some(kind) = pod_group_kind(scheduler) else {
        return Ok(());
    };
    let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
    pinned_kind(client, &gvk).await.map(drop).map_err(|e| {
        OperatorError::Start(format!(
            "--batch-scheduler={name} needs the API server to serve {}/{} PodGroup (install {name}'s CRDs \
             first): {e}",
            kind.group,
            kind.version,
            name = scheduler.name(),
        ))
    })
}

#[cfg(test)]
mod tests {
    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt},
        net::TcpListener,
    };

    use super::*;

    /// An API server that knows no API group: every request gets a 404 Status.
    async fn empty_api_server() -> Client {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf).await;
                    let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}"#;
                    let response = format!(
                        "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
        Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn a_scheduler_whose_podgroups_are_not_served_stops_the_start() {
        let client = empty_api_server().await;
        for scheduler in [BatchScheduler::Volcano, BatchScheduler::SchedulerPlugins] {
            let error = batch_scheduler_served(&client, scheduler)
                .await
                .unwrap_err()
                .to_string();
            let name = scheduler.name();
            assert!(
                error.contains(&format!("--batch-scheduler={name} needs")),
                "{error}"
            );
            assert!(error.contains("PodGroup"), "{error}");
        }
        for scheduler in [BatchScheduler::YuniKorn, BatchScheduler::KaiScheduler] {
            assert!(
                batch_scheduler_served(&client, scheduler).await.is_ok(),
                "{scheduler:?}"
            );
        }
    }

    #[test]
    fn the_kinds_of_integrations_not_started_are_unused() {
        let mut config = OperatorConfig::new("/plugins");
        let volcano = volcano::kind();
        let plugins = scheduler_plugins::kind();
        let network_policy = Kind::new("networking.k8s.io", "v1", "NetworkPolicy");
        let claim = Kind::new("", "v1", "PersistentVolumeClaim");
        let issuer = Kind::new("cert-manager.io", "v1", "Issuer");
        let certificate = Kind::new("cert-manager.io", "v1", "Certificate");
        let pki = [issuer, certificate];
        let with_pki = |kinds: &[&Kind]| -> Vec<Kind> {
            kinds
                .iter()
                .copied()
                .cloned()
                .chain(pki.iter().cloned())
                .collect()
        };
        assert_eq!(
            unused_kinds(&config),
            with_pki(&[&volcano, &plugins, &network_policy, &claim])
        );
        config.batch_scheduler = Some(BatchScheduler::Volcano);
        assert_eq!(
            unused_kinds(&config),
            with_pki(&[&plugins, &network_policy, &claim])
        );
        config.batch_scheduler = Some(BatchScheduler::YuniKorn);
        config.feature_gates =
            crate::kuberay_flags::FeatureGates::parse("RayClusterNetworkPolicy=true").unwrap();
        assert_eq!(unused_kinds(&config), with_pki(&[&volcano, &plugins, &claim]));
        config.feature_gates = crate::kuberay_flags::FeatureGates::parse(
            "RayClusterNetworkPolicy=true,GCSFaultToleranceEmbeddedStorage=true,RayClusterMTLS=true",
        )
        .unwrap();
        assert_eq!(unused_kinds(&config), [volcano, plugins]);
    }
}
