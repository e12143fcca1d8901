//! Identities for tests that need someone other than the admin: ServiceAccount tokens as a Pod gets them,
//! kubeconfigs carrying a token, and manifests (RBAC, CRDs) applied as they would be with `kubectl apply
//! --server-side`.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::api::{authentication::v1::TokenRequest, core::v1::ServiceAccount};
use kube::{
    Api, Client,
    api::{DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    TestEnv,
    error::{Error, Result},
};

impl TestEnv {
    /// A fresh token (two hours) of ServiceAccount `namespace/name`, which is created if missing.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> Result<String> {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client().await?, namespace);
        let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}}))
            .map_err(|e| Error::Other(e.to_string()))?;
        let _ = accounts.create(&PostParams::default(), &account).await;
        let request: TokenRequest =
            serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 7200}}))
                .map_err(|e| Error::Other(e.to_string()))?;
        // The token controller may not have seen a new ServiceAccount yet.
        let mut last = None;
        for _ in 0..60 {
            match accounts
                .create_token_request(name, &PostParams::default(), &request)
                .await
            {
                Ok(TokenRequest {
                    status: Some(status), ..
                }) => return Ok(status.token),
                Ok(_) => {}
                Err(e) => last = Some(e.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(Error::Other(format!(
            "no token for ServiceAccount {namespace}/{name}: {}",
            last.unwrap_or_default()
        )))
    }

    /// A kubeconfig file (in the environment's state directory, so it goes with the environment) for `token` on `server`, the API server's
    /// address unless given (e.g. the forwarder of the operator network namespace).
    pub fn kubeconfig_with_token(&self, name: &str, token: &str, server: Option<&str>) -> Result<PathBuf> {
        let info = self.info();
        let path = info.state_dir.join(format!(
            "kuberay-testenv-{}-{name}-{}.kubeconfig",
            info.instance,
            std::process::id()
        ));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    \
             certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: c\n  \
             context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            server.unwrap_or(&info.server),
            info.ca_cert.display(),
        );
        std::fs::write(&path, text).map_err(Error::io(format!("writing {}", path.display())))?;
        Ok(path)
    }
}

/// Server-side applies every object of a YAML manifest whose objects name their own namespaces (or are
/// cluster-scoped), as `kubectl apply --server-side --force-conflicts` would.
pub async fn apply_manifest(client: &Client, path: &Path) -> Result<()> {
    let discovery = kube::Discovery::new(client.clone()).run().await?;
    let text = std::fs::read_to_string(path).map_err(Error::io(format!("reading {}", path.display())))?;
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(document)
            .map_err(|e| Error::Other(format!("{}: {e}", path.display())))?;
        if value.is_null() {
            continue;
        }
        let object: DynamicObject =
            serde_json::from_value(value).map_err(|e| Error::Other(format!("{}: {e}", path.display())))?;
        let types = object
            .types
            .as_ref()
            .ok_or_else(|| Error::Other(format!("{}: an object without apiVersion/kind", path.display())))?;
        let gvk = GroupVersionKind::try_from(types).map_err(|e| Error::Other(e.to_string()))?;
        let (resource, capabilities) = discovery
            .resolve_gvk(&gvk)
            .ok_or_else(|| Error::Other(format!("{}: {gvk:?} is not served", path.display())))?;
        let api: Api<DynamicObject> = match (&object.metadata.namespace, capabilities.scope) {
            (Some(ns), kube::discovery::Scope::Namespaced) => {
                Api::namespaced_with(client.clone(), ns, &resource)
            }
            _ => Api::all_with(client.clone(), &resource),
        };
        let name = object
            .metadata
            .name
            .clone()
            .ok_or_else(|| Error::Other(format!("{}: an object without a name", path.display())))?;
        api.patch(
            &name,
            &PatchParams::apply("kuberay-wasm-tests").force(),
            &Patch::Apply(&object),
        )
        .await?;
    }
    Ok(())
}
