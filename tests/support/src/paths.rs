//! Where the project keeps the things tests need: the control-plane binaries built from `tests/cluster`
//! and the Python virtualenv with Ray, both under the git-ignored `.local/` folder of the checkout.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The checkout's `.local/` layout.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The checkout this crate was compiled from, unless `KUBERAY_WASM_ROOT` names another one.
    pub fn discover() -> Self {
        let root = std::env::var_os("KUBERAY_WASM_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../..")
                    .canonicalize()
                    .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            });
        Self { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn local_dir(&self) -> PathBuf {
        self.root.join(".local")
    }

    /// `etcd`, `kube-apiserver`, `kube-controller-manager`, `kubectl`.
    pub fn binary(&self, name: &str) -> Result<PathBuf> {
        let path = self.local_dir().join("bin").join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(Error::MissingBinary { path })
        }
    }

    /// The `ray` CLI of the project's virtualenv, if it was installed (`make ray`).
    pub fn ray_cli(&self) -> Option<PathBuf> {
        let path = self.local_dir().join("venv/bin/ray");
        path.is_file().then_some(path)
    }

    /// Python code real Ray heads import (`tests/ray/apps`: the Serve applications of KubeRay's RayService
    /// samples), put on their `PYTHONPATH`.
    pub fn ray_apps(&self) -> PathBuf {
        self.root.join("tests/ray/apps")
    }

    /// Kubeconfig and description of the cluster started by `make cluster`.
    pub fn cluster_kubeconfig(&self) -> PathBuf {
        self.local_dir().join("kubeconfig")
    }

    pub fn cluster_env_file(&self) -> PathBuf {
        self.local_dir().join("cluster.json")
    }

    pub fn crds_dir(&self) -> PathBuf {
        self.root.join("crds")
    }

    /// The Gateway API CRDs (GatewayClass, Gateway, HTTPRoute) that `tests/gateway-api/fetch.sh` copies from
    /// the pinned `sigs.k8s.io/gateway-api` Go module (`make tools`, `make cluster`).
    pub fn gateway_api_crds_dir(&self) -> PathBuf {
        self.local_dir().join("gateway-api-crds")
    }

    /// cert-manager's CRDs that `tests/cert-manager/build.sh` copies from its pinned Go module (`make
    /// control-plane`).
    pub fn cert_manager_crds_dir(&self) -> PathBuf {
        self.local_dir().join("cert-manager-crds")
    }

    /// The batch schedulers' CRDs (scheduler-plugins' PodGroup, Volcano's PodGroup and Queue) that
    /// `tests/batch-schedulers/fetch.sh` takes from their pinned Go modules (`make batch-schedulers`, part of
    /// `make tools` and `make cluster`).
    pub fn batch_scheduler_crds_dir(&self) -> PathBuf {
        self.local_dir().join("batch-scheduler-crds")
    }
}
