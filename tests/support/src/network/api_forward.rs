//! The `kubernetes` Service as Pods see it: a TCP forwarder on the host's address on the pod network (port
//! 443) relaying to the API server on loopback. Pods reach it through their default route; the API server's
//! serving certificate names that address, so in-cluster clients verify it as they would a real Service IP.

use std::net::SocketAddr;

use tokio::task::JoinHandle;

use crate::error::{Error, Result};

/// The port of the `kubernetes` Service.
pub const SERVICE_PORT: u16 = 443;

/// Relays connections to `listen` to `api_server` until the returned task is aborted.
pub async fn start(listen: SocketAddr, api_server: SocketAddr) -> Result<JoinHandle<()>> {
    let forwarder = relay(listen, api_server).await?;
    tracing::info!(%listen, %api_server, "the kubernetes Service is reachable from Pods");
    Ok(forwarder)
}

/// Relays TCP connections to `listen` to `target` until the returned task is aborted (also how Pods reach
/// the OCI registry, which listens on loopback).
pub async fn relay(listen: SocketAddr, target: SocketAddr) -> Result<JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(Error::io(format!("binding a TCP relay on {listen}")))?;
    Ok(tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    }))
}
