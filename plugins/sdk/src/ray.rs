//! HTTP to the Ray head of a RayCluster. [`RayRequest`] and [`RayResponse`] are the raw exchange the host
//! routes (`wit/plugin.wit`, interface `ray-head`); [`RayHead`] is a typed client over it for the dashboard's
//! Jobs API ([`jobs`]) and Serve API ([`serve`]), so plugins never build paths, headers or bodies by hand and
//! read Ray's answers (status codes, error texts, `null`s) the way KubeRay's dashboard client does.
//!
//! [`RayHead`] sends through a [`RayTransport`]: every [`Host`] is one (a plugin's requests go to the
//! operator), and native code with another way to the head (the API server, which sends with its users'
//! identity) implements it to reuse the same client logic.

mod error;
mod head;
pub mod jobs;
pub mod serve;
mod wire;

pub use error::RayError;
pub use head::RayHead;

use crate::{Host, HostError};

/// Carries [`RayRequest`]s to Ray heads for a [`RayHead`], blocking until the answer.
///
/// Every [`Host`] is a transport ([`Host::ray`]). Implement it for another way to a head, such as a blocking
/// bridge to an async sender on a thread where blocking is allowed.
pub trait RayTransport {
    /// Sends one request and returns the head's answer, whatever its status code, or why there is none.
    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError>;
}

impl<H: Host + ?Sized> RayTransport for H {
    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        Host::ray(self, request)
    }
}

/// Which of a Ray head's servers a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortRole {
    Dashboard,
    Serve,
    DashboardAgent,
}

/// The cluster as a whole (its head Service) or its head Pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RayTarget {
    Cluster,
    HeadPod,
}

/// An HTTP request to a RayCluster's head; the host decides how it is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RayRequest {
    pub cluster: String,
    pub role: PortRole,
    pub target: RayTarget,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RayResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}
