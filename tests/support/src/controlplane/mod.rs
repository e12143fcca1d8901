//! The real Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager, built from their Go
//! modules by `tests/cluster/build.sh` and started on free loopback ports with freshly generated credentials,
//! and cert-manager (`cert_manager`).

mod audit;
mod cert_manager;
mod identities;
mod pki;
pub(crate) mod ports;
pub(crate) mod process;

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

pub use audit::AUDIT_GROUPS_ENV;
pub(crate) use identities::random_token;
pub use identities::{Identities, Identity, write_kubeconfig, write_kubeconfig_via};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::{Api, Client};
pub(crate) use pki::{Authority, write as write_file};
pub use pki::{KUBELET_CLIENT_CN, KUBERNETES_SERVICE_IP, Pki};
use tokio::process::Command;

use self::{ports::free_port, process::ManagedProcess};
use crate::{
    error::{Error, Result},
    paths::Layout,
};

/// The service CIDR; the pod network is chosen elsewhere and never overlaps it.
pub const SERVICE_CIDR: &str = "10.96.0.0/16";

/// Controllers kube-controller-manager runs: what the operator's behaviour depends on (ownerReference garbage
/// collection, Endpoints/EndpointSlices behind Services and the proxy subresource, namespace deletion,
/// service accounts and their tokens and the `kube-root-ca.crt` ConfigMap their projected volumes read, batch
/// Jobs, Deployments and ReplicaSets (the operator's own Deployment) and nothing that needs a real kubelet.
pub const CONTROLLERS: &[&str] = &[
    "garbage-collector-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "job-controller",
    "deployment-controller",
    "replicaset-controller",
    "ttl-after-finished-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
];

pub struct ControlPlane {
    server: String,
    pki: Pki,
    identities: Identities,
    kubeconfig_dir: PathBuf,
    etcd: Option<ManagedProcess>,
    apiserver: Option<ManagedProcess>,
    controller_manager: Option<ManagedProcess>,
    cert_manager: Option<ManagedProcess>,
    audit_log: Option<PathBuf>,
}

impl ControlPlane {
    /// Starts etcd, the API server and the controller manager, and returns once the API server is ready and
    /// the controller manager has created the `default` ServiceAccount (so Pods can be admitted).
    /// `extra_addresses` are more addresses the API server's certificate must be valid for (where Pods
    /// reach it).
    pub async fn start(
        layout: &Layout,
        dir: &Path,
        node_name: &str,
        extra_addresses: &[String],
        timeout: Duration,
    ) -> Result<Self> {
        let etcd_bin = layout.binary("etcd")?;
        let apiserver_bin = layout.binary("kube-apiserver")?;
        let controller_manager_bin = layout.binary("kube-controller-manager")?;
        let deadline = Instant::now() + timeout;

        let pki = Pki::generate(&dir.join("pki"), extra_addresses)?;
        let identities = Identities::generate(node_name)?;
        let token_file = dir.join("pki/tokens.csv");
        identities.write_token_file(&token_file)?;
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).map_err(Error::io("creating the log directory"))?;

        let (client_port, peer_port, api_port) = (free_port()?, free_port()?, free_port()?);
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let mut etcd = Command::new(etcd_bin);
        etcd.args([
            "--name=testenv".to_string(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-cluster=testenv=http://127.0.0.1:{peer_port}"),
            "--log-level=warn".to_string(),
            // A test environment is thrown away on exit; fsync only slows it down.
            "--unsafe-no-fsync=true".to_string(),
        ]);
        let etcd = ManagedProcess::spawn("etcd", etcd, &logs.join("etcd.log"))?;

        let mut apiserver = Command::new(apiserver_bin);
        apiserver.args([
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            format!("--secure-port={api_port}"),
            format!("--cert-dir={}", dir.join("apiserver-certs").display()),
            format!("--tls-cert-file={}", pki.serving_cert.display()),
            format!("--tls-private-key-file={}", pki.serving_key.display()),
            format!("--client-ca-file={}", pki.ca_cert.display()),
            format!("--token-auth-file={}", token_file.display()),
            "--authorization-mode=Node,RBAC".to_string(),
            "--enable-admission-plugins=NodeRestriction".to_string(),
            format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
            format!("--service-account-key-file={}", pki.service_account_pub.display()),
            format!(
                "--service-account-signing-key-file={}",
                pki.service_account_key.display()
            ),
            // The `kubernetes` Service would point at 127.0.0.1, which Endpoints reject.
            "--endpoint-reconciler-type=none".to_string(),
            // `pods/exec` reaches the simulated kubelet's streaming endpoint at the Node's address and port.
            format!(
                "--kubelet-client-certificate={}",
                pki.kubelet_client_cert.display()
            ),
            format!("--kubelet-client-key={}", pki.kubelet_client_key.display()),
            format!("--kubelet-certificate-authority={}", pki.ca_cert.display()),
            "--kubelet-preferred-address-types=InternalIP".to_string(),
            "--allow-privileged=true".to_string(),
            "--profiling=false".to_string(),
            "--v=1".to_string(),
        ]);
        let audit = audit::from_env(dir)?;
        if let Some((_, flags)) = &audit {
            apiserver.args(flags);
        }
        let apiserver = ManagedProcess::spawn("kube-apiserver", apiserver, &logs.join("kube-apiserver.log"))?;

        let server = format!("https://127.0.0.1:{api_port}");
        let kubeconfig_dir = dir.join("kubeconfigs");
        std::fs::create_dir_all(&kubeconfig_dir).map_err(Error::io("creating the kubeconfig directory"))?;
        for id in [
            &identities.admin,
            &identities.alice,
            &identities.bob,
            &identities.controller_manager,
            &identities.scheduler,
            &identities.kubelet,
            &identities.proxy,
        ] {
            write_kubeconfig(
                &kubeconfig_path(&kubeconfig_dir, &id.user),
                &server,
                &pki.ca_cert,
                id,
            )?;
        }

        let mut plane = Self {
            server,
            pki,
            identities,
            kubeconfig_dir,
            etcd: Some(etcd),
            apiserver: Some(apiserver),
            controller_manager: None,
            cert_manager: None,
            audit_log: audit.map(|(log, _)| log),
        };
        let admin = plane.client("admin").await?;
        plane.wait_for_apiserver(&admin, deadline, timeout).await?;

        let cm_kubeconfig = plane.kubeconfig(&plane.identities.controller_manager.user);
        let mut controller_manager = Command::new(controller_manager_bin);
        controller_manager.args([
            format!("--kubeconfig={}", cm_kubeconfig.display()),
            format!("--authentication-kubeconfig={}", cm_kubeconfig.display()),
            format!("--authorization-kubeconfig={}", cm_kubeconfig.display()),
            format!("--controllers={}", CONTROLLERS.join(",")),
            // Each controller acts as its own ServiceAccount with the bootstrap RBAC roles, as in a real cluster.
            "--use-service-account-credentials=true".to_string(),
            format!(
                "--service-account-private-key-file={}",
                plane.pki.service_account_key.display()
            ),
            format!("--root-ca-file={}", plane.pki.ca_cert.display()),
            format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            "--leader-elect=false".to_string(),
            // The default client limit (20 requests/s) makes the garbage collector, which deletes each Pod a
            // deleted RayCluster owned with a GET and a DELETE, take about 7 minutes for 1,000 clusters.
            "--kube-api-qps=200".to_string(),
            "--kube-api-burst=400".to_string(),
            "--bind-address=127.0.0.1".to_string(),
            format!("--secure-port={}", free_port()?),
            format!("--cert-dir={}", dir.join("controller-manager-certs").display()),
            "--profiling=false".to_string(),
            "--v=1".to_string(),
        ]);
        plane.controller_manager = Some(ManagedProcess::spawn(
            "kube-controller-manager",
            controller_manager,
            &logs.join("kube-controller-manager.log"),
        )?);
        let admin_kubeconfig = plane.kubeconfig("admin");
        plane.cert_manager = Some(cert_manager::start(layout, &admin, &admin_kubeconfig, &logs).await?);
        plane
            .wait_for_controller_manager(&admin, deadline, timeout)
            .await?;
        Ok(plane)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The generated certificates and keys.
    pub fn pki(&self) -> &Pki {
        &self.pki
    }

    pub fn ca_cert(&self) -> &Path {
        &self.pki.ca_cert
    }

    /// The audit log, when `KUBERAY_TESTENV_AUDIT_GROUPS` turned it on (see [`AUDIT_GROUPS_ENV`]).
    pub fn audit_log(&self) -> Option<&Path> {
        self.audit_log.as_deref()
    }

    pub fn identities(&self) -> &Identities {
        &self.identities
    }

    /// The kubeconfig that authenticates as `user` (a short name such as `admin` or a full user name).
    pub fn kubeconfig(&self, user: &str) -> PathBuf {
        let user = self.identities.by_name(user).map_or(user, |i| i.user.as_str());
        kubeconfig_path(&self.kubeconfig_dir, user)
    }

    pub async fn client(&self, user: &str) -> Result<Client> {
        client_from_kubeconfig(&self.kubeconfig(user)).await
    }

    /// Pids of every process the control plane runs, for leftover checks.
    pub fn pids(&self) -> Vec<u32> {
        [
            &self.etcd,
            &self.apiserver,
            &self.controller_manager,
            &self.cert_manager,
        ]
        .into_iter()
        .flatten()
        .filter_map(ManagedProcess::pid)
        .collect()
    }

    /// An error naming the first component that has exited.
    pub fn check_running(&mut self) -> Result<()> {
        for p in [
            &mut self.etcd,
            &mut self.apiserver,
            &mut self.controller_manager,
            &mut self.cert_manager,
        ]
        .into_iter()
        .flatten()
        {
            p.check_running()?;
        }
        Ok(())
    }

    /// Stops the components in reverse dependency order.
    pub async fn stop(mut self) {
        for p in [
            self.cert_manager.take(),
            self.controller_manager.take(),
            self.apiserver.take(),
            self.etcd.take(),
        ]
        .into_iter()
        .flatten()
        {
            p.stop(Duration::from_secs(10)).await;
        }
    }

    async fn wait_for_apiserver(
        &mut self,
        admin: &Client,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<()> {
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            self.check_running()?;
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| Error::Other(e.to_string()));
            match admin.request_text(request?).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => last = body,
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(Error::NotReady {
            component: "kube-apiserver".into(),
            seconds: timeout.as_secs(),
            detail: last,
        })
    }

    async fn wait_for_controller_manager(
        &mut self,
        admin: &Client,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<()> {
        let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
        let mut last = String::from("the `default` ServiceAccount does not exist yet");
        while Instant::now() < deadline {
            self.check_running()?;
            match accounts.get_opt("default").await {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => {}
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(Error::NotReady {
            component: "kube-controller-manager".into(),
            seconds: timeout.as_secs(),
            detail: last,
        })
    }
}

fn kubeconfig_path(dir: &Path, user: &str) -> PathBuf {
    dir.join(format!("{}.kubeconfig", user.replace(':', "_")))
}

/// A client for the cluster a kubeconfig file describes, without automatic retries.
pub async fn client_from_kubeconfig(path: &Path) -> Result<Client> {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig(e.to_string()))?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| Error::Kubeconfig(e.to_string()))?;
    // Tests must see exactly what the API server answers; kube's default retries turn a proxied 503 into
    // minutes of backoff.
    config.default_retry = false;
    Ok(Client::try_from(config)?)
}
