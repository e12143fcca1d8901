//! cert-manager in the control plane: its CRDs (`.local/cert-manager-crds`) installed and its controllers
//! (`.local/bin/cert-manager-controller`, both made by `tests/cert-manager/build.sh`, part of `make
//! control-plane`) running as the admin, as a cluster with cert-manager installed has them. They issue the
//! certificates of RayClusters with `tlsOptions` (KubeRay's RayClusterMTLS gate): self-signed and CA Issuers,
//! key pairs in Secrets, `Ready` conditions. It runs with cert-manager's default
//! `--enable-certificate-owner-ref=false`, so an issued Secret's owner reference to its Certificate is the
//! operator's (KubeRay's and ours add it).

use std::path::Path;

use kube::Client;
use tokio::process::Command;

use super::process::ManagedProcess;
use crate::{
    crds,
    error::{Error, Result},
    paths::Layout,
};

/// Installs the CRDs and starts the controllers with the kubeconfig `admin`.
pub(super) async fn start(
    layout: &Layout,
    admin: &Client,
    kubeconfig: &Path,
    logs: &Path,
) -> Result<ManagedProcess> {
    let binary = layout.binary("cert-manager-controller")?;
    let dir = layout.cert_manager_crds_dir();
    if !dir.is_dir() {
        return Err(Error::Other(format!(
            "cert-manager's CRDs are not in {}; run `make control-plane` (tests/cert-manager/build.sh)",
            dir.display()
        )));
    }
    crds::install(admin, &dir).await?;
    let mut command = Command::new(binary);
    command.args([
        format!("--kubeconfig={}", kubeconfig.display()),
        "--enable-certificate-owner-ref=false".to_string(),
        "--v=1".to_string(),
    ]);
    ManagedProcess::spawn("cert-manager", command, &logs.join("cert-manager.log"))
}
