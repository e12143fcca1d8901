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
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(Error::io(format!("binding the API forwarder on {listen}")))?;
    tracing::info!(%listen, %api_server, "the kubernetes Service is reachable from Pods");
    Ok(tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(api_server).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    }))
}
