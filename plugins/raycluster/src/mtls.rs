//! The certificates of `spec.tlsOptions.enabled` (KubeRay's RayClusterMTLS controller, gate
//! `RayClusterMTLS`): a self-signed Issuer, the cluster's CA Certificate, an Issuer signing with that CA, and
//! one Certificate for the head and one all workers share, every one controlled by the cluster (so they go
//! with it). The node certificates name their Pods' IPs and are updated as Pods come and go; Pods are only
//! created once both are issued at their current generation ([`ready_for_pods`]).
//!
//! As KubeRay does, each Secret cert-manager issues gets an owner reference to its Certificate (not a
//! controller one), so it goes with the cluster whether or not cert-manager runs with
//! `--enable-certificate-owner-ref`; that is the one write the host lets a plugin make to a Secret it does
//! not control, and what comes back has no keys in it. Readiness is the Certificate's `Ready` condition at
//! its current generation, which cert-manager sets only once the Secret holds the issued pair.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use k8s_openapi::{api::core::v1::Pod, apimachinery::pkg::apis::meta::v1::Time};
use kuberay_crds::constants::labels as label_keys;
use kuberay_plugin_sdk::{Event, Host, HostError, Kind};
use kuberay_rules::{
    labels, names,
    tls::{self, CERT_MANAGER_API_VERSION, Node},
};
use serde_json::{Value, json};

use crate::{
    consts::{APPLICATION_NAME, COMPONENT_NAME, action},
    context::{Ctx, Failure},
    pod_state,
};

/// KubeRay's event reasons of its mTLS controller.
pub mod reason {
    pub const PKI_READY: &str = "MTLSPKIReady";
    pub const CERTS_NOT_READY: &str = "MTLSCertsNotReady";
    pub const FAILED_TO_RECONCILE: &str = "MTLSFailedToReconcile";
    pub const CERTIFICATES_UPDATED: &str = "MTLSCertificatesUpdated";
    pub const CERTIFICATE_EXPIRING_SOON: &str = "MTLSCertificateExpiringSoon";
}

/// KubeRay's event action of its mTLS controller.
const RECONCILE: &str = "Reconcile";
/// How long Pods waiting for their certificates wait before the next look, unless a Certificate's change
/// (a watch event: it is a kind the plugin owns) comes first: KubeRay's mTLS controller's requeue.
const WAIT_REQUEUE: Duration = Duration::from_secs(30);
/// A certificate that expires sooner than this gets a Warning.
const EXPIRY_WARNING_SECONDS: i64 = 24 * 3600;
/// The message of a cluster that asks for TLS on an API server without cert-manager, as KubeRay words it.
pub const NOT_INSTALLED: &str = "tlsOptions requires cert-manager, but cert-manager is not installed";

/// cert-manager's Issuer.
pub fn issuer_kind() -> Kind {
    Kind::from_api_version(CERT_MANAGER_API_VERSION, "Issuer")
}

/// cert-manager's Certificate.
pub fn certificate_kind() -> Kind {
    Kind::from_api_version(CERT_MANAGER_API_VERSION, "Certificate")
}

/// Where the certificates stand after [`reconcile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pki {
    /// TLS is off for this cluster: nothing was read or written.
    Off,
    /// The API server does not serve cert-manager's kinds.
    NotInstalled,
    /// Both node certificates are issued at their current generation.
    Ready,
    /// cert-manager has not issued them yet.
    Waiting,
}

fn resource_labels(cluster: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), APPLICATION_NAME.to_string()),
        ("app.kubernetes.io/created-by".into(), COMPONENT_NAME.into()),
        ("app.kubernetes.io/component".into(), component.into()),
        (label_keys::RAY_CLUSTER.into(), cluster.into()),
    ])
}

fn issuer_ref(name: String) -> Value {
    json!({"name": name, "kind": "Issuer", "group": "cert-manager.io"})
}

fn object<H: Host>(ctx: &Ctx<'_, H>, kind: &str, name: String, component: &str, spec: Value) -> Value {
    json!({
        "apiVersion": CERT_MANAGER_API_VERSION,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": ctx.id.namespace,
            "labels": resource_labels(&ctx.id.name, component),
        },
        "spec": spec,
    })
}

/// Creates `desired` unless an object of its kind and name exists (its spec is fixed once made); returns
/// whether it wrote.
fn create_once<H: Host>(ctx: &Ctx<'_, H>, kind: &Kind, desired: &Value) -> Result<bool, HostError> {
    let name = desired["metadata"]["name"].as_str().unwrap_or_default();
    if ctx.host.get(kind, name)?.is_some() {
        return Ok(false);
    }
    match ctx.host.create(desired) {
        Ok(_) => {
            ctx.mark_written();
            Ok(true)
        }
        // Made meanwhile (a watch event behind): the next reconcile sees it.
        Err(HostError::Conflict(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The IPs of the cluster's running Pods of one node type, sorted, with `127.0.0.1` (KubeRay's
/// `normalizeIPs`).
fn pod_ips<H: Host>(ctx: &Ctx<'_, H>, node: Node) -> Result<Vec<String>, HostError> {
    let selector = match node {
        Node::Head => labels::head_pods(&ctx.id.name),
        Node::Worker => labels::worker_pods(&ctx.id.name),
    };
    let pods: Vec<Pod> = ctx.pods(&selector)?;
    let mut ips: BTreeSet<String> = pods
        .iter()
        .filter(|p| !pod_state::terminating(p))
        .filter_map(|p| p.status.as_ref())
        .filter(|s| !matches!(s.phase.as_deref(), Some("Succeeded" | "Failed")))
        .filter_map(|s| s.pod_ip.clone())
        .filter(|ip| !ip.is_empty())
        .collect();
    ips.insert("127.0.0.1".into());
    Ok(ips.into_iter().collect())
}

fn node_certificate<H: Host>(ctx: &Ctx<'_, H>, node: Node, ips: &[String]) -> Value {
    let mut dns: Vec<String> = vec!["localhost".into()];
    if node == Node::Head {
        let spec = &ctx.cluster.spec;
        dns.push(names::head_fqdn(
            &ctx.id.name,
            &ctx.id.namespace,
            spec,
            &ctx.id.cluster_domain,
        ));
    }
    dns.sort();
    dns.dedup();
    object(
        ctx,
        "Certificate",
        tls::certificate_name(&ctx.id.name, node),
        &format!("{}-certificate", node.name()),
        json!({
            "secretName": tls::secret_name(&ctx.id.name, node),
            "duration": "2160h0m0s",
            "renewBefore": "360h0m0s",
            "dnsNames": dns,
            "ipAddresses": ips,
            "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
            "issuerRef": issuer_ref(tls::ca_issuer_name(&ctx.id.name)),
        }),
    )
}

/// KubeRay's `certificateNeedsUpdate` and its label comparison: a label of ours is missing or different, or
/// the DNS names or IP addresses differ as sets. (KubeRay replaces the labels; a server-side apply leaves other
/// managers' labels alone, so only ours are compared.)
fn needs_update(existing: &Value, desired: &Value) -> bool {
    let ours = desired["metadata"]["labels"].as_object().into_iter().flatten();
    let labels_differ = ours
        .into_iter()
        .any(|(k, v)| existing["metadata"]["labels"][k] != *v);
    let set = |v: &Value, field: &str| -> BTreeSet<String> {
        v["spec"][field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    labels_differ
        || ["dnsNames", "ipAddresses"]
            .into_iter()
            .any(|field| set(existing, field) != set(desired, field))
}

/// Creates a node's Certificate, or applies the desired one where its labels or names changed; returns
/// whether it wrote.
fn node_step<H: Host>(ctx: &Ctx<'_, H>, node: Node) -> Result<bool, HostError> {
    let ips = pod_ips(ctx, node)?;
    let desired = node_certificate(ctx, node, &ips);
    let name = tls::certificate_name(&ctx.id.name, node);
    let Some(existing) = ctx.host.get(&certificate_kind(), &name)? else {
        return create_once(ctx, &certificate_kind(), &desired);
    };
    if !needs_update(&existing, &desired) {
        return Ok(false);
    }
    ctx.host.apply(&desired)?;
    ctx.mark_written();
    ctx.event(Event::normal(
        reason::CERTIFICATES_UPDATED,
        action::UPDATE,
        format!(
            "Updated {} certificate SANs (IPs: [{}])",
            node.name(),
            ips.join(" ")
        ),
    ));
    Ok(true)
}

fn ca_certificate<H: Host>(ctx: &Ctx<'_, H>) -> Value {
    let name = &ctx.id.name;
    object(
        ctx,
        "Certificate",
        tls::ca_certificate_name(name),
        "ca-certificate",
        json!({
            "secretName": tls::ca_secret_name(name, &ctx.id.uid),
            "isCA": true,
            "commonName": format!("ray-ca-{name}"),
            "privateKey": {"algorithm": "RSA", "size": 4096},
            "duration": "87600h0m0s",
            "renewBefore": "720h0m0s",
            "usages": ["cert sign", "crl sign"],
            "issuerRef": issuer_ref(tls::self_signed_issuer_name(name)),
        }),
    )
}

/// KubeRay's steps, in its order, each with the name its failure Event gives it; returns whether one wrote.
fn steps<H: Host>(ctx: &Ctx<'_, H>) -> Result<bool, (&'static str, HostError)> {
    let name = &ctx.id.name;
    let self_signed = object(
        ctx,
        "Issuer",
        tls::self_signed_issuer_name(name),
        "selfsigned-issuer",
        json!({"selfSigned": {}}),
    );
    let mut wrote = create_once(ctx, &issuer_kind(), &self_signed).map_err(|e| ("self-signed issuer", e))?;
    wrote |=
        create_once(ctx, &certificate_kind(), &ca_certificate(ctx)).map_err(|e| ("CA certificate", e))?;
    // KubeRay adds the owner reference within each Certificate's step, and reports its failure under that name.
    own_secret(ctx, &tls::ca_certificate_name(name)).map_err(|e| ("CA certificate", e))?;
    let ca = json!({"ca": {"secretName": tls::ca_secret_name(name, &ctx.id.uid)}});
    let ca_issuer = object(ctx, "Issuer", tls::ca_issuer_name(name), "ca-issuer", ca);
    wrote |= create_once(ctx, &issuer_kind(), &ca_issuer).map_err(|e| ("CA issuer", e))?;
    for (node, step) in [
        (Node::Head, "head certificate"),
        (Node::Worker, "worker certificate"),
    ] {
        wrote |= node_step(ctx, node).map_err(|e| (step, e))?;
        own_secret(ctx, &tls::certificate_name(name, node)).map_err(|e| (step, e))?;
    }
    Ok(wrote)
}

/// KubeRay's `ensureSecretOwnedByCertificate`: the Secret the Certificate `certificate` was issued into gets
/// an owner reference to it (no controller), so the Secret goes when the Certificate does. Nothing to do
/// before the Certificate is stored or cert-manager has made its Secret; the host skips a reference that is
/// already there.
fn own_secret<H: Host>(ctx: &Ctx<'_, H>, certificate: &str) -> Result<(), HostError> {
    let Some(found) = ctx.host.get(&certificate_kind(), certificate)? else {
        return Ok(());
    };
    let (Some(uid), Some(secret)) = (
        found["metadata"]["uid"].as_str(),
        found["spec"]["secretName"].as_str(),
    ) else {
        return Ok(());
    };
    let reference = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret,
            "namespace": ctx.id.namespace,
            "ownerReferences": [{
                "apiVersion": CERT_MANAGER_API_VERSION,
                "kind": "Certificate",
                "name": certificate,
                "uid": uid,
            }],
        },
    });
    match ctx.host.apply(&reference) {
        Ok(_) | Err(HostError::NotFound(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// KubeRay's `isCertificateReady`: `Ready=True` observed at the Certificate's current generation.
fn issued(certificate: &Value) -> bool {
    let generation = certificate["metadata"]["generation"].as_i64();
    certificate["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .is_some_and(|c| c["status"] == "True" && c["observedGeneration"].as_i64() == generation)
}

/// The first node certificate that is not issued at its current generation, with KubeRay's reason.
fn not_issued<H: Host>(ctx: &Ctx<'_, H>) -> Result<Option<String>, HostError> {
    for node in [Node::Head, Node::Worker] {
        let name = tls::certificate_name(&ctx.id.name, node);
        match ctx.host.get(&certificate_kind(), &name)? {
            None => return Ok(Some(format!("certificate {name} not found"))),
            Some(c) if !issued(&c) => {
                let generation = c["metadata"]["generation"].as_i64().unwrap_or_default();
                return Ok(Some(format!(
                    "certificate {name} is not ready at current generation {generation}"
                )));
            }
            Some(_) => {}
        }
    }
    Ok(None)
}

/// Warns about a certificate that expires within a day (Ray reads its files once, at start).
fn warn_expiring<H: Host>(ctx: &Ctx<'_, H>) {
    let name = &ctx.id.name;
    let now = kuberay_rules::time::now_seconds(ctx.host);
    let names = [
        tls::certificate_name(name, Node::Head),
        tls::certificate_name(name, Node::Worker),
        tls::ca_certificate_name(name),
    ];
    for certificate in names {
        let Ok(Some(object)) = ctx.host.get(&certificate_kind(), &certificate) else {
            continue;
        };
        let Ok(not_after) = serde_json::from_value::<Time>(object["status"]["notAfter"].clone()) else {
            continue;
        };
        let remaining = kuberay_rules::time::seconds(&not_after) - now;
        if remaining < EXPIRY_WARNING_SECONDS {
            #[allow(
                clippy::cast_precision_loss,
                reason = "hours of a certificate's life, printed to one decimal"
            )]
            let hours = remaining as f64 / 3600.0;
            ctx.event(Event::warning(
                reason::CERTIFICATE_EXPIRING_SOON,
                RECONCILE,
                format!(
                    "TLS certificate {certificate} expires in {hours:.1} hours; Ray does not hot-reload certs so a \
                     pod restart will be needed after renewal"
                ),
            ));
        }
    }
}

/// Keeps the cluster's issuers and certificates as KubeRay's mTLS controller does and says whether the
/// node certificates are issued. A failed step is recorded as `MTLSFailedToReconcile` and returned.
pub fn reconcile<H: Host>(ctx: &Ctx<'_, H>) -> Result<Pki, Failure> {
    if !tls::enabled(&ctx.cluster.spec, ctx.id.gates.mtls) {
        return Ok(Pki::Off);
    }
    let wrote = match steps(ctx) {
        Ok(wrote) => wrote,
        // The first step reads an Issuer: NotFound is the API server not serving cert-manager's kinds (an
        // object that does not exist is `None`).
        Err(("self-signed issuer", HostError::NotFound(_))) => return Ok(Pki::NotInstalled),
        Err((step, e)) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_RECONCILE,
                RECONCILE,
                format!("Failed to reconcile mTLS {step}: {}", e.message()),
            ));
            return Err(e.into());
        }
    };
    if not_issued(ctx)?.is_some() {
        ctx.event(Event::normal(
            reason::CERTS_NOT_READY,
            RECONCILE,
            "Waiting for cert-manager to issue mTLS certificates".to_string(),
        ));
        return Ok(Pki::Waiting);
    }
    // KubeRay records this on every pass of its controller (once a minute); here when it becomes true: the
    // certificates were just written, or no head Pod exists yet (the cluster is about to start).
    if wrote || ctx.pods(&labels::head_pods(&ctx.id.name))?.is_empty() {
        ctx.event(Event::normal(
            reason::PKI_READY,
            RECONCILE,
            "mTLS PKI is ready: CA, head, and worker certificates issued".to_string(),
        ));
    }
    warn_expiring(ctx);
    Ok(Pki::Ready)
}

/// KubeRay's `checkMTLSSecretsReady` before a Pod is created: with TLS on, both node certificates must be
/// issued at their current generation (a Pod must not start with a certificate about to be replaced).
pub fn ready_for_pods<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    if !tls::enabled(&ctx.cluster.spec, ctx.id.gates.mtls) {
        return Ok(());
    }
    let wait = |why: &str| Failure::wait(format!("mTLS secrets not ready: {why}"), WAIT_REQUEUE);
    match not_issued(ctx) {
        Ok(None) => Ok(()),
        Ok(Some(why)) => Err(wait(&why)),
        Err(HostError::NotFound(_)) => Err(wait(NOT_INSTALLED)),
        Err(e) => Err(e.into()),
    }
}
