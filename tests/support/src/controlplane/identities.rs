//! Who may talk to the API server. Authentication is a static token file, so tests can act as an admin, as
//! ordinary users whom RBAC restricts, or as the system components the simulator stands in for.

use std::{fmt::Write as _, fs, io::Read, path::Path};

use serde::{Deserialize, Serialize};

use super::pki::write;
use crate::error::{Error, Result};

/// One user of the static token file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
    pub token: String,
}

/// Every identity a test environment defines.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Identities {
    /// Member of `system:masters`: may do anything.
    pub admin: Identity,
    /// Non-admin users with no RBAC bindings of their own; tests grant what they need.
    pub alice: Identity,
    pub bob: Identity,
    pub controller_manager: Identity,
    /// Binds pending Pods to the simulated node, as kube-scheduler would.
    pub scheduler: Identity,
    /// The simulated kubelet, subject to the Node authorizer and the NodeRestriction admission plugin.
    pub kubelet: Identity,
    /// The cluster DNS and the Service proxy, with kube-proxy's user and its bootstrap role
    /// (`system:node-proxier`).
    pub proxy: Identity,
}

impl Identities {
    pub fn generate(node_name: &str) -> Result<Self> {
        let identity = |user: &str, groups: &[&str]| -> Result<Identity> {
            Ok(Identity {
                user: user.to_string(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                token: random_token()?,
            })
        };
        Ok(Self {
            admin: identity("testenv-admin", &["system:masters"])?,
            alice: identity("alice", &[])?,
            bob: identity("bob", &[])?,
            controller_manager: identity("system:kube-controller-manager", &[])?,
            scheduler: identity("system:kube-scheduler", &[])?,
            kubelet: identity(&format!("system:node:{node_name}"), &["system:nodes"])?,
            proxy: identity("system:kube-proxy", &[])?,
        })
    }

    fn all(&self) -> [&Identity; 7] {
        [
            &self.admin,
            &self.alice,
            &self.bob,
            &self.controller_manager,
            &self.scheduler,
            &self.kubelet,
            &self.proxy,
        ]
    }

    /// Looks an identity up by its short name (`admin`, `alice`, `bob`) or its user name.
    pub fn by_name(&self, name: &str) -> Option<&Identity> {
        match name {
            "admin" => Some(&self.admin),
            "alice" => Some(&self.alice),
            "bob" => Some(&self.bob),
            _ => self.all().into_iter().find(|i| i.user == name),
        }
    }

    /// Writes the `--token-auth-file` CSV: `token,user,uid,"group1,group2"`.
    pub fn write_token_file(&self, path: &Path) -> Result<()> {
        let mut csv = String::new();
        for id in self.all() {
            let _ = writeln!(
                csv,
                "{},{},{},\"{}\"",
                id.token,
                id.user,
                id.user,
                id.groups.join(",")
            );
        }
        write(path, &csv, 0o600)
    }
}

/// Writes a kubeconfig that authenticates as `identity`.
pub fn write_kubeconfig(path: &Path, server: &str, ca_file: &Path, identity: &Identity) -> Result<()> {
    write_kubeconfig_via(path, server, ca_file, identity, None)
}

/// Writes a kubeconfig for reaching the API server through another address (a forwarder), checking its
/// certificate against `tls_server_name` instead of the address.
pub fn write_kubeconfig_via(
    path: &Path,
    server: &str,
    ca_file: &Path,
    identity: &Identity,
    tls_server_name: Option<&str>,
) -> Result<()> {
    let server_name = tls_server_name
        .map(|n| format!("\n    tls-server-name: {n}"))
        .unwrap_or_default();
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: testenv\n  cluster:\n    server: {server}\n    \
         certificate-authority: {ca}{server_name}\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- \
         name: testenv\n  context:\n    cluster: testenv\n    user: {user}\n    namespace: default\n\
         current-context: testenv\n",
        ca = ca_file.display(),
        user = identity.user,
        token = identity.token,
    );
    write(path, &yaml, 0o600)
}

/// 32 random hex digits (128 bits from `/dev/urandom`).
pub(crate) fn random_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(Error::io("reading /dev/urandom"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
