//! [`TestEnv`]: the handle Rust tests use. One environment per test binary, started lazily by the first test
//! that asks for it, or the one `make cluster` keeps running. Each test works in its own namespace.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
};

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client, api::PostParams};
use serde_json::json;

use crate::{
    annotations,
    controlplane::client_from_kubeconfig,
    crds,
    error::{Error, Result},
    images::{IMAGES_DIR, ImageMap},
    info::{EnvInfo, is_supervisor_alive},
    kubelet::HeadMode,
    paths::Layout,
    registry::Registry,
};

/// Label on every namespace a test creates.
pub const TEST_NAMESPACE_LABEL: &str = "testenv.kuberay-wasm.io/test";

pub struct TestEnv {
    info: EnvInfo,
    layout: Layout,
    attached: bool,
    /// The supervisor of a private environment. Its stdin pipe closes when this process exits, however it
    /// exits, and the supervisor then removes the environment.
    supervisor: Option<Mutex<Child>>,
}

static SHARED: OnceLock<Result<TestEnv, String>> = OnceLock::new();

impl TestEnv {
    /// The environment of this test binary: the running `make cluster` if there is one (unless
    /// `KUBERAY_TESTENV_PRIVATE=1`), otherwise a private one started now and removed when the binary exits.
    pub async fn shared() -> Result<&'static TestEnv> {
        let env = tokio::task::spawn_blocking(|| {
            SHARED
                .get_or_init(|| Self::attach_or_start().map_err(|e| e.to_string()))
                .as_ref()
        })
        .await
        .map_err(|e| Error::Other(format!("starting the test environment: {e}")))?;
        env.map_err(|e| Error::Other(e.clone()))
    }

    fn attach_or_start() -> Result<Self> {
        let layout = Layout::discover();
        let private = std::env::var("KUBERAY_TESTENV_PRIVATE").is_ok_and(|v| v == "1");
        if !private && let Some(env) = Self::attach(&layout) {
            return Ok(env);
        }
        Self::start_private(&layout, HeadMode::Fake)
    }

    /// The environment `make cluster` started, if it is still running.
    pub fn attach(layout: &Layout) -> Option<Self> {
        let info = EnvInfo::read(&layout.cluster_env_file()).ok()?;
        is_supervisor_alive(info.supervisor_pid).then(|| Self {
            info,
            layout: layout.clone(),
            attached: true,
            supervisor: None,
        })
    }

    /// Starts a private environment whose Ray head Pods run `default_head` unless told otherwise. Blocks
    /// until it is ready (about ten seconds once the binaries are built).
    pub fn start_private(layout: &Layout, default_head: HeadMode) -> Result<Self> {
        let bin = supervisor_binary()?;
        let mode = match default_head {
            HeadMode::Real => "real",
            HeadMode::Fake => "fake",
            HeadMode::None => "none",
        };
        let mut child = Command::new(&bin)
            .args(["run", "--supervised", "--ray-head", mode])
            .env("KUBERAY_WASM_ROOT", layout.root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(Error::io(format!("starting {}", bin.display())))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::Other("supervisor stdout missing".into()))?;
        let mut failure = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(Error::io("reading the supervisor's output"))?;
            if let Some(path) = line.strip_prefix("READY ") {
                let info = EnvInfo::read(Path::new(path))?;
                return Ok(Self {
                    info,
                    layout: layout.clone(),
                    attached: false,
                    supervisor: Some(Mutex::new(child)),
                });
            }
            failure.push_str(&line);
            failure.push('\n');
        }
        let _ = child.wait();
        Err(Error::Other(format!(
            "the test environment failed to start:\n{failure}"
        )))
    }

    /// Stops a private environment and waits until its supervisor has removed everything.
    pub fn shutdown(self) -> Result<()> {
        if let Some(child) = self.supervisor {
            let mut child = child
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            drop(child.stdin.take());
            child.wait().map_err(Error::io("waiting for the supervisor"))?;
        }
        Ok(())
    }

    pub fn info(&self) -> &EnvInfo {
        &self.info
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The environment's OCI registry: where it is, the CA to trust and the credentials (see
    /// [`crate::registry`]). An error naming `make registry` when the environment has none.
    pub fn registry(&self) -> Result<&Registry> {
        self.info.registry.as_ref().ok_or_else(|| {
            Error::Registry(if self.attached {
                "the running `make cluster` has no registry: run `make cluster-down`, then `make cluster` (which \
                 builds it)"
                    .into()
            } else {
                "this test environment has no registry: .local/bin/registry is missing; run `make registry` (or \
                 `make tools`)"
                    .into()
            })
        })
    }

    /// Whether this is the long-running `make cluster` environment rather than a private one.
    pub fn is_attached(&self) -> bool {
        self.attached
    }

    /// The admin kubeconfig.
    pub fn kubeconfig(&self) -> &Path {
        self.kubeconfig_of("admin")
    }

    /// The kubeconfig of `admin`, `alice` or `bob`.
    pub fn kubeconfig_of(&self, who: &str) -> &Path {
        self.info
            .kubeconfig(who)
            .unwrap_or_else(|| Path::new("/nonexistent-kubeconfig"))
    }

    /// An admin client bound to the calling test's runtime.
    pub async fn client(&self) -> Result<Client> {
        self.client_as("admin").await
    }

    pub async fn client_as(&self, who: &str) -> Result<Client> {
        client_from_kubeconfig(self.kubeconfig_of(who)).await
    }

    /// `kubectl` (the one built with the control plane) pointed at this environment as admin.
    pub fn kubectl(&self) -> Result<Command> {
        let mut command = Command::new(self.layout.binary("kubectl")?);
        command.env("KUBECONFIG", self.kubeconfig());
        Ok(command)
    }

    /// Installs (server-side applies) every CRD in `crds/`, the Gateway API CRDs when
    /// `tests/gateway-api/fetch.sh` has copied them, and the batch schedulers' CRDs (an error when
    /// `make batch-schedulers` has not fetched them), and waits until they are established.
    pub async fn install_crds(&self) -> Result<()> {
        let client = self.client().await?;
        crds::install(&client, &self.layout.crds_dir()).await?;
        let gateway = self.layout.gateway_api_crds_dir();
        if gateway.is_dir() {
            crds::install(&client, &gateway).await?;
        }
        self.install_batch_scheduler_crds().await
    }

    /// Installs the batch schedulers' CRDs (PodGroups of `scheduling.x-k8s.io` and `scheduling.volcano.sh`,
    /// Volcano's Queue); an error when `tests/batch-schedulers/fetch.sh` (`make batch-schedulers`, part of
    /// `make tools`) has not made them.
    pub async fn install_batch_scheduler_crds(&self) -> Result<()> {
        let dir = self.layout.batch_scheduler_crds_dir();
        let present = std::fs::read_dir(&dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        });
        if !present {
            return Err(Error::Other(format!(
                "the batch schedulers' CRDs (PodGroup, Queue) are not in {}; run `make batch-schedulers` \
                 (or `make tools`)",
                dir.display()
            )));
        }
        crds::install(&self.client().await?, &dir).await
    }

    /// Installs the Gateway API CRDs; an error when `tests/gateway-api/fetch.sh` (`make tools`) has not
    /// copied them.
    pub async fn install_gateway_api_crds(&self) -> Result<()> {
        let dir = self.layout.gateway_api_crds_dir();
        if !dir.is_dir() {
            return Err(Error::Other(format!(
                "the Gateway API CRDs are not in {}; run `make gateway-api` (or `make tools`)",
                dir.display()
            )));
        }
        crds::install(&self.client().await?, &dir).await
    }

    /// Tells the environment's kubelet to run containers of these images for real (see
    /// [`crate::images`]). Applies to Pods the kubelet sees from now on; maps add up (a later map of the
    /// same image wins).
    pub fn map_images(&self, map: &ImageMap) -> Result<()> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = self.info.state_dir.join(IMAGES_DIR);
        std::fs::create_dir_all(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{}-{n:04}", std::process::id());
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, map.to_yaml()?).map_err(Error::io("writing an image map"))?;
        std::fs::rename(&tmp, dir.join(format!("{name}.yaml"))).map_err(Error::io("publishing an image map"))
    }

    /// The log of a container of a Pod on the simulated node (containers of mapped images write there).
    pub fn container_log(&self, namespace: &str, pod: &str, container: &str) -> PathBuf {
        self.info
            .state_dir
            .join("logs/pods")
            .join(format!("{namespace}_{pod}_{container}.log"))
    }

    /// A fresh namespace for one test, named `<prefix>-<random>`.
    pub async fn namespace(&self, prefix: &str) -> Result<TestNamespace> {
        self.namespace_with(prefix, None).await
    }

    /// A fresh namespace whose Ray head Pods run `head` (see [`annotations::RAY_HEAD`]).
    pub async fn namespace_with(&self, prefix: &str, head: Option<HeadMode>) -> Result<TestNamespace> {
        let client = self.client().await?;
        let api: Api<Namespace> = Api::all(client.clone());
        let mut annotations = serde_json::Map::new();
        if let Some(head) = head {
            let mode = match head {
                HeadMode::Real => "real",
                HeadMode::Fake => "fake",
                HeadMode::None => "none",
            };
            annotations.insert(annotations::RAY_HEAD.into(), json!(mode));
        }
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": {
                "generateName": format!("{prefix}-"),
                "labels": {TEST_NAMESPACE_LABEL: "true"},
                "annotations": annotations,
            }
        }))
        .map_err(|e| Error::Other(e.to_string()))?;
        let created = api.create(&PostParams::default(), &ns).await?;
        let name = created
            .metadata
            .name
            .ok_or_else(|| Error::Other("namespace without a name".into()))?;
        Ok(TestNamespace { name })
    }
}

/// A namespace created for one test. Namespaces of a private environment disappear with it; in an attached
/// environment they are deleted by `make cluster-down` unless the test deletes them.
#[derive(Debug, Clone)]
pub struct TestNamespace {
    pub name: String,
}

impl TestNamespace {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn delete(&self, client: &Client) -> Result<()> {
        let api: Api<Namespace> = Api::all(client.clone());
        api.delete(&self.name, &Default::default()).await?;
        Ok(())
    }
}

/// The operator binary (`kuberay-wasm`) of the same build as the supervisor, for tests that run it as a
/// mapped image.
pub fn operator_binary() -> Result<PathBuf> {
    workspace_binary("kuberay-wasm", "kuberay-wasm")
}

/// `kuberay-apiserver`, built next to `kuberay-testenv` (a mapped image runs it in Pods).
pub fn apiserver_binary() -> Result<PathBuf> {
    workspace_binary("kuberay-apiserver", "kuberay-apiserver")
}

/// The binary `name` of the workspace's package `package`, next to `kuberay-testenv`.
fn workspace_binary(name: &str, package: &str) -> Result<PathBuf> {
    let binary = supervisor_binary()?.with_file_name(name);
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(Error::Other(format!(
            "{} is missing: build it with `cargo build -p {package}`",
            binary.display()
        )))
    }
}

/// `kuberay-testenv`, built next to the test binaries (`target/<profile>/kuberay-testenv`) unless
/// `KUBERAY_TESTENV_BIN` names it.
pub fn supervisor_binary() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os("KUBERAY_TESTENV_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(Error::io("locating the test binary"))?;
    let candidates = exe
        .ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join("kuberay-testenv"));
    for candidate in candidates {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(Error::Other(
        "the kuberay-testenv binary was not found next to the test binary; run `cargo build -p kuberay-testenv` \
         first (`make test` does)"
            .into(),
    ))
}
