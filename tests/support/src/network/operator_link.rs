//! A network namespace for running an operator that must not reach Pods: it is linked to the host by a veth
//! pair on a /30 of its own and has no other route, so every Pod address is unreachable from it. The only
//! thing it can reach is a forwarder on the host end of the link that relays to the API server on loopback.
//! Tests use it to prove that `--use-kubernetes-proxy` never connects to a Pod.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::task::JoinHandle;

use super::{NAME_PREFIX, iproute, kill_namespace_processes, subnet};
use crate::error::{Error, Result};

/// The port the forwarder listens on at the host end of the link.
pub const API_PORT: u16 = 6443;

pub struct OperatorLink {
    pub netns: String,
    host_veth: String,
    /// Where the API server is reachable from inside the namespace.
    pub api_addr: SocketAddr,
    forwarder: JoinHandle<()>,
}

impl OperatorLink {
    pub async fn create(instance: &str, api_server: SocketAddr) -> Result<Self> {
        let netns = format!("{NAME_PREFIX}-{instance}-op");
        let host_veth = format!("{NAME_PREFIX}o{instance}");
        let link = {
            let _guard = subnet::AllocationLock::acquire()?;
            let link = subnet::choose_free_link().await?;
            let host_ip = link.address(1);
            iproute::batch(
                &[
                    format!("netns add {netns}"),
                    format!("link add {host_veth} type veth peer name eth0 netns {netns}"),
                    format!("addr add {host_ip}/30 dev {host_veth}"),
                    format!("link set {host_veth} up"),
                ],
                false,
            )
            .await?;
            link
        };
        let inside = [
            format!("addr add {}/30 dev eth0", link.address(2)),
            "link set lo up".to_string(),
            "link set eth0 up".to_string(),
        ];
        iproute::batch_in(Some(&netns), &inside, false).await?;
        let host_ip: Ipv4Addr = link.address(1);
        let api_addr = SocketAddr::from((host_ip, API_PORT));
        let listener = tokio::net::TcpListener::bind(api_addr)
            .await
            .map_err(Error::io(format!("binding the API forwarder on {api_addr}")))?;
        let forwarder = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(api_server).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        tracing::info!(%netns, %api_addr, "operator network namespace ready (no route to Pods)");
        Ok(Self {
            netns,
            host_veth,
            api_addr,
            forwarder,
        })
    }

    pub async fn destroy(&self) {
        self.forwarder.abort();
        kill_namespace_processes(&self.netns).await;
        let _ = iproute::batch(
            &[
                format!("netns del {}", self.netns),
                format!("link del {}", self.host_veth),
            ],
            true,
        )
        .await;
    }
}
