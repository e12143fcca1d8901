//! Free loopback ports. A port is found by binding to port 0 and releasing it; the short window before the
//! component binds it is acceptable for a test environment, and a clash makes that component fail to start
//! with a clear log line rather than misbehave.

use std::net::{Ipv4Addr, TcpListener};

use crate::error::{Error, Result};

pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(Error::io("finding a free port"))?;
    let port = listener
        .local_addr()
        .map_err(Error::io("finding a free port"))?
        .port();
    Ok(port)
}
