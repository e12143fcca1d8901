//! Choosing the pod subnet: a /20 inside 10.240.0.0/12 that no route on this machine overlaps, chosen under
//! a file lock so that test environments started at the same time pick different ones.

use std::{fmt, fs::File, net::Ipv4Addr};

use crate::error::{Error, Result};

const RANGE_START: u32 = u32::from_be_bytes([10, 240, 0, 0]);
const PREFIX: u8 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    base: u32,
    prefix: u8,
}

impl Subnet {
    pub fn new(base: Ipv4Addr, prefix: u8) -> Self {
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(prefix))
        };
        Self {
            base: u32::from(base) & mask,
            prefix,
        }
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    pub fn size(&self) -> u32 {
        1u32 << (32 - u32::from(self.prefix))
    }

    pub fn gateway(&self) -> Ipv4Addr {
        self.address(1)
    }

    pub fn address(&self, offset: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.base + offset)
    }

    pub fn offset_of(&self, ip: Ipv4Addr) -> Option<u32> {
        let ip = u32::from(ip);
        (ip >= self.base && ip - self.base < self.size()).then(|| ip - self.base)
    }

    pub fn overlaps(&self, other: &Subnet) -> bool {
        let (a_end, b_end) = (self.base + (self.size() - 1), other.base + (other.size() - 1));
        self.base <= b_end && other.base <= a_end
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

/// Parses `10.1.2.0/24`, `10.1.2.3` (a /32) or `default` (0.0.0.0/0, ignored by the caller).
fn parse_destination(dst: &str) -> Option<Subnet> {
    let (addr, prefix) = dst.split_once('/').unwrap_or((dst, "32"));
    Some(Subnet::new(addr.parse().ok()?, prefix.parse().ok()?))
}

/// Every IPv4 route destination in every routing table.
async fn taken() -> Result<Vec<Subnet>> {
    let routes = super::iproute::output(&["-4", "route", "show", "table", "all"]).await?;
    Ok(routes
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let first = words.next()?;
            // Route types (local, broadcast, ...) come before the destination.
            let dst = if first.parse::<Ipv4Addr>().is_ok() || first.contains('/') {
                first
            } else {
                words.next()?
            };
            (dst != "default").then(|| parse_destination(dst)).flatten()
        })
        .collect())
}

/// The first block of `prefix` bits in `range` that no route overlaps.
async fn first_free(range: Subnet, prefix: u8) -> Result<Subnet> {
    let taken = taken().await?;
    let blocks = 1u32 << (u32::from(prefix) - u32::from(range.prefix));
    (0..blocks)
        .map(|i| Subnet {
            base: range.base + (i << (32 - u32::from(prefix))),
            prefix,
        })
        .find(|candidate| !taken.iter().any(|t| t.overlaps(candidate)))
        .ok_or_else(|| Error::Network(format!("no free /{prefix} left in {range}")))
}

/// The first free /20 for a pod network, in 10.240.0.0/12.
pub async fn choose_free() -> Result<Subnet> {
    first_free(
        Subnet {
            base: RANGE_START,
            prefix: 12,
        },
        PREFIX,
    )
    .await
}

/// The first free /30 for an operator link, in 10.239.0.0/16.
pub async fn choose_free_link() -> Result<Subnet> {
    first_free(Subnet::new(Ipv4Addr::new(10, 239, 0, 0), 16), 30).await
}

/// Exclusive lock held while a subnet is chosen and the bridge takes it.
pub struct AllocationLock(File);

impl AllocationLock {
    pub fn acquire() -> Result<Self> {
        let path = std::env::temp_dir().join("kuberay-testenv-network.lock");
        let file = File::create(&path).map_err(Error::io(format!("creating {}", path.display())))?;
        file.lock()
            .map_err(Error::io(format!("locking {}", path.display())))?;
        Ok(Self(file))
    }
}

impl Drop for AllocationLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_and_offsets() {
        let a = Subnet::new(Ipv4Addr::new(10, 240, 0, 0), 20);
        assert_eq!(a.gateway(), Ipv4Addr::new(10, 240, 0, 1));
        assert_eq!(a.size(), 4096);
        assert_eq!(a.offset_of(Ipv4Addr::new(10, 240, 15, 255)), Some(4095));
        assert_eq!(a.offset_of(Ipv4Addr::new(10, 240, 16, 0)), None);
        assert!(a.overlaps(&Subnet::new(Ipv4Addr::new(10, 240, 3, 7), 32)));
        assert!(a.overlaps(&Subnet::new(Ipv4Addr::new(10, 0, 0, 0), 8)));
        assert!(!a.overlaps(&Subnet::new(Ipv4Addr::new(10, 240, 16, 0), 20)));
        assert_eq!(parse_destination("default"), None);
        assert_eq!(
            parse_destination("192.0.2.0/24"),
            Some(Subnet::new(Ipv4Addr::new(192, 0, 2, 0), 24))
        );
    }
}
