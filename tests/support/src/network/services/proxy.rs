//! The Service proxy: every ClusterIP is an address of the pod network's bridge, and for every TCP port of a
//! Service a listener on `<ClusterIP>:<port>`, bound to the bridge, relays each connection to one of the
//! Service's ready endpoints (round robin; `targetPort` resolved through the EndpointSlices). A port without a
//! ready endpoint resets the connection, as kube-proxy's REJECT does.
//!
//! Several test environments may share the machine and the Service CIDR: the listeners of each are bound to
//! its own bridge, so equal ClusterIPs of two environments do not meet.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::Ipv4Addr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use kube::ResourceExt;
use tokio::{
    net::{TcpListener, TcpSocket, TcpStream},
    task::JoinHandle,
};

use super::{Endpoint, ServiceView, cluster_ip};
use crate::network::iproute;

/// How long a connection to an endpoint may take before the client's connection is reset.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often listeners that could not be bound are tried again.
const RETRY: Duration = Duration::from_secs(5);

/// Which Service port a listener serves.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    namespace: String,
    service: String,
    port_name: Option<String>,
}

/// Runs the proxy for `bridge` until the task is aborted.
pub fn start(view: ServiceView, bridge: String) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = view.changes();
        let mut listeners: BTreeMap<(Ipv4Addr, u16), (Target, JoinHandle<()>)> = BTreeMap::new();
        let mut addresses: BTreeSet<Ipv4Addr> = BTreeSet::new();
        loop {
            let wanted = desired(&view);
            let wanted_ips: BTreeSet<Ipv4Addr> = wanted.keys().map(|(ip, _)| *ip).collect();
            set_addresses(&bridge, &mut addresses, &wanted_ips).await;
            listeners.retain(|key, (target, task)| {
                let keep = wanted.get(key) == Some(target);
                if !keep {
                    task.abort();
                }
                keep
            });
            for (key, target) in wanted {
                if listeners.contains_key(&key) {
                    continue;
                }
                match bind(&bridge, key) {
                    Ok(listener) => {
                        let task = tokio::spawn(accept(listener, view.clone(), target.clone()));
                        listeners.insert(key, (target, task));
                    }
                    Err(e) => tracing::warn!(address = %key.0, port = key.1, error = %e,
                        "service proxy: cannot listen (tried again shortly)"),
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep(RETRY) => {}
            }
        }
        for (_, (_, task)) in listeners {
            task.abort();
        }
    })
}

/// Every TCP port of every Service with a ClusterIP.
fn desired(view: &ServiceView) -> BTreeMap<(Ipv4Addr, u16), Target> {
    let mut out = BTreeMap::new();
    for service in view.services() {
        let Some(ip) = cluster_ip(&service) else { continue };
        for port in service.spec.iter().flat_map(|s| s.ports.iter().flatten()) {
            let tcp = port.protocol.as_deref().unwrap_or("TCP") == "TCP";
            let Ok(number) = u16::try_from(port.port) else {
                continue;
            };
            if tcp {
                out.insert(
                    (ip, number),
                    Target {
                        namespace: service.namespace().unwrap_or_default(),
                        service: service.name_any(),
                        port_name: port.name.clone().filter(|n| !n.is_empty()),
                    },
                );
            }
        }
    }
    out
}

/// Adds the ClusterIPs now wanted to the bridge and removes those no longer wanted.
async fn set_addresses(bridge: &str, current: &mut BTreeSet<Ipv4Addr>, wanted: &BTreeSet<Ipv4Addr>) {
    let mut commands: Vec<String> = wanted
        .difference(current)
        .map(|ip| format!("addr add {ip}/32 dev {bridge}"))
        .collect();
    commands.extend(
        current
            .difference(wanted)
            .map(|ip| format!("addr del {ip}/32 dev {bridge}")),
    );
    if commands.is_empty() {
        return;
    }
    // `force`: one address already there (or gone) must not keep the others from being set.
    if let Err(e) = iproute::batch(&commands, true).await {
        tracing::warn!(error = %e, "service proxy: setting ClusterIP addresses");
    }
    current.clone_from(wanted);
}

fn bind(bridge: &str, (ip, port): (Ipv4Addr, u16)) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind_device(Some(bridge.as_bytes()))?;
    socket.bind((ip, port).into())?;
    socket.listen(256)
}

async fn accept(listener: TcpListener, view: ServiceView, target: Target) {
    let next = Arc::new(AtomicUsize::new(0));
    loop {
        let Ok((inbound, peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let endpoints = view.endpoints(&target.namespace, &target.service, target.port_name.as_deref());
        let Some(endpoint) = (!endpoints.is_empty())
            .then(|| endpoints[next.fetch_add(1, Ordering::Relaxed) % endpoints.len()])
        else {
            tracing::debug!(service = %target.service, namespace = %target.namespace, %peer,
                "service proxy: no ready endpoint; resetting the connection");
            let _ = inbound.set_zero_linger();
            continue;
        };
        tokio::spawn(relay(inbound, endpoint));
    }
}

async fn relay(mut inbound: TcpStream, endpoint: Endpoint) {
    let outbound =
        tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((endpoint.ip, endpoint.port))).await;
    match outbound {
        Ok(Ok(mut outbound)) => {
            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
        }
        _ => {
            let _ = inbound.set_zero_linger();
        }
    }
}
