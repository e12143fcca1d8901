//! A simulated kubelet. It registers a Node, binds pending Pods to it (standing in for kube-scheduler), and
//! drives each Pod's status the way a kubelet would, running a real or fake Ray head, an HTTP echo server or
//! nothing at the Pod's address. Faults are injected with annotations (see [`crate::annotations`]).
//!
//! It authenticates as `system:node:<node>` and `system:kube-scheduler`, so the Node authorizer and the
//! NodeRestriction admission plugin hold it to what a real kubelet and scheduler may do.

mod atomic_writer;
mod binder;
mod container_env;
mod directives;
pub mod enter;
pub mod exec;
mod mapped;
mod node;
mod pod;
pub(crate) mod probe;
mod resolv;
mod status;
mod streaming;
mod token;
mod volumes;

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

pub use directives::HeadMode;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::{
    Api, Client, ResourceExt,
    runtime::watcher::{self, watcher},
};
pub use streaming::StreamingConfig;
use tokio::{sync::watch, task::JoinHandle};

use streaming::StreamingServer;

use crate::{annotations, network::PodNetwork};

pub struct KubeletConfig {
    pub node_name: String,
    /// What Ray head Pods run unless they or their Namespace say otherwise.
    pub default_head: HeadMode,
    pub ray_cli: Option<PathBuf>,
    /// KubeRay's light-weight RayJob submitter (`make kuberay-operator`), run for its image in namespaces with
    /// real Ray heads.
    pub light_submitter: Option<PathBuf>,
    /// A directory real Ray heads (and their workers) import Python code from (`PYTHONPATH`).
    pub ray_python_path: Option<PathBuf>,
    /// Ray temp dirs and logs go under here.
    pub state_dir: PathBuf,
    /// The image-map file (`KUBERAY_TESTENV_IMAGES`); maps in `<state_dir>/images.d` are read too.
    pub images_file: Option<PathBuf>,
    /// Where Pods reach the API server (the `kubernetes` Service variables point here).
    pub api_service: Option<std::net::SocketAddr>,
    /// The cluster DNS server that containers' `/etc/resolv.conf` names (`dnsPolicy: ClusterFirst`).
    pub cluster_dns: Option<std::net::Ipv4Addr>,
    /// The `kuberay-testenv` binary, whose `pod-exec` command starts containers of mapped images.
    pub exec_helper: Option<PathBuf>,
    /// The streaming endpoint (`pods/exec`); it needs [`KubeletConfig::exec_helper`] too.
    pub streaming: Option<StreamingConfig>,
}

/// State shared by the kubelet's tasks.
pub(crate) struct Shared {
    config: KubeletConfig,
    network: Arc<PodNetwork>,
    kubelet: Client,
    scheduler: Client,
    /// The port of the streaming endpoint, advertised in the Node status.
    kubelet_port: Option<u16>,
}

impl Shared {
    /// The Ray head mode a Namespace's annotation asks for.
    async fn namespace_head_mode(&self, namespace: &str) -> Option<HeadMode> {
        let api: Api<Namespace> = Api::all(self.scheduler.clone());
        let ns = api.get_opt(namespace).await.ok().flatten()?;
        ns.annotations().get(annotations::RAY_HEAD)?.parse().ok()
    }
}

/// The running kubelet; dropping it does not stop it, [`SimKubelet::shutdown`] does.
pub struct SimKubelet {
    tasks: Vec<JoinHandle<()>>,
    pods: Arc<Mutex<HashMap<String, PodEntry>>>,
    streaming: Option<StreamingServer>,
}

struct PodEntry {
    updates: watch::Sender<Arc<Pod>>,
    task: JoinHandle<()>,
}

impl SimKubelet {
    /// Registers the Node and starts binding and running Pods. Returns once the Node is Ready.
    pub async fn start(
        config: KubeletConfig,
        network: Arc<PodNetwork>,
        kubelet: Client,
        scheduler: Client,
    ) -> crate::error::Result<Self> {
        let streaming = match (&config.streaming, &config.exec_helper) {
            (Some(streaming), Some(helper)) => {
                Some(StreamingServer::start(streaming, network.host_ip(), helper, &config.state_dir).await?)
            }
            _ => None,
        };
        let shared = Arc::new(Shared {
            kubelet_port: streaming.as_ref().map(|s| s.port),
            config,
            network,
            kubelet,
            scheduler,
        });
        if let Err(e) = node::register(&shared).await {
            if let Some(streaming) = streaming {
                streaming.stop().await;
            }
            return Err(e);
        }
        let pods: Arc<Mutex<HashMap<String, PodEntry>>> = Arc::default();
        let tasks = vec![
            tokio::spawn(node::heartbeat(shared.clone())),
            tokio::spawn(binder::run(shared.clone())),
            tokio::spawn(run_pods(shared.clone(), pods.clone())),
        ];
        Ok(Self {
            tasks,
            pods,
            streaming,
        })
    }

    /// The process id of the streaming endpoint, a child process like the control plane's.
    pub fn streaming_pid(&self) -> Option<u32> {
        self.streaming.as_ref().and_then(StreamingServer::pid)
    }

    /// Stops watching, then stops every Pod's workload and removes its sandbox.
    pub async fn shutdown(self) {
        for task in &self.tasks {
            task.abort();
        }
        let entries: Vec<PodEntry> = {
            let mut pods = self
                .pods
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pods.drain().map(|(_, e)| e).collect()
        };
        // Dropping a Pod's sender makes its runner tear down as if the Pod had been deleted.
        let tasks: Vec<JoinHandle<()>> = entries.into_iter().map(|e| e.task).collect();
        futures::future::join_all(tasks).await;
        if let Some(streaming) = self.streaming {
            streaming.stop().await;
        }
    }
}

/// Watches the Pods bound to the node and gives each its own runner.
async fn run_pods(shared: Arc<Shared>, pods: Arc<Mutex<HashMap<String, PodEntry>>>) {
    let api: Api<Pod> = Api::all(shared.kubelet.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={}", shared.config.node_name));
    let mut events = watcher(api, config).boxed();
    let mut seen_in_relist: Option<Vec<String>> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                if let Some(seen) = seen_in_relist.as_mut() {
                    seen.push(uid(&pod));
                }
                upsert(&shared, &pods, pod).await;
            }
            Ok(watcher::Event::Delete(pod)) => remove(&pods, &uid(&pod)),
            Ok(watcher::Event::Init) => seen_in_relist = Some(Vec::new()),
            Ok(watcher::Event::InitDone) => {
                if let Some(seen) = seen_in_relist.take() {
                    let gone: Vec<String> = {
                        let map = pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        map.keys().filter(|k| !seen.contains(k)).cloned().collect()
                    };
                    for key in gone {
                        remove(&pods, &key);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "pod watch failed; retrying");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    }
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

async fn upsert(shared: &Arc<Shared>, pods: &Arc<Mutex<HashMap<String, PodEntry>>>, pod: Pod) {
    let key = uid(&pod);
    let pod = Arc::new(pod);
    {
        let map = pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(entry) = map.get(&key) {
            entry.updates.send_replace(pod);
            return;
        }
    }
    let runner = pod::PodRunner::new(shared.clone(), pod.clone()).await;
    let (tx, rx) = watch::channel(pod);
    let task = tokio::spawn(runner.run(rx));
    pods.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key, PodEntry { updates: tx, task });
}

fn remove(pods: &Arc<Mutex<HashMap<String, PodEntry>>>, key: &str) {
    // Dropping the sender ends the runner, which removes the Pod's sandbox.
    pods.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(key);
}
