//! The pod network: a Linux bridge on the host with a private /20, and for every Pod that runs something a
//! network namespace joined to the bridge by a veth pair. Pod addresses are therefore real, non-loopback
//! addresses that the API server can proxy to and Endpoints accept, yet all traffic stays on this machine:
//! the bridge has no uplink and nothing forwards or NATs its traffic.

pub mod api_forward;
pub(crate) mod iproute;
mod netns;
mod operator_link;
pub mod services;
mod subnet;

use std::{
    collections::BTreeSet,
    net::Ipv4Addr,
    sync::{Arc, Mutex},
};

pub use netns::bind_in_netns;
pub use operator_link::OperatorLink;
pub use subnet::Subnet;

use crate::error::{Error, Result};

/// Prefix of every network object a test environment creates, so leftovers are easy to find.
pub const NAME_PREFIX: &str = "kwt";

/// The bridge, its subnet and the addresses handed out so far.
pub struct PodNetwork {
    instance: String,
    bridge: String,
    subnet: Subnet,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    used: BTreeSet<u32>,
    /// Where the next address search starts: addresses are handed out round-robin so a freed address is
    /// reused as late as possible (neighbour caches still map it to the old sandbox's MAC for a while).
    cursor: u32,
    next_sandbox: u64,
    sandboxes: BTreeSet<String>,
}

/// A Pod's network namespace and address.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub netns: String,
    pub ip: Ipv4Addr,
}

impl PodNetwork {
    /// Creates the bridge on a /20 that no route of this machine uses yet.
    pub async fn create(instance: &str) -> Result<Arc<Self>> {
        let bridge = format!("{NAME_PREFIX}b{instance}");
        let _guard = subnet::AllocationLock::acquire()?;
        let subnet = subnet::choose_free().await?;
        iproute::batch(
            &[
                format!("link add {bridge} type bridge"),
                format!("addr add {}/{} dev {bridge}", subnet.gateway(), subnet.prefix()),
                format!("link set {bridge} up"),
            ],
            false,
        )
        .await?;
        tracing::info!(%bridge, subnet = %subnet, "pod network created");
        Ok(Arc::new(Self {
            instance: instance.to_string(),
            bridge,
            subnet,
            state: Mutex::default(),
        }))
    }

    pub fn subnet(&self) -> Subnet {
        self.subnet
    }

    pub fn bridge(&self) -> &str {
        &self.bridge
    }

    /// The host's address on the pod network (the Pods' `hostIP`).
    pub fn host_ip(&self) -> Ipv4Addr {
        self.subnet.gateway()
    }

    /// An address for a Pod that runs nothing (nothing will answer on it).
    pub fn allocate_ip(&self) -> Result<Ipv4Addr> {
        let mut state = self.lock();
        let (first, end) = (2, self.subnet.size() - 1);
        let start = state.cursor.clamp(first, end);
        let offset = (start..end)
            .chain(first..start)
            .find(|o| !state.used.contains(o))
            .ok_or_else(|| Error::Network(format!("pod subnet {} is exhausted", self.subnet)))?;
        state.used.insert(offset);
        state.cursor = offset + 1;
        Ok(self.subnet.address(offset))
    }

    pub fn release_ip(&self, ip: Ipv4Addr) {
        if let Some(offset) = self.subnet.offset_of(ip) {
            self.lock().used.remove(&offset);
        }
    }

    /// A network namespace with its own address, reachable from the host through the bridge.
    pub async fn create_sandbox(&self) -> Result<Sandbox> {
        let ip = self.allocate_ip()?;
        let n = {
            let mut state = self.lock();
            state.next_sandbox += 1;
            state.next_sandbox
        };
        let netns = format!("{NAME_PREFIX}-{}-{n}", self.instance);
        let host_veth = format!("{NAME_PREFIX}v{}-{n}", self.instance);
        let host_side = [
            format!("netns add {netns}"),
            format!("link add {host_veth} type veth peer name eth0 netns {netns}"),
            format!("link set {host_veth} master {} up", self.bridge),
        ];
        let pod_side = [
            format!("addr add {ip}/{} dev eth0", self.subnet.prefix()),
            "link set lo up".to_string(),
            "link set eth0 up".to_string(),
            format!("route add default via {}", self.subnet.gateway()),
        ];
        let result = match iproute::batch(&host_side, false).await {
            Ok(()) => iproute::batch_in(Some(&netns), &pod_side, false).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            let _ = iproute::batch(
                &[format!("netns del {netns}"), format!("link del {host_veth}")],
                true,
            )
            .await;
            self.release_ip(ip);
            return Err(e);
        }
        self.lock().sandboxes.insert(netns.clone());
        Ok(Sandbox { netns, ip })
    }

    /// Kills every process in the sandbox and deletes it; its veth pair goes with the namespace.
    pub async fn destroy_sandbox(&self, sandbox: &Sandbox) {
        kill_namespace_processes(&sandbox.netns).await;
        if let Err(e) = iproute::batch(&[format!("netns del {}", sandbox.netns)], false).await {
            tracing::warn!(netns = %sandbox.netns, error = %e, "could not delete a pod network namespace");
        }
        // The host's neighbour entry would keep pointing at the deleted veth's MAC; a later sandbox with
        // the same address would then be unreachable until the entry expires.
        let _ = iproute::batch(&[format!("neigh flush to {}", sandbox.ip)], true).await;
        self.lock().sandboxes.remove(&sandbox.netns);
        self.release_ip(sandbox.ip);
    }

    /// Deletes every remaining sandbox and the bridge.
    pub async fn destroy(&self) {
        let sandboxes: Vec<String> = self.lock().sandboxes.iter().cloned().collect();
        for netns in &sandboxes {
            kill_namespace_processes(netns).await;
        }
        let mut commands: Vec<String> = sandboxes.iter().map(|ns| format!("netns del {ns}")).collect();
        commands.push(format!("link del {}", self.bridge));
        let _ = iproute::batch(&commands, true).await;
        tracing::info!(bridge = %self.bridge, "pod network removed");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Pids of every process running in a network namespace.
pub async fn namespace_pids(netns: &str) -> Vec<i32> {
    iproute::output(&["netns", "pids", netns])
        .await
        .map(|out| out.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// SIGKILLs everything in the namespace until nothing is left (Ray forks workers while it is being killed).
pub async fn kill_namespace_processes(netns: &str) {
    for _ in 0..50 {
        let pids = namespace_pids(netns).await;
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tracing::warn!(%netns, "processes survived SIGKILL in a pod network namespace");
}

/// Sends a signal to every process in the namespace (fault injection: stop, continue, kill).
pub async fn signal_namespace(netns: &str, signal: nix::sys::signal::Signal) {
    for pid in namespace_pids(netns).await {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// Network objects (namespaces and links) whose names start with `prefix`, for leftover checks and for
/// cleaning up after an environment whose supervisor was killed.
pub async fn objects_with_prefix(prefix: &str) -> (Vec<String>, Vec<String>) {
    let namespaces = iproute::output(&["netns", "list"])
        .await
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect();
    let links = iproute::output(&["-o", "link", "show"])
        .await
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or_default().to_string())
        .filter(|n| n.starts_with(prefix))
        .collect();
    (namespaces, links)
}

/// Removes namespaces (with their processes) and links left by an environment that did not shut down.
pub async fn remove_objects(namespaces: &[String], links: &[String]) {
    for ns in namespaces {
        kill_namespace_processes(ns).await;
    }
    let mut commands: Vec<String> = namespaces.iter().map(|n| format!("netns del {n}")).collect();
    commands.extend(links.iter().map(|l| format!("link del {l}")));
    let _ = iproute::batch(&commands, true).await;
}
