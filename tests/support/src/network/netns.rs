//! Listening sockets inside a pod's network namespace. A socket keeps the namespace it was created in, so a
//! short-lived thread enters the namespace, binds, and hands the listener back to the async runtime; the
//! supervisor itself never leaves the host namespace.

use std::{fs::File, net::SocketAddr};

use nix::sched::{CloneFlags, setns};

use crate::error::{Error, Result};

/// Binds a TCP listener to `addr` inside the named network namespace (`/run/netns/<name>`).
pub async fn bind_in_netns(netns: &str, addr: SocketAddr) -> Result<tokio::net::TcpListener> {
    let path = format!("/run/netns/{netns}");
    let listener = tokio::task::spawn_blocking(move || -> Result<std::net::TcpListener> {
        let handle = std::thread::spawn(move || -> Result<std::net::TcpListener> {
            let ns = File::open(&path).map_err(Error::io(format!("opening {path}")))?;
            setns(&ns, CloneFlags::CLONE_NEWNET)
                .map_err(|e| Error::Network(format!("entering network namespace {path}: {e}")))?;
            let listener =
                std::net::TcpListener::bind(addr).map_err(Error::io(format!("binding {addr} in {path}")))?;
            listener
                .set_nonblocking(true)
                .map_err(Error::io("making a listener non-blocking"))?;
            Ok(listener)
        });
        handle
            .join()
            .map_err(|_| Error::Network("the namespace-entering thread panicked".into()))?
    })
    .await
    .map_err(|e| Error::Network(format!("binding in a network namespace: {e}")))??;
    tokio::net::TcpListener::from_std(listener).map_err(Error::io("registering a listener with tokio"))
}
